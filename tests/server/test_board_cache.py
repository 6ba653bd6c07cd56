"""Leaderboards served from the cache: every kind of change makes the next read fresh.

Each step reads the board (filling the cache), changes something, and reads again through
the same app: the second read must show the change. Some changes are made through a second app
instance on the same database (its own cache), as another host would. A raw SQL change that
does not bump the stamp shows that the reads are really served from the cache.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, text, update

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import GoldVersion, Score, Submission, Team, User
from situatedqa_server.services import baselines, board_cache, gold_store, jobs, visibility

from .conftest import api_upload, make_app, new_token, prediction_file, register

BOARD = "/api/v1/leaderboards/geo?split=dev"


def read(client: FlaskClient, query: str = "") -> dict[str, Any]:
    """The dev board of geo as JSON."""
    response = client.get(BOARD + query)
    assert response.status_code == 200, response.get_data(as_text=True)
    board: dict[str, Any] = response.json or {}
    return board


def names(client: FlaskClient, query: str = "") -> list[str]:
    """The method names on the board, in order."""
    return [entry["method_name"] for entry in read(client, query)["entries"]]


def upload(client: FlaskClient, token: str, gold: Any, correct: int, name: str) -> int:
    """A public upload with `correct` right answers; its id."""
    response = api_upload(client, token, gold, prediction_file(gold, correct),
                          method_name=name, public="true")
    assert response.status_code == 201, response.get_data(as_text=True)
    return int((response.json or {})["id"])


def change(app: Flask, action: Any) -> None:
    """Run a change in an app context of `app` (committed by the action or here)."""
    with app.app_context():
        action()
        db.session.commit()


def submission(submission_id: int) -> Submission:
    """A submission by id, in the current session."""
    return db.session.get_one(Submission, submission_id)


def admin() -> User:
    """Some user to act as moderator."""
    return db.session.scalars(select(User)).first() or baselines.system_user()


def test_every_change_makes_the_next_read_fresh(app: Flask, release_gold: GoldSet,
                                                database: dict[str, Any], gold_dir: Path,
                                                tmp_path: Path) -> None:
    client = app.test_client()
    register(client, "alice", team="Team A")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    assert read(client)["total"] == 0

    # Uploads: the new entry is ranked at once, above or below the cached ones.
    high = upload(client, token, gold, 900, "high")
    assert names(client) == ["high"]
    low = upload(client, token, gold, 100, "low")
    assert names(client) == ["high", "low"]
    assert names(client, "&sort=em_rare&order=asc")[0] in {"high", "low"}
    private = api_upload(client, token, gold, prediction_file(gold, 500), method_name="mid",
                         public="false")
    mid = int((private.json or {})["id"])
    assert names(client) == ["high", "low"]

    # Publish and withdraw through the API.
    client.post(f"/api/v1/submissions/{mid}/publish", headers={"Authorization": f"Bearer {token}"})
    assert names(client) == ["high", "mid", "low"]
    assert names(client, "&sort=method_name&order=asc") == ["high", "low", "mid"]
    client.post(f"/api/v1/submissions/{mid}/withdraw",
                headers={"Authorization": f"Bearer {token}"})
    assert names(client) == ["high", "low"]
    assert names(client, "&sort=method_name&order=asc") == ["high", "low"]

    # Moderation: hide, unhide, flag, unflag (the flag is shown on the board).
    change(app, lambda: visibility.hide(submission(low), admin(), "spam"))
    assert names(client) == ["high"]
    change(app, lambda: visibility.unhide(submission(low), admin()))
    assert names(client) == ["high", "low"]
    change(app, lambda: visibility.flag(submission(high), admin(), "check the paper"))
    assert read(client)["entries"][0]["flag"] == "check the paper"
    change(app, lambda: visibility.unflag(submission(high), admin()))
    assert read(client)["entries"][0]["flag"] is None

    # A team rename shows on every board.
    change(app, lambda: setattr(db.session.scalars(select(Team).where(
        Team.name == "Team A")).one(), "name", "Team B"))
    assert {entry["team"] for entry in read(client)["entries"]} == {"Team B"}

    # Paper rows imported, then removed again.
    paper = baselines.ReportedRow("geo", "dev", "paper method", baselines.REPORTED_PREFIX + "x",
                                  "other", False, {"em": 50.0})
    change(app, lambda: baselines.sync_reported([paper]))
    assert names(client) == ["high", "paper method", "low"]
    change(app, lambda: baselines.sync_reported([]))
    assert names(client) == ["high", "low"]

    # Baseline regeneration replaces entries with bulk statements.
    change(app, lambda: baselines._remove([submission(low)]))
    assert names(client) == ["high"]

    # A change made through another app instance on the same database (its own cache).
    other = make_app(database, gold_dir, tmp_path / "other")
    change(other, lambda: visibility.publish(submission(mid), None))
    assert names(client) == ["high", "mid"]
    change(other, lambda: visibility.delete(submission(mid), None))
    assert names(client) == ["high"]

    # A gold switch (rescore job, then the flip): the board shows the new version.
    def new_version() -> None:
        active = gold_store.active_version()
        version = GoldVersion(name="second", as_of=date(2022, 1, 1), fingerprint="f",
                              parent_id=active.id, gold_sha256=active.gold_sha256, changes=[])
        db.session.add(version)
        db.session.commit()
        jobs.run_inline(jobs.start_activation(version, None).id)
    assert read(client)["gold_version"] == gold_store.FIRST_VERSION_NAME
    change(other, new_version)
    board = read(client)
    assert board["gold_version"] == "second" and names(client) == ["high"]

    # A rescore rewrites score rows, here on the board of the (published) first version.
    first = f"&version={gold_store.FIRST_VERSION_NAME}"
    assert read(client, first)["entries"][0]["metrics"]["em"] != 12.5

    def rescored() -> None:
        row = db.session.scalars(select(Score).join(GoldVersion).where(
            Score.submission_id == high,
            GoldVersion.name == gold_store.FIRST_VERSION_NAME)).one()
        row.metrics = {**row.metrics, "em": 12.5}
    change(other, rescored)
    assert read(client, first)["entries"][0]["metrics"]["em"] == 12.5

    # The reads above came from the cache: a raw write that skips the stamp is not seen
    # until the stamp is bumped (as bump_sql does for writes outside the session).
    assert names(client) == ["high"]
    with app.app_context():
        db.session.execute(update(Submission).where(Submission.id == high)
                           .values(method_name="renamed"))
        db.session.info.pop("situatedqa_changed_boards", None)  # skip the session's bump
        db.session.commit()
    assert names(client) == ["high"]
    with app.app_context():
        db.session.execute(text(board_cache.bump_sql()), {"track": "geo", "split": "dev"})
        db.session.commit()
    assert names(client) == ["renamed"]


def test_a_board_keeps_its_newest_generation_only(app: Flask, release_gold: GoldSet) -> None:
    """Uploads make new generations; the cache holds one per board (the newest), so a busy
    board's memory does not grow with its uploads; a reader of an older stamp gets data
    of its own without replacing the newest."""
    client = app.test_client()
    register(client, "keeper", team="Team K")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    for number in range(3):
        upload(client, token, gold, 10 + number, f"keep {number}")
        assert len(names(client)) == number + 1
        assert len(names(client, "&sort=method_name")) == number + 1
    with app.app_context():
        cache = board_cache.cache()
    kept = [key for key in cache.boards.values if key[:2] == ("geo", "dev")]
    assert len(kept) == 1
    generation, data = cache.boards.values[kept[0]]
    # the count, the default order's page and the page sorted by method_name
    assert len(data.pages) == 3
    older = (*kept[0], generation[0] - 1, generation[1])
    assert cache.board(older) is not data and cache.boards.values[kept[0]] == (generation, data)
    assert cache.board((*kept[0], *generation)) is data


def test_newest_keeps_one_value_per_board() -> None:
    newest: board_cache.Newest[str] = board_cache.Newest(boards=2)
    assert newest.get(("a",), (1, 1), lambda: "a1") == "a1"
    assert newest.get(("a",), (1, 1), lambda: "again") == "a1"
    assert newest.get(("a",), (2, 1), lambda: "a2") == "a2"
    assert newest.get(("a",), (1, 1), lambda: "old") == "old"  # older: computed, not kept
    assert newest.get(("a",), (2, 1), lambda: "again") == "a2"
    newest.get(("b",), (1, 1), lambda: "b1")
    newest.get(("c",), (1, 1), lambda: "c1")  # the least recently used board is dropped
    assert list(newest.values) == [("b",), ("c",)]


def test_a_read_fetches_its_page_only(app: Flask, release_gold: GoldSet) -> None:
    """A board read cuts its page in SQL: the cache holds the page's entries and the count,
    never the whole order, and the pages of every size put together are the full order,
    ranks included, for each sort and direction."""
    client = app.test_client()
    register(client, "pager", team="Team P")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    for number, correct in enumerate((30, 10, 30, 20, 0)):  # two tied at the top
        response = api_upload(client, token, gold,
                              prediction_file(gold, correct, wrong=f"wrong {number}"),
                              method_name=f"entry {number}", public="true")
        assert response.status_code == 201, response.get_data(as_text=True)
    for query in ("", "&sort=method_name", "&sort=method_name&order=asc", "&sort=em&order=asc",
                  "&sort=submitted_at"):
        whole = read(client, query + "&per_page=100")["entries"]
        assert len(whole) >= 5  # the uploads, and the paper's rows
        for size in (1, 2, 3):
            pages = [read(client, f"{query}&per_page={size}&page={page}")
                     for page in range(1, -(-len(whole) // size) + 1)]
            assert all(p["total"] == len(whole) for p in pages)
            assert [e for p in pages for e in p["entries"]] == whole, (query, size)
    with app.app_context():
        cache = board_cache.cache()
    generation, data = next(value for key, value in cache.boards.values.items()
                            if key[:2] == ("geo", "dev"))
    assert all(len(page) <= 100 if key[-1] == 100 else len(page) <= 3
               for key, page in data.pages.items() if key[0] == "page")
    assert {key[0] for key in data.pages} == {"page", "count"}
    ranks = [entry["rank"] for entry in read(client, "&per_page=100")["entries"]
             if not entry["reported"]]
    assert ranks[:2] == [1, 1] and ranks[2:] == [3, 4, 5]
