"""A declared knowledge cutoff: stored with the upload, its figures on the score (the
library's numbers, on every path), on the page, the API, the board entry and the CSV; a
future or unreadable date refused with nothing stored and no quota spent."""

from __future__ import annotations

import csv
import io
from datetime import date
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from benchmark import GoldSet, Predictions, parse_predictions, score
from benchmark.cutoff import cutoff_values
from benchmark.error_classes import error_tables
from benchmark.tracks import CUTOFF_METRICS
from situatedqa_server.extensions import db
from situatedqa_server.models import Score, Submission
from situatedqa_server.services import evaluation, gold_store

from .conftest import api_upload, csrf_token, new_token, prediction_file, register

TODAY = date(2026, 12, 7)


@pytest.fixture
def dated_app(app: Flask) -> Flask:
    """The app with a fixed today (input_releases.today reads it)."""
    app.config["TODAY"] = TODAY
    return app


def _count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission)) or 0


def _quota_used(client: FlaskClient, token: str, track: str) -> int:
    body: Any = client.get("/api/v1/quota", headers={"Authorization": f"Bearer {token}"}).json
    return int(body["tracks"][track]["used_total"])


def expected(release_gold: GoldSet, data: bytes, cutoff: date) -> dict[str, Any]:
    """The figures the library gives for this file on temp dev."""
    gold = release_gold.get("temp", "dev")
    tables = error_tables(release_gold, "temp", "dev")
    predictions = parse_predictions(data, gold, filename="predictions.jsonl")
    assert isinstance(predictions, Predictions)
    result = score(gold, predictions, resamples=0, errors=tables)
    return dict(cutoff_values(gold, tables, result.outcomes, result.error_classes, cutoff))


def test_an_upload_with_a_cutoff_gets_its_figures(dated_app: Flask, client: FlaskClient,
                                                  release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    data = prediction_file(gold, len(gold) // 2)
    response = api_upload(client, token, gold, data, knowledge_cutoff="2018-06-30",
                          public="true")
    assert response.status_code == 201, response.get_data(as_text=True)[:400]
    body = response.json
    assert body["knowledge_cutoff"] == "2018-06-30"
    want = expected(release_gold, data, date(2018, 6, 30))
    assert list(want) == list(CUTOFF_METRICS)
    for name, value in want.items():
        assert body["metrics"][name] == pytest.approx(value.value)
        assert body["ci"][name] == pytest.approx(list(value.ci))
        assert body["counts"][name] == value.count
    assert body["counts"]["em_post_cutoff"] > 0 and body["counts"]["em_pre_cutoff"] > 0
    submission_id = body["id"]
    # The API reads it back; the stored column is a date.
    again: Any = client.get(f"/api/v1/submissions/{submission_id}",
                       headers={"Authorization": f"Bearer {token}"}).json
    assert again["knowledge_cutoff"] == "2018-06-30"
    assert again["metrics"]["em_post_cutoff"] == body["metrics"]["em_post_cutoff"]
    with dated_app.app_context():
        stored = db.session.get(Submission, submission_id)
        assert stored is not None and stored.knowledge_cutoff == date(2018, 6, 30)
        # A rescore from the file gives the same figures (the column is the source's).
        version = gold_store.active_version()
        result = evaluation.score_into(version, [stored], incremental=False).results[0]
        assert result is not None
        for name, value in want.items():
            assert result.metrics[name] == pytest.approx(value.value)
            assert result.counts[name] == value.count
    # The page: the declared date beside the horizon, the figures in their own table.
    page = client.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert 'id="knowledge-cutoff"' in page and "2018-06-30" in page
    assert 'data-metric="em_post_cutoff"' in page
    assert 'data-metric="outdated_rate_post_cutoff"' in page
    assert "Contamination cannot touch the figure after the cutoff" in page
    assert page.count('data-metric="em_post_cutoff"') == 1  # not in the main table too
    # The board entry and its CSV.
    board: Any = client.get("/api/v1/leaderboards/temp?split=dev").json
    entry = next(e for e in board["entries"] if e["id"] == submission_id)
    assert entry["knowledge_cutoff"] == "2018-06-30"
    rows = list(csv.DictReader(io.StringIO(
        client.get("/leaderboards/temp.csv?split=dev").get_data(as_text=True))))
    assert any(row["id"] == str(submission_id) and row["knowledge_cutoff"] == "2018-06-30"
               for row in rows)


def test_without_a_cutoff_there_are_no_figures(dated_app: Flask, client: FlaskClient,
                                               release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    body = api_upload(client, token, gold, prediction_file(gold, 100)).json
    assert body["knowledge_cutoff"] is None
    assert not set(CUTOFF_METRICS) & set(body["metrics"])
    page = client.get(f"/submissions/{body['id']}").get_data(as_text=True)
    assert 'id="knowledge-cutoff"' not in page


def test_a_future_or_unreadable_cutoff_is_refused_and_nothing_is_stored(
        dated_app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")  # the quota's split
    for value in ("2026-12-08", "2031-01-01", "2021-02-30", "2021", "2021-06",
                  "June 30, 2021", "0000-01-01"):
        response = api_upload(client, token, gold, knowledge_cutoff=value)
        assert response.status_code == 400, value
        error = response.json["error"]
        assert error["code"] == "invalid_request"
        assert "knowledge_cutoff" in error["details"]["fields"], value
        assert "knowledge_cutoff" in error["details"]["fields"]["knowledge_cutoff"][0]
    future = api_upload(client, token, gold, knowledge_cutoff="2026-12-08").json
    assert "after today (2026-12-07)" in future["error"]["details"]["fields"][
        "knowledge_cutoff"][0]
    # The upload page refuses it the same way, naming the field.
    page = client.post("/submissions/new", data={
        "csrf_token": csrf_token(client, "/submissions/new"), "track": gold.track,
        "split": gold.split, "method_name": "page method", "public": "no",
        "knowledge_cutoff": "2030-01-01",
        "file": (io.BytesIO(prediction_file(gold)), "predictions.jsonl")},
        content_type="multipart/form-data")
    assert page.status_code == 400
    assert "knowledge_cutoff: 2030-01-01 is after today" in page.get_data(as_text=True)
    assert _count(dated_app) == 0 and _quota_used(client, token, "geo") == 0
    with dated_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Score)) == 0
    # Today itself is a past enough date.
    accepted = api_upload(client, token, gold, knowledge_cutoff="2026-12-07")
    assert accepted.status_code == 201 and accepted.json["knowledge_cutoff"] == "2026-12-07"
    # geo's release dates no answer: nothing on either side, no figure.
    assert not set(CUTOFF_METRICS) & set(accepted.json["metrics"])
    assert _quota_used(client, token, "geo") == 1
