"""The provenance figures on the server: a version that adds and changes test examples gives
every test upload the unreleased and released figures and the contamination gap, shown in
the API, on the pages, in the CSV, the exports and the CLI, never the unreleased answers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from benchmark import GoldSet, GoldSplit, normalize_answer
from benchmark.intervals import newcombe_interval, wilson_interval
from situatedqa_server import client as situatedqa_cli
from situatedqa_server.services import gold_store, ladder, plots, snapshots

from .conftest import (
    CANARY_ANSWER,
    CANARY_KEY,
    DEV_ADDED_KEY,
    api_upload,
    new_token,
    register,
)

FIGURES = ("unreleased", "released", "contamination_gap")


@pytest.fixture
def activated(runner: FlaskCliRunner, update_file: Path) -> None:
    """The update (a test answer changed, a test example added and one retired) active."""
    built = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                "2023-06", "--as-of", "2023-06-01"])
    assert built.exit_code == 0, built.output
    active = runner.invoke(args=["gold", "activate", "2023-06"])
    assert active.exit_code == 0, active.output


def test_a_test_board_without_unreleased_examples_has_no_figures(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "plain")
    test = release_gold.get("temp", "test")
    response = api_upload(client, new_token(client), test, public="true")
    assert response.status_code == 201
    assert not set(FIGURES) & set(response.get_json()["metrics"])
    board = client.get("/api/v1/leaderboards/temp?split=test").get_json()
    assert not set(FIGURES) & set(board["columns"])
    page = client.get("/leaderboards/temp?split=test").get_data(as_text=True)
    assert "test answers are public" in page and 'value="unreleased"' not in page
    home = client.get("/").get_data(as_text=True)
    assert "published 2022-08-10" in home and "the same code for everyone" in home
    metrics = client.get("/metrics/temp").get_data(as_text=True)
    for name in FIGURES:
        assert f'id="{name}"' in metrics
    assert "indication of contamination, not a proof" in metrics


def upload_all_but_first(client: FlaskClient, test: Any, user: str,
                         method_name: str) -> dict[str, Any]:
    """A public upload right on every example but the first (whose answer the version
    changed to the canary); the added example has no prediction: the two unreleased ones
    are wrong. Its response body."""
    lines = [{"key": e.key, "prediction": "wrong" if i == 0 else e.answers[0]}
             for i, e in enumerate(test.examples)]
    register(client, user)
    response = api_upload(client, new_token(client), test,
                          "".join(json.dumps(line) + "\n" for line in lines).encode(),
                          public="true", method_name=method_name)
    assert response.status_code == 201, response.get_json()
    body: dict[str, Any] = response.get_json()
    return body


def test_the_figures_in_the_api_pages_csv_exports_and_cli(
        app: Flask, client: FlaskClient, activated: None, release_gold: GoldSet,
        capsys: pytest.CaptureFixture[str]) -> None:
    test = release_gold.get("temp", "test")
    body = upload_all_but_first(client, test, "bob", "provenance method")
    submission_id = body["id"]

    # The API: metrics, CIs and counts. Released: every kept release example, all right
    # (test[1] was retired), so 100; unreleased: the changed answer, 0 of 1 (the added
    # example is fresh, and the file did not answer its input release: it is in no
    # figure); the gap 100 points.
    api = client.get(f"/api/v1/submissions/{submission_id}").get_json()
    for payload in (body, api):
        assert payload["counts"]["unreleased"] == 1
        assert payload["counts"]["released"] == len(test) - 2
        assert payload["metrics"]["unreleased"] == 0.0
        assert payload["metrics"]["released"] == 100.0
        assert payload["metrics"]["contamination_gap"] == 100.0
        # At 100% and 0%: Newcombe's and Wilson's intervals, which stay wide (a bootstrap
        # of 0 of 1 never varies: [0, 0]).
        assert payload["ci"]["unreleased"] == pytest.approx([0.0, 79.3451], abs=1e-4)
        assert payload["ci"]["contamination_gap"][1] == 100.0
        assert 0 < payload["ci"]["contamination_gap"][0] < 50
        # The gap's n is the two counts it compares, never the board's total.
        assert "contamination_gap" not in payload["counts"]
    # The paper's Total counts the release's examples the version keeps (the changed one
    # included), never the fresh one no participant of the release was given.
    n = len(test) - 1
    assert api["metrics"]["em"] == pytest.approx(100.0 * (n - 1) / n)
    assert api["counts"]["em"] == n

    # The board: optional columns in the picker, shown when picked; the sort accepts them.
    board = client.get("/api/v1/leaderboards/temp?split=test").get_json()
    assert board["columns"][-5:] == [*FIGURES, "fresh", "fresh_2023-06"]
    assert client.get("/api/v1/leaderboards/temp?split=test&sort=unreleased").status_code == 200
    dev = client.get("/api/v1/leaderboards/temp?split=dev").get_json()
    assert not set(FIGURES) & set(dev["columns"])
    page = client.get("/leaderboards/temp?split=test").get_data(as_text=True)
    assert 'value="unreleased"' in page and 'data-column="unreleased"' not in page
    assert "test answers are public" in page
    picked = client.get("/leaderboards/temp?split=test&show=unreleased&show=contamination_gap"
                        ).get_data(as_text=True)
    assert 'data-column="unreleased"' in picked and 'data-column="contamination_gap"' in picked
    assert "an indication" in picked

    # The submission page.
    detail = client.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert 'data-metric="unreleased"' in detail and "Contamination gap" in detail
    assert 'id="unreleased-note"' in detail and "an indication, not a proof" in detail
    assert f"{len(test) - 2:,} vs 1</td>" in detail

    # The submission's chart: unreleased and released as a group of their own, the gap
    # (points, not a share) left to the table.
    groups = dict(plots.metric_groups("temp", api["metrics"]))
    assert groups[plots.PROVENANCE_GROUP] == ["unreleased", "released"]
    assert not any("contamination_gap" in members for members in groups.values())
    chart = client.get(f"/insight/submissions/{submission_id}/plots/scores.svg")
    assert chart.status_code == 200

    # The CSV: each figure with its CI bounds.
    exported = client.get("/leaderboards/temp.csv?split=test&show=unreleased")
    rows = list(csv.DictReader(io.StringIO(exported.get_data(as_text=True))))
    row = next(r for r in rows if r["method_name"] == "provenance method")
    assert float(row["unreleased"]) == 0.0 and float(row["contamination_gap"]) == 100.0
    assert row["contamination_gap_lo"] and row["unreleased_hi"]

    # The exports: types of their own, labelled as not in the paper.
    pwc = client.get(f"/insight/submissions/{submission_id}/pwc.json").get_json()
    assert pwc["metrics"]["Unreleased EM (not in the paper)"] == 0.0
    assert any(name.startswith("Contamination gap (an indication") for name in pwc["metrics"])
    index = client.get(f"/insight/submissions/{submission_id}/model-index.yaml"
                       ).get_data(as_text=True)
    assert "situatedqa_unreleased" in index and "situatedqa_contamination_gap" in index
    assert "type: exact_match\n    value: 0.0" not in index

    # A snapshot freezes the board's columns, the figures among them.
    with app.app_context():
        frozen = snapshots.full_board("temp", "test")
    assert frozen["columns"][-5:] == [*FIGURES, "fresh", "fresh_2023-06"]
    entry = next(e for e in frozen["entries"] if e["method_name"] == "provenance method")
    assert entry["metrics"]["contamination_gap"] == 100.0 and entry["ci"]["unreleased"]

    # The CLI's table, from the API's JSON.
    situatedqa_cli.print_scores(api)
    printed = capsys.readouterr().out
    assert "Unreleased" in printed and "Contamination gap" in printed
    assert "an indication, not a proof" in printed
    gap_row = next(line for line in printed.splitlines() if "(contamination_gap)" in line)
    assert gap_row.endswith(f"{len(test) - 2:,} vs 1")

    # Never an unreleased answer or key, in any of them.
    for text in (json.dumps(body), json.dumps(api), json.dumps(board), json.dumps(frozen),
                 page, picked, detail,
                 exported.get_data(as_text=True), json.dumps(pwc), index, printed):
        assert CANARY_ANSWER not in text and CANARY_KEY not in text
        assert normalize_answer(CANARY_ANSWER) not in text


def test_dev_examples_say_where_they_come_from(
        app: Flask, client: FlaskClient, activated: None, release_gold: GoldSet) -> None:
    """Dev gold is public, refreshed answers included: its per-example rows name each
    example's origin; the dev board has no provenance figures."""
    register(client, "dave")
    token = new_token(client)
    with app.app_context():
        dev = gold_store.get_split("temp", "dev")
    created = api_upload(client, token, dev)
    assert created.status_code == 201, created.get_json()
    assert not set(FIGURES) & set(created.get_json()["metrics"])
    rows = client.get(f"/api/v1/submissions/{created.get_json()['id']}/examples",
                      headers={"Authorization": f"Bearer {token}"}).get_json()["examples"]
    origin = {row["key"]: row["origin"] for row in rows}
    released = release_gold.get("temp", "dev").examples
    assert origin[released[0].key] == "changed"
    assert origin[DEV_ADDED_KEY] == "added"
    assert origin[released[2].key] == "release"
    assert released[1].key not in origin  # retired


def test_no_unreleased_answer_right_shows_a_wide_interval(
        app: Flask, client: FlaskClient, activated: None, release_gold: GoldSet) -> None:
    """0 right of the 1 unreleased example the file was given (the changed answer): the
    Wilson interval [0, 79.35], in percent as every figure is stored, and Newcombe's
    interval for the gap; the pages show and name them (the percentile bootstrap of 0 of 1
    is [0, 0])."""
    submission_id = upload_all_but_first(client, release_gold.get("temp", "test"), "wilson",
                                         "wide method")["id"]
    api = client.get(f"/api/v1/submissions/{submission_id}").get_json()
    released = api["counts"]["released"]
    assert (api["counts"]["unreleased"], api["metrics"]["unreleased"]) == (1, 0.0)
    # Wilson, 0 of 1: [0, z² / (1 + z²)] = [0, 79.35] percent.
    assert api["ci"]["unreleased"] == [0.0, pytest.approx(79.35, abs=5e-3)]
    assert api["ci"]["unreleased"] == [100 * x for x in wilson_interval(0, 1)]
    assert api["ci"]["released"] == [100 * x for x in wilson_interval(released, released)]
    gap = [100 * x for x in newcombe_interval(released, released, 0, 1)]
    assert api["ci"]["contamination_gap"] == gap
    assert gap[0] < 50 and gap[1] == 100.0  # 100 points, from one example: far from sure

    detail = client.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert '<span class="ci">[0.00, 79.35]</span>' in detail
    assert f'<span class="ci">[{gap[0]:.2f}, 100.00]</span>' in detail
    metrics = client.get("/metrics/temp").get_data(as_text=True)
    assert "Wilson score interval" in metrics and "Newcombe" in metrics


def test_the_ladder_decides_on_the_versions_own_split(
        app: Flask, client: FlaskClient, activated: None, release_gold: GoldSet,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A version that adds a test example scores an upload on more examples than the
    release's inputs hold: the Ladder compares the team's two uploads' outcomes on the
    version's split (it was given the inputs, of another length, and failed)."""
    app.config["TEST_FEEDBACK"] = "ladder"
    test = release_gold.get("temp", "test")
    compared: list[tuple[int, ...]] = []
    real_releases = ladder.releases

    def spy(gold: GoldSplit, new: Any, best: Any, *args: Any) -> bool:
        compared.append((len(gold), len(new), len(best)))
        assert [e.key for e in gold.examples] != [e.key for e in test.examples]
        return real_releases(gold, new, best, *args)

    monkeypatch.setattr(ladder, "releases", spy)
    first = upload_all_but_first(client, test, "ladder", "first")
    # The same team again, every answer wrong: not better, so withheld, and the answer shows
    # the released submission's scores.
    lines = "".join(json.dumps({"key": e.key, "prediction": "wrong"}) + "\n"
                    for e in test.examples).encode()
    second = api_upload(client, new_token(client), test, lines, public="true",
                        method_name="second")
    assert second.status_code == 201, second.get_json()
    assert second.get_json()["metrics"]["em"] == first["metrics"]["em"] > 0
    assert compared and all(len(set(lengths)) == 1 for lengths in compared)
