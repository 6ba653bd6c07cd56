"""Snapshots: frozen by organizers, unchanged by later submissions and rescoring, citable."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import update

from benchmark import TRACK_INFO, GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import ReportedEntry, Score

from .conftest import PASSWORD, api_upload, csrf_token, login, prediction_file


def organizer(seeded: dict[str, Any]) -> FlaskClient:
    """A logged-in organizer of the seeded app."""
    app = seeded["client"].application
    app.test_cli_runner().invoke(args=["users", "create", "root", "--email", "r@example.org",
                                       "--password", PASSWORD, "--admin"])
    client = app.test_client()
    login(client, "root")
    return client


def freeze(client: FlaskClient, title: str = "Temporal test, December") -> str:
    """Freeze temp/test through the form; the snapshot's URL."""
    response = client.post("/snapshots/", data={
        "csrf_token": csrf_token(client, "/snapshots/"), "track": "temp", "split": "test",
        "title": title, "note": "For the camera-ready."})
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def test_only_organizers_freeze(seeded: dict[str, Any]) -> None:
    alice: FlaskClient = seeded["client"]
    token = csrf_token(alice, "/auth/account")
    response = alice.post("/snapshots/", data={"csrf_token": token, "track": "temp",
                                               "split": "test", "title": "mine"})
    assert response.status_code == 404
    assert 'action="/snapshots/"' not in alice.get("/snapshots/").get_data(as_text=True)


def test_snapshot_never_changes(seeded: dict[str, Any], release_gold: GoldSet) -> None:
    root = organizer(seeded)
    url = freeze(root)
    public = seeded["client"].application.test_client()
    before = {suffix: public.get(url + suffix).data for suffix in ("", ".json", ".csv", ".bib")}
    frozen = json.loads(before[".json"])
    assert [e["method_name"] for e in frozen["leaderboard"]["entries"]] == [
        "strong test", "weak test"]
    payload = json.dumps(frozen["leaderboard"], sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(payload.encode()).hexdigest() == frozen["sha256"]

    gold = release_gold.get("temp", "test")
    api_upload(seeded["client"], seeded["token"], gold, prediction_file(gold), public="true",
               method_name="perfect later")
    app = seeded["client"].application
    with app.app_context():  # a rescore rewrites every score of the board
        db.session.execute(update(Score).values(primary_metric=1.0, metrics={"em": 1.0}))
        db.session.commit()
    live = public.get("/api/v1/leaderboards/temp?split=test").json
    assert live["entries"][0]["metrics"]["em"] == 1.0 and live["total"] == 3
    assert {s: public.get(url + s).data for s in before} == before


def test_snapshot_page_offers_bibtex(seeded: dict[str, Any]) -> None:
    root = organizer(seeded)
    url = freeze(root, title="Temporal {test} 100% & more")
    page = root.get(url).get_data(as_text=True)
    bib = root.get(url + ".bib").get_data(as_text=True)
    assert bib.startswith("@misc{situatedqa-temp-test-")
    assert "\\url{http://localhost/snapshots/" in bib
    assert "Temporal test 100 more" in bib  # BibTeX's special characters are dropped
    assert "@misc{situatedqa-temp-test-" in page and "group" not in bib
    second = freeze(root)
    assert second != url and second.endswith("-2")
    listing = root.get("/snapshots/?track=temp").get_data(as_text=True)
    assert url.split("/")[-1] in listing and second.split("/")[-1] in listing
    assert root.get("/snapshots/nope").status_code == 404


def test_snapshot_with_paper_rows_says_how_the_partitions_differ(seeded: dict[str, Any]) -> None:
    app = seeded["client"].application
    with app.app_context():
        db.session.add(ReportedEntry(track="temp", split="test", method_name="DPR (paper)",
                                     source="Table 5", primary_metric=23.0,
                                     metrics={"em": 23.0, "em_sampled": 17.2}))
        db.session.commit()
    url = freeze(organizer(seeded))
    html = app.test_client().get(url).get_data(as_text=True)
    assert "DPR (paper)" in html
    assert "Sampled has 1,482 examples here and 1,472 in the paper" in html
    assert "Start has 913 examples here and 923 in the paper" in html


def test_a_snapshot_page_shows_the_papers_columns_and_the_rest_on_demand(
        seeded: dict[str, Any]) -> None:
    root = organizer(seeded)
    url = freeze(root)
    frozen = root.get(url + ".json").json["leaderboard"]["columns"]
    assert len(frozen) > len(TRACK_INFO["temp"].metrics)  # optional columns are frozen too
    shown = re.findall(r'<th class="num" data-column="([^"]+)"',
                       root.get(url).get_data(as_text=True))
    assert shown == list(TRACK_INFO["temp"].metrics)
    every = root.get(url + "?columns=all").get_data(as_text=True)
    assert re.findall(r'<th class="num" data-column="([^"]+)"', every) == frozen
    assert "show every column" in root.get(url).get_data(as_text=True)
