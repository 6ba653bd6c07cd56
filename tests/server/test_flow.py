"""The full participant flow: register, token, upload by API and form, leaderboard, publish."""

from __future__ import annotations

import io

import pytest
from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet

from .conftest import api_upload, csrf_token, new_token, prediction_file, register


def test_full_flow(client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    assert token.startswith("sqa_")
    gold = release_gold.get("geo", "dev")

    # Upload by the API: scored in the request, in the CLI's JSON shape.
    response = api_upload(client, token, gold, prediction_file(gold, correct=len(gold) // 2),
                          method_name="half right", paper_url="https://example.org/paper")
    assert response.status_code == 201, response.json
    body = response.json
    assert body["status"] == "scored"
    assert set(body) >= {"id", "status", "metrics", "ci", "counts"}
    assert abs(body["metrics"]["em"] - 100 * (len(gold) // 2) / len(gold)) < 1e-9
    assert len(body["ci"]["em"]) == 2
    assert body["counts"]["em"] == len(gold)
    api_id = body["id"]

    # Upload by the form: redirected to the submission page, which shows the scores.
    data = {"csrf_token": csrf_token(client, "/submissions/new"), "track": "geo",
            "split": "dev", "method_name": "all right", "model_type": "closed-book",
            "fine_tuned": "yes", "public": "no",
            "file": (io.BytesIO(prediction_file(gold)), "all.jsonl")}
    response = client.post("/submissions/new", data=data, content_type="multipart/form-data")
    assert response.status_code == 302, response.get_data(as_text=True)
    page = client.get(response.headers["Location"])
    assert b"all right" in page.data and b"100.00" in page.data
    form_id = int(response.headers["Location"].rstrip("/").split("/")[-1])

    # Private until published: the leaderboard is empty.
    board = client.get("/api/v1/leaderboards/geo?split=dev").json
    assert board["entries"] == []

    for submission_id in (api_id, form_id):
        token_form = csrf_token(client, f"/submissions/{submission_id}")
        assert client.post(f"/submissions/{submission_id}/publish",
                           data={"csrf_token": token_form}).status_code == 302
    board = client.get("/api/v1/leaderboards/geo?split=dev").json
    assert [e["method_name"] for e in board["entries"]] == ["all right", "half right"]
    assert [e["rank"] for e in board["entries"]] == [1, 2]
    first = board["entries"][0]
    assert set(first) >= {"id", "rank", "method_name", "team", "metrics", "ci", "baseline",
                          "reported", "submitted_at"}
    assert first["team"] == "alice" and first["baseline"] is False

    page = client.get("/leaderboards/geo?split=dev")
    assert b"all right" in page.data and b"half right" in page.data
    csv_text = client.get("/leaderboards/geo.csv?split=dev").get_data(as_text=True)
    assert csv_text.splitlines()[1].startswith("1,1,all right,alice")  # rank, rank group

    # Withdraw by the API: off the leaderboard again.
    response = client.post(f"/api/v1/submissions/{form_id}/withdraw",
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.json["visibility"] == "private"
    board = client.get("/api/v1/leaderboards/geo?split=dev").json
    assert [e["id"] for e in board["entries"]] == [api_id]

    # The audit log records every visibility change.
    listing = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
    assert {s["id"] for s in listing.json["submissions"]} == {api_id, form_id}


def test_dev_per_example_browser(client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "bob")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    submission_id = api_upload(client, token, gold, prediction_file(gold, correct=10)).json["id"]
    page = client.get(f"/submissions/{submission_id}/examples?correct=yes")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "10 matching examples" in text
    assert gold.examples[0].question in text
    rows = client.get(f"/api/v1/submissions/{submission_id}/examples",
                      headers={"Authorization": f"Bearer {token}"}).json["examples"]
    assert sum(r["correct"] for r in rows) == 10
    assert rows[0]["gold"] == list(gold.examples[0].answers)


def test_identification_track_leaderboard(client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "carol")
    token = new_token(client)
    gold = release_gold.get("temp-id", "dev")
    response = api_upload(client, token, gold, prediction_file(gold), public="true")
    assert response.status_code == 201
    board = client.get("/api/v1/leaderboards/temp-id?split=dev").json
    assert board["primary_metric"] == "f1"
    assert board["entries"][0]["metrics"]["f1"] == 100.0
    assert "f1_nq_table" in board["columns"]


def test_blank_and_dev_gold_downloads(app: Flask, client: FlaskClient,
                                      release_gold: GoldSet) -> None:
    blank = client.get("/data/temp/test/blank.jsonl")
    assert blank.status_code == 200
    assert len(blank.get_data(as_text=True).splitlines()) == len(release_gold.get("temp", "test"))
    assert "answers" not in blank.get_data(as_text=True)
    assert client.get("/data/temp/dev/gold.jsonl").status_code == 200
    assert client.get("/data/temp/test/gold.jsonl").status_code == 404


def test_a_per_example_page_reads_the_stored_outcomes(
        client: FlaskClient, release_gold: GoldSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page view scores nothing: the rows come from the outcomes stored at upload."""
    from benchmark import scoring as benchmark_scoring
    from situatedqa_server.services import evaluation, scoring

    register(client, "dora")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    submission_id = api_upload(client, token, gold, prediction_file(gold, correct=10)).json["id"]

    def no_scoring(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a per-example page view scored the file again")

    monkeypatch.setattr(evaluation, "score", no_scoring)
    monkeypatch.setattr(benchmark_scoring, "score", no_scoring)
    monkeypatch.setattr(scoring, "score", no_scoring, raising=False)
    page = client.get(f"/submissions/{submission_id}/examples?correct=yes")
    assert page.status_code == 200 and "10 matching examples" in page.get_data(as_text=True)
    rows = client.get(f"/api/v1/submissions/{submission_id}/examples",
                      headers={"Authorization": f"Bearer {token}"}).json["examples"]
    assert sum(r["correct"] for r in rows) == 10
