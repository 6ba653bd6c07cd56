"""Rank groups from hand-made outcomes: the paired test decides who shares a group."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from flask import Flask
from sqlalchemy import delete, select, text
from sqlalchemy.orm import aliased

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import RankPair, Score, User
from situatedqa_server.services import board_cache, ranking
from situatedqa_server.services.gold_store import active_version
from situatedqa_server.settings import declared

from .conftest import add_scored, add_user, api_upload, new_token, prediction_file, register

#: The rank groups' resamples when the setting is left at its default.
RESAMPLES = declared("RANK_GROUP_RESAMPLES").default

N = 506  # geo/test


def outcomes(correct: int, flip: int = 0) -> np.ndarray:
    """The first `correct` examples right (codes 3), with the first `flip` of them swapped
    for wrong ones further down, so two arrays can differ on few examples at equal EM."""
    codes = np.zeros(N, dtype=np.uint8)
    codes[:correct] = 3
    codes[:flip] = 0
    codes[correct:correct + flip] = 3
    return codes


@pytest.fixture
def three(app: Flask) -> dict[str, Any]:
    """A and B differ on 4 examples (indistinguishable); C is far worse."""
    with app.app_context():
        user: User = add_user("ranker")
        ids = {"A": add_scored(user, "geo", "test", outcomes(300), name="A").id,
               "B": add_scored(user, "geo", "test", outcomes(298, flip=2), name="B").id,
               "C": add_scored(user, "geo", "test", outcomes(150), name="C").id}
    return ids


def test_label_is_the_range_of_ranks() -> None:
    assert ranking.label_of(1, 1) == "1"
    assert ranking.label_of(1, 3) == "1\u20133"


def test_indistinguishable_entries_share_a_group(app: Flask, three: dict[str, Any]) -> None:
    with app.test_request_context():
        groups = ranking.rank_groups("geo", "test", active_version().id, three.values())
    assert [groups[three[name]] for name in "ABC"] == ["1\u20132", "1\u20132", "3"]


def test_the_page_shows_groups_and_the_rule(app: Flask, three: dict[str, Any]) -> None:
    client = app.test_client()
    page = client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    assert page.count("group 1\u20132") == 2 and "group 3" in page
    assert "p&nbsp;≥&nbsp;0.05" in page and 'id="rank-groups"' in page
    # On a later page the group still spans the ranks of the page before.
    second = client.get("/leaderboards/geo?split=test&per_page=1&page=2").get_data(as_text=True)
    assert "group 1\u20132" in second


def test_groups_follow_new_submissions(app: Flask, three: dict[str, Any]) -> None:
    client = app.test_client()
    assert "group 3<" in client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    with app.app_context():
        add_scored(add_user("late"), "geo", "test", outcomes(149, flip=1), name="D")
    page = client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    assert page.count("group 3\u20134") == 2


def test_decisions_outlive_a_board_generation(app: Flask, three: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """After an upload only the pairs beside the new entry are tested again, and the groups
    are the ones a fresh walk gives."""
    tested: list[tuple[bytes, bytes]] = []
    real = ranking.paired_p_value

    def counted(track: str, a: bytes, b: bytes, resamples: int,
                paper: Any = None) -> float:
        tested.append((a, b))
        return real(track, a, b, resamples, paper)

    monkeypatch.setattr(ranking, "paired_p_value", counted)
    client = app.test_client()
    client.get("/leaderboards/geo?split=test")
    assert len(tested) == 2  # A-B, B-C
    tested.clear()
    with app.app_context():  # by a team on the board already (a new team changes every board)
        ranker = db.session.scalars(select(User).where(User.username == "ranker")).one()
        late = add_scored(ranker, "geo", "test", outcomes(149, flip=1), name="D").id
    page = client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    assert len(tested) == 1  # C-D: A-B and B-C were decided under the last generation
    assert page.count("group 3\u20134") == 2
    ranking._DECISIONS.clear()  # a fresh walk: no decision kept
    with app.test_request_context():
        fresh = ranking.rank_groups("geo", "test", active_version().id, [*three.values(), late])
    assert [fresh[three[name]] for name in "ABC"] + [fresh[late]] == [
        "1\u20132", "1\u20132", "3\u20134", "3\u20134"]


def test_a_walk_reads_only_the_rows_it_can_reach(app: Flask,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk reads the ranked rows within MAX_WALK (and the pair beyond) of the entries
    asked for, not the whole ranking; a group that reaches the bound stops there."""
    monkeypatch.setattr(ranking, "MAX_WALK", 2)
    with app.app_context():
        user = add_user("many")
        # twelve entries one example apart: no neighbours separable, one long group
        ids = [add_scored(user, "geo", "test", outcomes(300 - i), name=f"m{i}").id
               for i in range(12)]
    with app.test_request_context():
        version = active_version().id
        groups = ranking.rank_groups("geo", "test", version, [ids[6]])
        walk = ranking._walk(ranking.board_generation("geo", "test", version),
                             RESAMPLES)
        assert sorted(walk.rows) == [3, 4, 5, 6, 7, 8, 9]
        assert walk.total == 12
        assert groups == {ids[6]: "5\u20139"}  # two either way: the bound
        # a later page's entry reads its own neighbourhood, once
        ranking.rank_groups("geo", "test", version, [ids[11], ids[0]])
        assert sorted(walk.rows) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        assert ranking.rank_groups("geo", "test", version, [ids[11]]) == {ids[11]: "10\u201312"}
        assert ranking.rank_groups("geo", "test", version, [10**9]) == {}


def stored_pairs(app: Flask) -> dict[tuple[int, int], bool]:
    """The stored decisions at the default resamples, by (above, below) submission ids."""
    with app.app_context():
        above, below = aliased(Score), aliased(Score)
        rows = db.session.execute(
            select(above.submission_id, below.submission_id, RankPair.joined)
            .join(above, above.id == RankPair.above_score_id)
            .join(below, below.id == RankPair.below_score_id)
            .where(RankPair.resamples == RESAMPLES)).all()
    return {(a, b): joined for a, b, joined in rows}


def test_a_read_stores_what_it_tested_and_another_worker_reads_it(
        app: Flask, three: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The pairs a page tested are stored after its response; a worker that has tested
    nothing (no walk, no decision in memory) then shows the same groups without a test."""
    a, b, c = three["A"], three["B"], three["C"]
    client = app.test_client()
    assert stored_pairs(app) == {}
    response = client.get("/leaderboards/geo?split=test")
    assert response.status_code == 200
    response.close()  # the response is sent: the decisions are stored
    assert stored_pairs(app) == {(a, b): True, (b, c): False}

    def untested(*args: Any) -> float:
        raise AssertionError("a stored decision was tested again")

    monkeypatch.setattr(ranking, "paired_p_value", untested)
    monkeypatch.setattr(ranking, "_WALKS", board_cache.Newest())
    monkeypatch.setattr(ranking, "_DECISIONS", board_cache.Newest(8))
    page = client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    assert page.count("group 1\u20132") == 2 and "group 3<" in page


def test_an_upload_stores_the_pairs_beside_it(app: Flask, release_gold: GoldSet) -> None:
    """After each public upload's response, the pairs it forms with its neighbours are
    stored, decided as the walk decides them; a private upload stores none."""
    client = app.test_client()
    register(client, "uploader")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    ids = []
    for correct in (300, 100, 200):  # the last one lands between the first two
        response = api_upload(client, token, gold, prediction_file(gold, correct),
                              method_name=f"m{correct}", public="true")
        assert response.status_code == 201, response.get_json()
        response.close()
        ids.append(response.get_json()["id"])
    private = api_upload(client, token, gold, prediction_file(gold, 250), method_name="p")
    private.close()
    # a tie with the middle one, by another team: ranked after it (a later id)
    other = app.test_client()
    register(other, "tied")
    tied = api_upload(other, new_token(other), gold, prediction_file(gold, 200),
                      method_name="tie", public="true")
    assert tied.status_code == 201, tied.get_json()
    tied.close()
    best, worst, middle = ids
    tie = tied.get_json()["id"]
    stored = stored_pairs(app)
    # the old pairs (best-worst, middle-worst) stay stored (harmless: never neighbours again)
    assert set(stored) == {(best, worst), (best, middle), (middle, worst), (middle, tie),
                           (tie, worst)}
    with app.app_context():
        codes = dict(db.session.execute(select(Score.submission_id, Score.outcomes)).all())
    for (above, below), joined in stored.items():
        p_value = ranking.paired_p_value("geo", codes[above], codes[below],
                                         RESAMPLES)
        assert joined == (p_value >= ranking.ALPHA)


def test_the_command_fills_the_missing_pairs_once(app: Flask, three: dict[str, Any]) -> None:
    runner = app.test_cli_runner()
    first = runner.invoke(args=["submissions", "rank-pairs", "--track", "geo"])
    assert first.exit_code == 0, first.output
    assert "geo test: 2 pairs tested and stored" in first.output
    assert "geo dev: 0 pairs" in first.output
    assert stored_pairs(app) == {(three["A"], three["B"]): True,
                                 (three["B"], three["C"]): False}
    again = runner.invoke(args=["submissions", "rank-pairs"])
    assert again.exit_code == 0 and "geo test: 0 pairs" in again.output


def test_a_deleted_score_takes_its_pairs_along(app: Flask, three: dict[str, Any]) -> None:
    assert app.test_cli_runner().invoke(args=["submissions", "rank-pairs"]).exit_code == 0
    with app.app_context():
        db.session.execute(delete(Score).where(Score.submission_id == three["B"]))
        db.session.commit()
    assert stored_pairs(app) == {}


def test_a_rescore_stores_the_rank_pairs_of_its_new_rows(app: Flask,
                                                         release_gold: GoldSet) -> None:
    """A rescore writes new score rows; its switch stores their pairs' decisions, so the
    first views after it test none."""
    client = app.test_client()
    register(client, "rescored")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    ids = [api_upload(client, token, gold, prediction_file(gold, correct), public="true",
                      method_name=f"m{correct}").get_json()["id"] for correct in (300, 200)]
    # (the responses are never closed: the uploads stored no pairs)
    assert stored_pairs(app) == {}
    rescored = app.test_cli_runner().invoke(args=["submissions", "rescore", "--full"])
    assert rescored.exit_code == 0, rescored.output
    assert set(stored_pairs(app)) == {(ids[0], ids[1])}


def test_the_app_runs_postgresql_without_jit(app: Flask) -> None:
    """JIT compilation would cost a board's first read far more than its queries take."""
    with app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("a PostgreSQL setting")
        assert db.session.execute(text("SHOW jit")).scalar_one() == "off"


def reference_labels(codes: dict[int, np.ndarray], walk: int) -> dict[int, str]:
    """The rule, from its definition: each entry's group runs up and down from it while
    neighbours join (p >= ALPHA), at most `walk` positions; ranks as SQL's rank()."""
    metric = {i: 100.0 * float((c & 1).mean()) for i, c in codes.items()}
    order = sorted(codes, key=lambda i: (-metric[i], i))
    rank = [1 + sum(metric[j] > metric[i] for j in order) for i in order]
    joins = [False] + [ranking.paired_p_value("geo", codes[a].tobytes(), codes[b].tobytes(),
                                              RESAMPLES) >= ranking.ALPHA
                       for a, b in zip(order, order[1:], strict=False)]
    labels = {}
    for position, ident in enumerate(order):
        first = last = position
        while first > max(0, position - walk) and joins[first]:
            first -= 1
        while last < min(len(order) - 1, position + walk) and joins[last + 1]:
            last += 1
        labels[ident] = ranking.label_of(rank[first], rank[last])
    return labels


@pytest.fixture
def mixed(app: Flask, monkeypatch: pytest.MonkeyPatch) -> dict[int, np.ndarray]:
    """Twenty-four entries, some neighbours far apart and some close (ties among them), and
    a walk bound of three, so that groups end at separations and at the bound."""
    monkeypatch.setattr(ranking, "MAX_WALK", 3)
    rng = np.random.default_rng(7)
    codes = {}
    with app.app_context():
        user = add_user("mixed")
        for number, correct in enumerate(sorted(rng.integers(120, 360, size=24))):
            made = outcomes(int(correct), flip=int(rng.integers(0, 20)))
            codes[add_scored(user, "geo", "test", made, name=f"e{number}").id] = made
    return codes


def fresh_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget every walk and decision this process holds, as a new worker would."""
    monkeypatch.setattr(ranking, "_WALKS", board_cache.Newest())
    monkeypatch.setattr(ranking, "_DECISIONS", board_cache.Newest(8))


def test_stored_decisions_settle_every_group_in_sql(
        app: Flask, mixed: dict[int, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """With every pair stored, the groups come from one query, no walk and no test, and are
    the rule's groups, cut at the bound."""
    expected = reference_labels(mixed, 3)
    assert len(set(expected.values())) > 5  # groups of several sizes, bounded ones too
    assert app.test_cli_runner().invoke(args=["submissions", "rank-pairs"]).exit_code == 0
    fresh_worker(monkeypatch)

    def refused(*args: Any) -> None:
        raise AssertionError("a walk ran although every decision is stored")

    monkeypatch.setattr(ranking._Walk, "locate", refused)
    monkeypatch.setattr(ranking, "paired_p_value", refused)
    with app.test_request_context():
        groups = ranking.rank_groups("geo", "test", active_version().id, list(mixed))
    assert groups == expected


def test_some_stored_decisions_give_the_same_groups(
        app: Flask, mixed: dict[int, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """With a third of the pairs stored, SQL settles some groups and the walk the rest, in
    any order of the entries asked for: the rule's groups either way."""
    expected = reference_labels(mixed, 3)
    assert app.test_cli_runner().invoke(args=["submissions", "rank-pairs"]).exit_code == 0
    with app.app_context():
        pairs = db.session.scalars(select(RankPair).order_by(RankPair.below_score_id)).all()
        for number, pair in enumerate(pairs):
            if number % 3:
                db.session.delete(pair)
        db.session.commit()
    ids = list(mixed)
    for order in (ids, ids[::-1], ids[1::2] + ids[::2]):
        fresh_worker(monkeypatch)
        with app.test_request_context():
            version = active_version().id
            groups = {}
            for start in range(0, len(order), 5):  # a page of five at a time
                groups.update(ranking.rank_groups("geo", "test", version,
                                                  order[start:start + 5]))
        assert groups == expected
