"""Leaderboards: ranking, sorting, filters, marks, pagination, CSV, JSON twin."""

from __future__ import annotations

import csv
import io

from flask import Flask
from sqlalchemy import update

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import ReportedEntry, Submission

from .conftest import api_upload, new_token, prediction_file, register


def _board(client: object, query: str) -> dict:  # type: ignore[type-arg]
    return client.get(f"/api/v1/leaderboards/geo?split=dev{query}").json  # type: ignore[attr-defined]


def test_ranking_sorting_filters_and_pages(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    ids = {}
    for name, correct, model_type, tuned in (("low", 100, "retrieval", "no"),
                                             ("high", 900, "closed-book", "yes"),
                                             ("mid", 500, "retrieval", "yes"),
                                             ("tie", 500, "other", "no")):
        # "tie" scores as "mid" with other wrong answers (the same file twice is a 409).
        data = prediction_file(gold, correct, wrong=f"no {name}")
        response = api_upload(client, token, gold, data,
                              method_name=name, model_type=model_type, fine_tuned=tuned,
                              public="true")
        ids[name] = response.json["id"]
    with app.app_context():
        db.session.execute(update(Submission).where(Submission.id == ids["low"])
                           .values(is_baseline=True))
        db.session.add(ReportedEntry(track="geo", split="dev", method_name="paper",
                                     source="Table 5", metrics={"em": 50.0},
                                     primary_metric=50.0))
        db.session.commit()

    board = _board(client, "")
    assert [e["method_name"] for e in board["entries"]][:1] == ["high"]
    ranks = {e["method_name"]: e["rank"] for e in board["entries"]}
    assert ranks["high"] == 1 and ranks["mid"] == ranks["tie"] == 2 and ranks["low"] == 4
    assert ranks["paper"] is None
    marks = {e["method_name"]: (e["baseline"], e["reported"]) for e in board["entries"]}
    assert marks["low"] == (True, False) and marks["paper"] == (False, True)
    assert {"em", "em_common", "em_rare", "em_any", "em_us", "em_india",
            "em_other_common"} <= set(board["entries"][0]["ci"])

    ascending = _board(client, "&sort=em&order=asc")["entries"]
    assert ascending[0]["method_name"] == "low"
    by_name = [e["method_name"] for e in _board(client, "&sort=method_name&order=asc")["entries"]]
    assert by_name == sorted(by_name)
    assert {e["method_name"] for e in _board(client, "&hide_baselines=1")["entries"]} == {
        "high", "mid", "tie"}
    assert {e["method_name"] for e in _board(client, "&model_type=retrieval")["entries"]} == {
        "low", "mid"}
    assert {e["method_name"] for e in _board(client, "&fine_tuned=yes")["entries"]} == {
        "high", "mid"}
    page2 = _board(client, "&per_page=2&page=2")
    assert page2["total"] == 5 and len(page2["entries"]) == 2

    assert client.get("/api/v1/leaderboards/geo?split=dev&sort=nope").status_code == 400
    assert client.get("/api/v1/leaderboards/nope").status_code == 404
    assert client.get("/leaderboards/geo?split=weird").status_code == 400
    assert client.get("/leaderboards/geo?split=dev&track=x&page=x").status_code == 200

    page = client.get("/leaderboards/geo?split=dev").get_data(as_text=True)
    assert "reported in the paper" in page and "baseline" in page
    rows = list(csv.DictReader(io.StringIO(
        client.get("/leaderboards/geo.csv?split=dev").get_data(as_text=True))))
    assert rows[0]["method_name"] == "high" and rows[0]["em_lo"]


def test_hidden_and_deleted_entries_leave_the_board(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    first = api_upload(client, token, gold, public="true").json["id"]
    second = api_upload(client, token, gold, prediction_file(gold, 10), public="true",
                        method_name="=cmd()").json["id"]
    with app.app_context():
        db.session.execute(update(Submission).where(Submission.id == first)
                           .values(hidden=True))
        db.session.commit()
    assert [e["id"] for e in _board(client, "")["entries"]] == [second]
    text = client.get("/leaderboards/geo.csv?split=dev").get_data(as_text=True)
    assert "'=cmd()" in text
    client.delete(f"/api/v1/submissions/{second}", headers={"Authorization": f"Bearer {token}"})
    assert _board(client, "")["entries"] == []
    assert client.get(f"/submissions/{second}").status_code == 404
