"""Issue 11: the Ladder (SITUATEDQA_TEST_FEEDBACK=ladder), duplicate predictions, the attack.

Unreleased test metrics must never leave the server: every surface shows the released
submission's numbers instead. The same predictions twice from one team are a 409 that
spends no quota; from another team they are accepted and flagged for the moderators.
"""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet, GoldSplit
from benchmark.metrics import confusion_codes
from benchmark.scoring import CORRECT, CORRECT_ANY
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from situatedqa_server.services import ladder

from .conftest import PASSWORD, api_upload, login, make_app, new_token, prediction_file, register

ROOT = Path(__file__).resolve().parents[2]


def _attack_module() -> ModuleType:
    """scripts/attack_boosting.py, imported from its path."""
    spec = importlib.util.spec_from_file_location("attack_boosting",
                                                  ROOT / "scripts" / "attack_boosting.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


attack = _attack_module()


# --- the test on hand-made outcome vectors ------------------------------------------------


def qa_codes(correct: np.ndarray) -> np.ndarray:
    """QA outcome codes from per-example correctness (correct under both gold sets)."""
    return np.where(correct, CORRECT | CORRECT_ANY, 0).astype(np.int64)


def test_ladder_test_on_hand_made_qa_outcomes(release_gold: GoldSet) -> None:
    gold = release_gold.get("geo", "test")
    n = len(gold)
    best = np.zeros(n, dtype=bool)
    best[:200] = True
    much_better = best.copy()
    much_better[200:260] = True  # 60 more right, none lost: +11.9 points
    barely = best.copy()
    barely[200] = True  # one more right: +0.2 points
    worse = best.copy()
    worse[:30] = False
    assert ladder.releases(gold, qa_codes(much_better), qa_codes(best))
    assert ladder.p_better(gold, qa_codes(much_better), qa_codes(best)) < 0.001
    assert not ladder.releases(gold, qa_codes(barely), qa_codes(best))
    assert not ladder.releases(gold, qa_codes(worse), qa_codes(best))
    assert ladder.p_better(gold, qa_codes(best), qa_codes(best)) == 1.0
    # The test is one-sided: the same gap the other way round is never "better".
    assert ladder.p_better(gold, qa_codes(best), qa_codes(much_better)) > 0.5


def test_ladder_test_on_hand_made_identification_outcomes(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp-id", "test")
    truth = np.asarray(gold.labels, dtype=bool)
    rng = np.random.default_rng(11)
    best = np.where(rng.random(len(gold)) < 0.7, truth, ~truth)  # about 70% right
    fixed = best.copy()
    wrong = np.flatnonzero(best != truth)
    fixed[wrong[:150]] = truth[wrong[:150]]
    one_more = best.copy()
    one_more[wrong[0]] = truth[wrong[0]]
    assert ladder.releases(gold, confusion_codes(fixed, truth), confusion_codes(best, truth))
    assert not ladder.releases(gold, confusion_codes(one_more, truth),
                               confusion_codes(best, truth))


# --- the Ladder through the server ----------------------------------------------------------


def ladder_app(database: dict[str, Any], gold_dir: Path, tmp_path: Path,
               mode: str = "ladder") -> Flask:
    """An app in the given feedback mode with room in the quota."""
    return make_app(database, gold_dir, tmp_path, TEST_FEEDBACK=mode, TEST_DAILY_QUOTA=50,
                    TEST_TOTAL_QUOTA=50)


def json_of(response: Any) -> dict[str, Any]:
    """A response's JSON object."""
    data = response.get_json()
    assert isinstance(data, dict)
    return data


def em_file(gold: GoldSplit, correct: int) -> bytes:
    """A geo file with the first `correct` examples right."""
    return prediction_file(gold, correct)


def test_ladder_releases_better_withholds_the_rest_everywhere(
        database: dict[str, Any], gold_dir: Path, tmp_path: Path,
        release_gold: GoldSet) -> None:
    app = ladder_app(database, gold_dir, tmp_path)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    auth = {"Authorization": f"Bearer {token}"}
    gold = release_gold.get("geo", "test")
    first = api_upload(client, token, gold, em_file(gold, 100), public="true")
    better = api_upload(client, token, gold, em_file(gold, 300), public="true")
    barely = api_upload(client, token, gold, em_file(gold, 302), public="true")
    assert [r.status_code for r in (first, better, barely)] == [201, 201, 201]
    assert first.json["released"] and better.json["released"]
    better_em, barely_em = 100 * 300 / len(gold), 100 * 302 / len(gold)
    assert better.json["metrics"]["em"] == pytest.approx(better_em)
    # The withheld one: the 201 shows #better's scores and says so; it stays private.
    body = barely.json
    assert body["released"] is False and body["shown_submission_id"] == better.json["id"]
    assert body["metrics"] == better.json["metrics"] and body["ci"] == better.json["ci"]
    assert f"not significantly better than submission #{better.json['id']}" in body["feedback"]
    assert body["visibility"] == "private"
    hidden_value = f"{barely_em:.2f}"
    assert hidden_value != f"{better_em:.2f}"

    got = json_of(client.get(f"/api/v1/submissions/{body['id']}", headers=auth))
    assert got["metrics"] == better.json["metrics"] and got["released"] is False
    listed = json_of(client.get("/api/v1/submissions", headers=auth))["submissions"]
    assert {s["id"]: s["metrics"]["em"] for s in listed}[body["id"]] == pytest.approx(better_em)
    page = client.get(f"/submissions/{body['id']}").get_data(as_text=True)
    assert f"not significantly better than submission #{better.json['id']}" in page
    assert f"{better_em:.2f}" in page and hidden_value not in page
    listing = client.get("/submissions/").get_data(as_text=True)
    assert f"not released (shows #{better.json['id']})" in listing

    refused = client.post(f"/api/v1/submissions/{body['id']}/publish", headers=auth)
    assert refused.status_code == 409 and json_of(refused)["error"]["code"] == "not_released"
    board = json_of(client.get("/api/v1/leaderboards/geo?split=test"))
    assert [e["id"] for e in board["entries"] if not e["reported"]] == [
        better.json["id"], first.json["id"]]
    csv_text = client.get("/insight/leaderboards/geo.csv?split=test").get_data(as_text=True)
    board_json = client.get("/insight/leaderboards/geo.json?split=test").get_data(as_text=True)
    for text in (csv_text, board_json, json.dumps(board)):
        # Whole numbers only: other columns (f1, em_equiv) may hold e.g. 59.688…
        numbers = set(re.findall(r"\d+(?:\.\d+)?", text))
        assert hidden_value not in numbers and repr(barely_em) not in numbers
    for url in (f"/insight/submissions/{body['id']}/pwc.json",
                f"/insight/submissions/{body['id']}/diagnostics",
                f"/insight/submissions/{body['id']}/plots/scores.svg"):
        assert client.get(url).status_code == 404, url
    compare = client.get(f"/insight/compare?a={body['id']}&b={first.json['id']}")
    assert compare.status_code == 409 and hidden_value not in compare.get_data(as_text=True)
    with app.app_context():
        row = db.session.get(Submission, body["id"])
        assert row is not None and row.shown_submission_id == better.json["id"]


def test_first_submission_is_released_and_full_mode_releases_everything(
        database: dict[str, Any], gold_dir: Path, tmp_path: Path,
        release_gold: GoldSet) -> None:
    app = ladder_app(database, gold_dir, tmp_path, mode="full")
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    answers = [api_upload(client, token, gold, em_file(gold, n)).json for n in (300, 100, 302)]
    assert [a["released"] for a in answers] == [True, True, True]
    assert answers[2]["metrics"]["em"] == pytest.approx(100 * 302 / len(gold))
    # In ladder mode: another team's first test file is released; dev is never withheld.
    app.config["TEST_FEEDBACK"] = "ladder"
    client = app.test_client()
    register(client, "bob")
    token = new_token(client)
    dev = release_gold.get("geo", "dev")
    answers = [api_upload(client, token, dev, em_file(dev, n)).json for n in (300, 301)]
    assert [a["released"] for a in answers] == [True, True]
    first_test = api_upload(client, token, gold, em_file(gold, 10)).json
    assert first_test["released"] is True
    assert first_test["metrics"]["em"] == pytest.approx(100 * 10 / len(gold))
    assert api_upload(client, token, gold, em_file(gold, 11)).json["released"] is False


def test_a_withheld_submission_cannot_be_made_public_in_the_database(
        database: dict[str, Any], gold_dir: Path, tmp_path: Path,
        release_gold: GoldSet) -> None:
    app = ladder_app(database, gold_dir, tmp_path)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    api_upload(client, token, gold, em_file(gold, 300))
    withheld = api_upload(client, token, gold, em_file(gold, 301)).json["id"]
    with app.app_context():
        with pytest.raises(sa.exc.IntegrityError):
            db.session.execute(sa.update(Submission).where(Submission.id == withheld)
                               .values(visibility="public"))
            db.session.commit()
        db.session.rollback()


# --- duplicates -----------------------------------------------------------------------------


def quota_used(client: FlaskClient, token: str, track: str) -> int:
    """The team's used test quota on a track."""
    body = json_of(client.get("/api/v1/quota", headers={"Authorization": f"Bearer {token}"}))
    return int(body["tracks"][track]["used_total"])


def test_same_predictions_from_the_same_team_is_409_and_spends_nothing(
        app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    data = prediction_file(gold, 200)
    first = api_upload(client, token, gold, data)
    assert first.status_code == 201 and quota_used(client, token, "geo") == 1
    # The same predictions, gzip-compressed, keys reordered, answers recased and punctuated.
    lines = [json.loads(line) for line in data.decode().splitlines()][::-1]
    variant = "".join(json.dumps({"prediction": line["prediction"].upper() + "!",
                                  "key": line["key"]}) + "\n" for line in lines)
    for same in (data, gzip.compress(variant.encode())):
        again = api_upload(client, token, gold, same)
        assert again.status_code == 409, again.json
        error = again.json["error"]
        assert error["code"] == "duplicate_submission"
        assert error["details"] == {"submission_id": first.json["id"]}
    assert quota_used(client, token, "geo") == 1
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count(Submission.id))) == 1
    # The upload page says the same, with 409.
    page = client.post("/submissions/new", data={
        "csrf_token": _csrf(client), "track": "geo", "split": "test", "method_name": "again",
        "file": (io.BytesIO(data), "p.jsonl")}, content_type="multipart/form-data")
    assert page.status_code == 409 and f"#{first.json['id']}" in page.get_data(as_text=True)
    # Another split is another board; a deleted submission no longer blocks its file.
    dev = release_gold.get("geo", "dev")
    assert api_upload(client, token, dev, prediction_file(dev, 200)).status_code == 201
    client.delete(f"/api/v1/submissions/{first.json['id']}",
                  headers={"Authorization": f"Bearer {token}"})
    assert api_upload(client, token, gold, data).status_code == 201


def test_parallel_same_predictions_give_one_201_and_409s(app: Flask,
                                                         release_gold: GoldSet) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from .conftest import LiveServer

    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")  # no quota lock on dev: the unique index decides
    data = prediction_file(gold, 300)
    with LiveServer(app) as server:
        def upload(number: int) -> tuple[int, Any]:
            response = requests.post(
                f"{server.url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                data={"track": "geo", "split": "dev", "method_name": f"parallel {number}"},
                files={"file": ("p.jsonl", data)}, timeout=120)
            return response.status_code, response.json()

        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(upload, range(8)))
    created = [body["id"] for status, body in answers if status == 201]
    assert len(created) == 1, answers
    assert [(status, body["error"]["details"]) for status, body in answers if status != 201] \
        == [(409, {"submission_id": created[0]})] * 7
    with app.app_context():
        assert db.session.scalar(sa.select(sa.func.count(Submission.id))) == 1


def _csrf(client: FlaskClient) -> str:
    """The CSRF token of the upload form."""
    from .conftest import csrf_token

    return csrf_token(client, "/submissions/new")


def test_same_predictions_from_another_team_is_accepted_and_flagged(
        app: Flask, runner: Any, release_gold: GoldSet) -> None:
    runner.invoke(args=["users", "create", "root", "--email", "r@example.org",
                        "--password", PASSWORD, "--admin"])
    gold = release_gold.get("geo", "test")
    data = prediction_file(gold, 200)
    alice, bob = app.test_client(), app.test_client()
    register(alice, "alice")
    register(bob, "bob")
    original = api_upload(alice, new_token(alice), gold, data).json["id"]
    copy = api_upload(bob, new_token(bob), gold, gzip.compress(data))
    assert copy.status_code == 201 and copy.json["flag"] is not None
    with app.app_context():
        row = db.session.get(Submission, copy.json["id"])
        assert row is not None and row.duplicate_of_id == original
        first = db.session.get(Submission, original)
        assert first is not None and first.flag_reason is None
    admin = app.test_client()
    login(admin, "root")
    page = admin.get("/admin/submissions").get_data(as_text=True)
    assert "same predictions as" in page and f"#{original}" in page


# --- the boosting attack --------------------------------------------------------------------


def client_submit(client: FlaskClient, token: str, gold: GoldSplit) -> Any:
    """The attack's Submit through the Flask test client."""
    keys = tuple(example.key for example in gold.examples)

    def submit(labels: np.ndarray) -> Any:
        response = client.post("/api/v1/submissions", data={
            "track": gold.track, "split": gold.split, "method_name": "boosting attack",
            "file": (io.BytesIO(attack.jsonl(keys, labels)), "labels.jsonl")},
            headers={"Authorization": f"Bearer {token}"}, content_type="multipart/form-data")
        assert response.status_code == 201, response.json
        return attack.feedback_of(response.json)
    return submit


def test_majority_vote_and_f1_by_hand() -> None:
    files = [np.array([1, 1, 0, 0], dtype=bool), np.array([1, 0, 1, 0], dtype=bool),
             np.array([1, 0, 0, 1], dtype=bool)]
    rng = np.random.default_rng(0)
    assert attack.majority_vote(files, rng).tolist() == [True, False, False, False]
    two = [attack.majority_vote(files[:2], rng) for _ in range(50)]
    assert all(v[0] and not v[3] for v in two)  # agreed: kept; split (1 and 2): coin flips
    assert {bool(v[1]) for v in two} == {True, False} == {bool(v[2]) for v in two}
    gold = np.array([1, 1, 0, 0], dtype=bool)
    assert attack.f1(np.array([1, 0, 1, 0], dtype=bool), gold) == pytest.approx(50.0)


@pytest.mark.parametrize("mode", ["full", "ladder"])
def test_boosting_attack_on_a_small_board(mode: str, database: dict[str, Any],
                                          gold_dir: Path, tmp_path: Path,
                                          release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, TEST_FEEDBACK=mode, TEST_DAILY_QUOTA=100,
                   TEST_TOTAL_QUOTA=100)
    client = app.test_client()
    register(client, "mallory")
    gold = release_gold.get("geo-id", "test")
    truth = np.asarray(gold.labels, dtype=bool)
    k = 60
    result = attack.run_attack(client_submit(client, new_token(client), gold), len(gold), k,
                               np.random.default_rng(5))
    item = attack.report(mode, k, result, truth, seed=5)
    # The attack's view: every released number is the file's own score against the gold
    # (checked for the first and the vote), every withheld one repeats the latest released.
    assert item.first["seen"] == pytest.approx(item.first["test"])
    latest = result.first_seen.f1
    for feedback in result.feedback:
        assert feedback.f1 == latest or feedback.released
        latest = feedback.f1 if feedback.released else latest
    released = sum(f.released for f in result.feedback)
    if mode == "full":
        assert released == k and result.kept > 0
        assert item.vote["seen"] == pytest.approx(item.vote["test"])
        assert item.gain["seen"] > item.gain["true"] + 5  # it sees overfitting as progress
    else:
        assert released <= 6 and result.kept < released
