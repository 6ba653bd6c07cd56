"""Exports never pass a lenient metric off as the paper's: only EM is typed exact_match."""

from __future__ import annotations

from typing import Any

import yaml
from flask.testing import FlaskClient


def test_model_index_and_pwc_name_lenient_metrics_apart(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    strong = seeded["ids"]["strong-dev"]
    card = yaml.safe_load(client.get(f"/insight/submissions/{strong}/model-index.yaml").data)
    metrics = {m["name"]: m for m in card["model-index"][0]["results"][0]["metrics"]}
    exact = sorted(name for name, m in metrics.items() if m["type"] == "exact_match")
    assert exact == sorted(["EM", "EM (Static)", "EM (Sampled)", "EM (Start)", "EM Any"])
    assert metrics["EM equiv Any (lenient, not in the paper)"]["type"] == "situatedqa_em_equiv"
    assert metrics["EM equiv (lenient, not in the paper)"]["type"] == "situatedqa_em_equiv"
    assert metrics["Token F1 Static (lenient, not in the paper)"]["type"] == "squad_token_f1"
    assert not any(m["type"] == "f1" for m in metrics.values())  # F1 is the id tracks'

    row = client.get(f"/insight/submissions/{strong}/pwc.json").json
    assert "EM (EM equiv Any)" not in row["metrics"]
    assert row["metrics"]["EM equiv Any (lenient, not in the paper)"] is not None
    assert {"EM", "EM (Static)", "EM Any"} <= set(row["metrics"])


def test_identification_f1_stays_f1(seeded: dict[str, Any], release_gold: Any) -> None:
    from tests.server.conftest import api_upload, prediction_file

    client: FlaskClient = seeded["client"]
    gold = release_gold.get("temp-id", "dev")
    response = api_upload(client, seeded["token"], gold, prediction_file(gold, len(gold) // 2))
    card = yaml.safe_load(client.get(
        f"/insight/submissions/{response.json['id']}/model-index.yaml").data)
    types = {m["name"]: m["type"] for m in card["model-index"][0]["results"][0]["metrics"]}
    assert types["F1"] == "f1" and types["Accuracy"] == "accuracy"


def test_one_csv_under_both_links(seeded: dict[str, Any]) -> None:
    """The board header's CSV and the insight section's are one file with every column."""
    client: FlaskClient = seeded["client"]
    for query in ("split=test", "split=dev&hide_baselines=1"):
        header = client.get(f"/leaderboards/temp.csv?{query}")
        bottom = client.get(f"/insight/leaderboards/temp.csv?{query}")
        assert header.status_code == bottom.status_code == 200
        assert header.data == bottom.data
        assert header.headers["Content-Disposition"] == bottom.headers["Content-Disposition"]
        columns = header.get_data(as_text=True).splitlines()[0].split(",")
        assert {"rank_group", "source", "em_lo", "f1_static_hi"} <= set(columns)
