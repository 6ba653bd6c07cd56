"""Compare pages, error analysis, leaderboard exports, Papers-with-Code and model-index."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import yaml
from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet
from situatedqa_server.services import diagnostics

from .conftest import add_scored, add_user, api_upload, prediction_file


def test_compare_on_dev_lists_the_differing_examples(seeded: dict[str, Any],
                                                     release_gold: GoldSet) -> None:
    client: FlaskClient = seeded["client"]
    ids = seeded["ids"]
    gold = release_gold.get("temp", "dev")
    html = client.get(f"/insight/compare?a={ids['strong-dev']}&b={ids['weak-dev']}").get_data(
        as_text=True)
    differing = len(gold) // 2 - len(gold) // 5
    assert f"They differ on {differing} examples." in html
    assert 'class="examples"' in html and gold.examples[len(gold) // 5].key in html
    assert '<tr class="separated">' in html  # 30 points apart: p < 0.05


def test_compare_on_test_shows_aggregates_only(seeded: dict[str, Any],
                                               release_gold: GoldSet) -> None:
    client: FlaskClient = seeded["client"]
    ids = seeded["ids"]
    html = client.get(f"/insight/compare?a={ids['strong-test']}&b={ids['weak-test']}").get_data(
        as_text=True)
    assert "They differ on" in html and 'class="examples"' not in html
    assert "only aggregates are shown" in html
    gold = release_gold.get("temp", "test")
    assert all(e.key not in html for e in gold.examples[:50])


def test_compare_refuses_mismatches_and_hidden_entries(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    ids = seeded["ids"]
    mixed = client.get(f"/insight/compare?a={ids['strong-test']}&b={ids['strong-dev']}")
    assert mixed.status_code == 400 and "same track, split" in mixed.get_data(as_text=True)
    stranger = client.application.test_client()
    assert stranger.get(f"/insight/compare?a={ids['strong-test']}&b={ids['private']}"
                        ).status_code == 404
    assert stranger.get("/insight/compare").status_code == 200  # the empty form
    typed = stranger.get("/insight/compare?a=1&b=x")
    assert typed.status_code == 400 and "is not a submission number" in typed.get_data(as_text=True)


def test_other_context_rate_is_counted(app: Flask, release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    codes = np.zeros(len(gold), dtype=np.uint8)
    codes[:100] = 2  # right in some other context only (paper Table 6)
    codes[100:400] = 3
    with app.app_context():
        submission = add_scored(add_user("diag"), "temp", "dev", codes)
        report = diagnostics.diagnose(submission, submission.scores[0])
    overall = report.groups[0]
    assert overall["any_not_one_count"] == 100
    assert abs(overall["any_not_one"] - 100 * 100 / len(gold)) < 1e-9
    assert abs(overall["em"] - 100 * 300 / len(gold)) < 1e-9
    assert [r["any_not_one"] for r in report.examples[:101]] == [True] * 100 + [False]
    page = app.test_client().get(f"/insight/submissions/{submission.id}/diagnostics"
                                 "?only=any_not_one").get_data(as_text=True)
    assert f"{100 * 100 / len(gold):.2f}" in page and "100 examples" in page


def test_diagnostics_on_test_hide_examples(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    html = client.get(f"/insight/submissions/{seeded['ids']['strong-test']}/diagnostics"
                      ).get_data(as_text=True)
    assert "Any − One" in html and 'class="examples"' not in html


def test_leaderboard_exports_have_every_column_and_ci(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    data = client.get("/insight/leaderboards/temp.json?split=test").json
    assert [e["method_name"] for e in data["entries"]] == ["strong test", "weak test"]
    assert data["entries"][0]["rank_group"] == "1" and data["gold_version"]
    assert set(data["entries"][0]["ci"]) == set(data["columns"])
    rows = list(csv.DictReader(io.StringIO(
        client.get("/insight/leaderboards/temp.csv?split=test").get_data(as_text=True))))
    assert {"rank_group", "em", "em_lo", "em_hi", "em_static_lo"} <= set(rows[0])
    assert float(rows[0]["em_lo"]) <= float(rows[0]["em"]) <= float(rows[0]["em_hi"])


def test_csv_export_defuses_formulas(seeded: dict[str, Any], release_gold: GoldSet) -> None:
    gold = release_gold.get("geo", "dev")
    api_upload(seeded["client"], seeded["token"], gold, prediction_file(gold, 5),
               method_name="=HYPERLINK(\"x\")", public="true")
    text = seeded["client"].get("/insight/leaderboards/geo.csv?split=dev").get_data(as_text=True)
    assert "'=HYPERLINK" in text


def test_papers_with_code_row_and_model_index(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    strong = seeded["ids"]["strong-test"]
    row = client.get(f"/insight/submissions/{strong}/pwc.json").json
    assert row["model_name"] == "strong test" and row["metrics"]["EM"] > 40
    assert {"paper_url", "code_links", "dataset", "task"} <= set(row)
    card = yaml.safe_load(client.get(f"/insight/submissions/{strong}/model-index.yaml").data)
    entry = card["model-index"][0]
    assert entry["name"] == "strong test"
    result = entry["results"][0]
    assert set(result["task"]) == {"type", "name"}
    assert {"type", "name", "split"} <= set(result["dataset"])
    assert result["dataset"]["split"] == "test"
    assert all(set(m) == {"type", "value", "name"} for m in result["metrics"])
    assert result["metrics"][0] == {"type": "exact_match", "value": row["metrics"]["EM"],
                                    "name": "EM"}
