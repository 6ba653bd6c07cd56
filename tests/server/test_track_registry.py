"""The track registry is the only place that knows a track: a new one is one declaration.

A toy track, declared once (one entry added to benchmark.tracks.TRACK_INFO for the test), is
read from its release file, uploaded to, scored and shown on the home page, its board page
and the board's JSON, with its title, its partitions' labels, its plot and the paper note of
its declared partition sizes. The identification board labels its per-source columns by the
source datasets' names declared with the track.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from benchmark import TRACK_INFO, GoldSet, GoldSplit
from benchmark.scoring import source_slug
from benchmark.tracks import (
    GroupPlot,
    ReleaseFile,
    TrackInfo,
    read_situated,
    read_track,
)
from situatedqa_server.extensions import db
from situatedqa_server.models import ReportedEntry
from situatedqa_server.services import gold_store

from .conftest import TEST_CONFIG, api_upload, new_token, prediction_file, register

TOY = TrackInfo(
    "toy", "Toy colours", ("em", "em_warm", "em_cold", "em_any"), "em", ("colour",),
    "Name a fruit of the given colour.", identification=False, partitions=("warm", "cold"),
    partition_labels={"warm": "Warm colours", "cold": "Cold colours"},
    release=ReleaseFile("toy_data", "fruit"), read=read_situated,
    partition_rule=lambda context, label: (
        "warm" if context["colour"] in ("red", "orange") else "cold",),
    plots=("groups",), groups=GroupPlot("colour family", ("em_warm", "em_cold")),
    paper_partition_sizes={"dev": {"warm": 7}},
)
COLOURS = {"red": "cherry", "orange": "orange", "blue": "blueberry", "green": "lime"}


@pytest.fixture
def toy_track(monkeypatch: pytest.MonkeyPatch) -> Iterator[TrackInfo]:
    """The toy track in the registry, for this test only (the one declaration)."""
    monkeypatch.setitem(TRACK_INFO, TOY.name, TOY)
    yield TOY


def toy_release(directory: Path) -> Path:
    """A release folder holding the toy track's dev file (two questions, four colours)."""
    records = [{"id": number, "question": f"which fruit is {colour}? ({number})",
                "colour": colour, "answer": [fruit], "any_answer": list(COLOURS.values())}
               for number, (colour, fruit) in enumerate(COLOURS.items(), start=1)]
    path = TOY.release.path(directory, "dev")
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return directory


@pytest.fixture
def toy_app(toy_track: TrackInfo, database: dict[str, Any], tmp_path: Path) -> Iterator[Flask]:
    """An app whose gold is the toy track's dev split, read by the track's own reader."""
    from situatedqa_server import create_app

    split = GoldSplit("toy", "dev", read_track(toy_release(tmp_path / "release"), "toy", "dev"))
    app = create_app({**TEST_CONFIG, **database, "CACHE_DIR": str(tmp_path / "cache")})
    with app.app_context():
        gold_store.register_first_version(GoldSet([split], {"version": "toy"}))
    yield app
    with app.app_context():
        db.engine.dispose()


def test_a_track_declared_once_is_read_uploaded_scored_and_shown_on_its_board(
        toy_app: Flask) -> None:
    client = toy_app.test_client()
    register(client, "toyer")
    token = new_token(client)
    with toy_app.app_context():
        gold = gold_store.get_split("toy", "dev")
        assert [e.partitions for e in gold] == [("warm",), ("warm",), ("cold",), ("cold",)]
        # Three of four right; blue's answer is green's (another context's: EM Any counts it).
        answers = {"1|red": "cherry", "2|orange": "orange", "3|blue": "lime", "4|green": "lime"}
        data = "".join(json.dumps({"key": k, "prediction": v}) + "\n"
                       for k, v in answers.items()).encode()
        db.session.add(ReportedEntry(track="toy", split="dev", method_name="Paper toy model",
                                     source="Table 1", metrics={"em": 40.0, "em_warm": 50.0},
                                     primary_metric=40.0))
        db.session.commit()
    upload = api_upload(client, token, gold, data, method_name="Toy model", public="true")
    assert upload.status_code == 201, upload.get_data(as_text=True)

    blank = client.get("/data/toy/dev/blank.jsonl").get_data(as_text=True).splitlines()
    assert [json.loads(line)["key"] for line in blank] == list(answers)
    home = client.get("/").get_data(as_text=True)
    assert "Toy colours" in home and "/leaderboards/toy?split=dev" in home

    board = client.get("/api/v1/leaderboards/toy?split=dev")
    assert board.status_code == 200, board.get_data(as_text=True)
    payload = board.json
    assert payload["columns"][:4] == ["em", "em_warm", "em_cold", "em_any"]
    live = next(e for e in payload["entries"] if e["method_name"] == "Toy model")
    assert live["rank"] == 1
    assert live["metrics"]["em"] == 75.0
    assert (live["metrics"]["em_warm"], live["metrics"]["em_cold"]) == (100.0, 50.0)
    assert live["metrics"]["em_any"] == 100.0
    assert {e["method_name"] for e in payload["entries"]} == {"Toy model", "Paper toy model"}

    page = client.get("/leaderboards/toy?split=dev")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "<h1>Toy colours <small>(dev)</small></h1>" in text
    assert "Name a fruit of the given colour." in text
    assert ">Warm colours</a>" in text and ">Cold colours</a>" in text  # column headers
    assert "Toy model" in text and "Paper toy model" in text
    # The paper note gives the declared paper size beside the release's.
    assert "Warm colours has 2 examples here and 7 in the paper" in text

    detail = client.get(f"/submissions/{upload.json['id']}").get_data(as_text=True)
    assert "EM per colour family" in detail
    plot = client.get(f"/insight/submissions/{upload.json['id']}/plots/groups.svg")
    assert plot.status_code == 200 and plot.mimetype == "image/svg+xml"
    years = client.get(f"/insight/submissions/{upload.json['id']}/plots/years.svg")
    assert years.status_code == 404  # a plot the toy track does not declare


def test_the_identification_board_labels_each_source_dataset(app: Flask,
                                                             release_gold: GoldSet) -> None:
    """The per-source F1 columns of temp-id are headed by the source datasets' names."""
    client = app.test_client()
    register(client, "labeller")
    token = new_token(client)
    gold = release_gold.get("temp-id", "dev")
    upload = api_upload(client, token, gold, prediction_file(gold, 300), public="true")
    assert upload.status_code == 201
    columns = client.get("/api/v1/leaderboards/temp-id?split=dev").json["columns"]
    assert {"f1_marco", "f1_nq_passage", "f1_nq_table", "f1_webq", "f1_tydi"} <= set(columns)
    text = client.get("/leaderboards/temp-id?split=dev").get_data(as_text=True)
    for label in ("F1 (MS MARCO)", "F1 (NQ-Passage)", "F1 (NQ-Table)", "F1 (WebQuestions)",
                  "F1 (TyDi QA)"):
        assert f">{label}</a>" in text, label
    assert "F1 (marco)" not in text and "F1 (nq_passage)" not in text
    detail = client.get(f"/submissions/{upload.json['id']}").get_data(as_text=True)
    assert "F1 (MS MARCO)" in detail


def test_every_source_of_the_release_has_a_declared_label(release_gold: GoldSet) -> None:
    """No per-source column of the release falls back to its raw name."""
    for track, split in release_gold.available():
        info = TRACK_INFO[track]
        for source in release_gold.get(track, split).sources:
            slug = source_slug(source)
            assert info.source_label(slug) != slug, (track, source)
