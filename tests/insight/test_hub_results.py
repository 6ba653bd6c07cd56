"""A submission's results in the Hub's `.eval_results` format and as an Every Eval Ever record.

The Hub entries are read back with `huggingface_hub`'s own parser; the Every Eval Ever record
is validated against the schema its project publishes on PyPI (`every-eval-ever==0.3.0`,
`every_eval_ever/schemas/eval.schema.json`), which scripts/test.sh downloads pinned by hash
(tests/published-schemas.txt) into the virtualenv's `published-schemas/` folder: the wheel
needs Python 3.12, so it is read as a zip, never installed.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from huggingface_hub import eval_result_entries_to_yaml, parse_eval_result_entries
from werkzeug.test import TestResponse

from benchmark import TRACK_INFO
from benchmark.intervals import WILSON, wilson_interval
from situatedqa_server import client as cli
from situatedqa_server.extensions import db
from situatedqa_server.models import GoldVersion
from situatedqa_server.services import hub_results

from .conftest import LiveServer

SCHEMA_MEMBER = "every_eval_ever/schemas/eval.schema.json"
WHEEL = "every_eval_ever-0.3.0-py3-none-any.whl"


def published_schema() -> dict[str, Any]:
    """Every Eval Ever's eval.schema.json, from the pinned wheel scripts/test.sh fetched."""
    wheel = Path(sys.prefix) / "published-schemas" / WHEEL
    if not wheel.is_file():
        pytest.skip(f"{wheel} is missing: scripts/test.sh downloads it")
    with zipfile.ZipFile(wheel) as archive:
        schema: dict[str, Any] = json.loads(archive.read(SCHEMA_MEMBER))
    return schema


def json_of(response: TestResponse) -> dict[str, Any]:
    """A response's JSON object (a failed request fails the test with its body)."""
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def active_version(app: Flask) -> str:
    with app.app_context():
        return str(db.session.query(GoldVersion.name).filter_by(is_active=True).scalar())


def test_hub_entries_one_per_paper_metric(app: Flask, seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    strong = seeded["ids"]["strong-test"]
    submission = json_of(client.get(f"/api/v1/submissions/{strong}"))
    response = client.get(f"/api/v1/submissions/{strong}/eval_results.yaml")
    assert response.status_code == 200 and response.mimetype == "application/yaml"
    data = yaml.safe_load(response.data)
    metrics = [m for m in TRACK_INFO["temp"].metrics if submission["metrics"].get(m) is not None]
    assert len(data) == len(metrics) == len(TRACK_INFO["temp"].metrics)
    # The Hub's own parser reads every entry, and writes the same document back.
    entries = parse_eval_result_entries(data)
    assert eval_result_entries_to_yaml(entries) == data
    version = active_version(app)
    for entry, metric in zip(entries, metrics, strict=True):
        assert entry.dataset_id == app.config["HF_DATASET_ID"]
        assert entry.task_id == f"temp_test_{metric}"
        assert entry.dataset_revision == version
        assert entry.value == round(submission["metrics"][metric], 2)
        assert entry.source_url is not None and entry.source_url.endswith(f"/submissions/{strong}")
        lo, hi = submission["ci"][metric]
        assert entry.notes is not None
        assert f"95% CI {lo:.2f}-{hi:.2f}" in entry.notes
        # n is the metric's own: a partition's size for EM on a partition.
        n = submission["counts"][metric]
        assert f"n = {n:,}" in entry.notes and version in entry.notes
        on_partition = metric.removeprefix("em_") in TRACK_INFO["temp"].partition_rules
        assert (n < submission["n"]) == on_partition
    static = entries[metrics.index("em_static")].notes
    assert static is not None and "Static partition" in static
    assert "every example" in (entries[0].notes or "")


def test_every_eval_ever_record_follows_the_published_schema(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    strong = seeded["ids"]["strong-test"]
    submission = json_of(client.get(f"/api/v1/submissions/{strong}"))
    record = json_of(client.get(f"/api/v1/submissions/{strong}/every_eval_ever.json"))
    jsonschema.Draft7Validator(published_schema()).validate(record)
    assert record["schema_version"] == "0.3.0"
    results = record["evaluation_results"]
    assert [r["evaluation_result_id"] for r in results] == [
        f"temp_test_{m}" for m in TRACK_INFO["temp"].metrics]
    for result, metric in zip(results, TRACK_INFO["temp"].metrics, strict=True):
        details = result["score_details"]
        interval = details["uncertainty"]["confidence_interval"]
        assert details["score"] == submission["metrics"][metric]
        assert [interval["lower"], interval["upper"]] == submission["ci"][metric]
        assert interval["lower"] <= details["score"] <= interval["upper"]
        assert interval["confidence_level"] == 0.95
        assert details["uncertainty"]["num_samples"] == submission["counts"][metric]


def test_a_record_missing_a_required_field_fails_the_schema(seeded: dict[str, Any]) -> None:
    """The validation can fail: the record without its model is refused by the schema."""
    client: FlaskClient = seeded["client"]
    record = json_of(client.get(
        f"/api/v1/submissions/{seeded['ids']['strong-test']}/every_eval_ever.json"))
    del record["model_info"]
    with pytest.raises(jsonschema.ValidationError, match="model_info"):
        jsonschema.Draft7Validator(published_schema()).validate(record)


def test_private_submission_exports_only_to_its_team(seeded: dict[str, Any],
                                                     app: Flask) -> None:
    private = seeded["ids"]["private"]
    anonymous = app.test_client()
    for route in ("eval_results.yaml", "every_eval_ever.json", "model-index.yaml"):
        assert anonymous.get(f"/api/v1/submissions/{private}/{route}").status_code == 404
        assert anonymous.get(f"/insight/submissions/{private}/{route}").status_code == 404
        owned = anonymous.get(f"/api/v1/submissions/{private}/{route}",
                              headers=bearer(seeded["token"]))
        assert owned.status_code == 200, owned.get_data(as_text=True)


def test_client_export_writes_each_format(seeded: dict[str, Any], app: Flask,
                                          tmp_path: Path) -> None:
    strong = seeded["ids"]["strong-test"]
    with LiveServer(app) as server:
        env = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"),
               "SITUATEDQA_TOKEN": seeded["token"]}
        outputs = {}
        for fmt in ("hf-eval-results", "every-eval-ever", "model-index"):
            target = tmp_path / f"export.{fmt}"
            result = CliRunner().invoke(cli.main, ["--url", server.url, "export", str(strong),
                                                   "--format", fmt, "-o", str(target)], env=env)
            assert result.exit_code == 0, result.output
            outputs[fmt] = target.read_text()
        stdout = CliRunner().invoke(cli.main, ["--url", server.url, "export", str(strong)],
                                    env=env)
        assert stdout.exit_code == 0 and yaml.safe_load(stdout.output) == yaml.safe_load(
            outputs["hf-eval-results"])
        missing = CliRunner().invoke(cli.main, ["--url", server.url, "export", "999999"],
                                     env=env)
    assert len(yaml.safe_load(outputs["hf-eval-results"])) == len(TRACK_INFO["temp"].metrics)
    jsonschema.Draft7Validator(published_schema()).validate(
        json.loads(outputs["every-eval-ever"]))
    assert "model-index" in yaml.safe_load(outputs["model-index"])
    assert missing.exit_code != 0 and "no such submission" in missing.output


def test_a_share_at_0_percent_names_the_wilson_interval() -> None:
    """The record names each CI's method: EM at 0% of 3 carries the Wilson interval (no
    resamples behind it), EM in between the bootstrap; a score stored before the rule, at 0%
    with the bootstrap's point, keeps the bootstrap's name."""
    wilson = [100 * x for x in wilson_interval(0, 3)]
    score = SimpleNamespace(track="temp", split="test", n=6,
                            metrics={"em": 50.0, "em_static": 0.0, "em_sampled": 0.0},
                            ci={"em": [10.0, 90.0], "em_static": wilson,
                                "em_sampled": [0.0, 0.0]},
                            counts={"em": 6, "em_static": 3, "em_sampled": 3})
    run = SimpleNamespace(score=score, resamples=2000)
    static = hub_results.uncertainty(run, "em_static")  # type: ignore[arg-type]
    assert static["confidence_interval"]["method"] == WILSON
    assert "num_bootstrap_samples" not in static and static["num_samples"] == 3
    assert hub_results.method_of(run, "em_static") == WILSON  # type: ignore[arg-type]
    total = hub_results.uncertainty(run, "em")  # type: ignore[arg-type]
    assert total["confidence_interval"]["method"] == "percentile bootstrap over the examples"
    assert total["num_bootstrap_samples"] == 2000
    assert hub_results.method_of(run, "em") == (  # type: ignore[arg-type]
        "percentile bootstrap over the examples, 2,000 resamples")
    old = hub_results.uncertainty(run, "em_sampled")  # type: ignore[arg-type]
    assert old["confidence_interval"]["method"] == "percentile bootstrap over the examples"
