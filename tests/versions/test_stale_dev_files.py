"""A dev file made from the release, after a version changed dev: the upload error names the
active version and links its blank file; the offline scorer scores against its gold."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from benchmark import GoldSet
from benchmark.cli import main as benchmark_cli

from .conftest import (
    DEV_ADDED_KEY,
    api_upload,
    csrf_token,
    new_token,
    prediction_file,
    register,
)


def activate(runner: FlaskCliRunner, update_file: Path) -> None:
    assert runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                               "2023-06", "--as-of", "2023-06-01"]).exit_code == 0
    assert runner.invoke(args=["gold", "activate", "2023-06"]).exit_code == 0


def test_release_dev_file_is_told_the_version_and_its_blank_file(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        release_gold: GoldSet) -> None:
    activate(runner, update_file)
    register(client, "dora")
    token = new_token(client)
    dev = release_gold.get("temp", "dev")
    response = api_upload(client, token, dev, prediction_file(dev))
    assert response.status_code == 400
    lead = response.json["error"]["message"]
    assert "'2023-06' (as of 2023-06-01)" in lead and "retired 1 and added 1" in lead
    assert "http://localhost/data/temp/dev/blank.jsonl" in lead
    assert "--gold temp.dev.gold.jsonl" in lead

    page = client.post("/submissions/new", content_type="multipart/form-data", data={
        "csrf_token": csrf_token(client, "/submissions/new"), "track": "temp", "split": "dev",
        "method_name": "release file", "file": (__import__("io").BytesIO(
            prediction_file(dev)), "temp.dev.jsonl")}).get_data(as_text=True)
    assert "2023-06" in page
    assert re.search(r'<a id="stale-blank" href="http://localhost/data/temp/dev/blank.jsonl">',
                     page)

    test = release_gold.get("temp", "test")  # the test inputs stay the release's: no hint
    assert api_upload(client, token, test, prediction_file(test)).status_code == 201


def test_offline_scorer_scores_against_a_versions_gold(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        release_gold: GoldSet, tmp_path: Path) -> None:
    activate(runner, update_file)
    gold_path = tmp_path / "temp.dev.gold.jsonl"
    gold_path.write_bytes(client.get("/data/temp/dev/gold.jsonl").data)
    blank = [json.loads(line) for line in client.get("/data/temp/dev/blank.jsonl").data.split(
        b"\n") if line]
    assert DEV_ADDED_KEY in {r["key"] for r in blank}
    gold = {json.loads(line)["key"]: json.loads(line) for line in gold_path.read_text(
        ).splitlines()}
    # Every prediction right except the added example's: EM = (n - 1) / n, by hand.
    predictions = tmp_path / "answers.jsonl"
    predictions.write_text("".join(json.dumps({"key": key, "prediction": (
        "wrong" if key == DEV_ADDED_KEY else record["answers"][0])}) + "\n"
        for key, record in gold.items()))
    result = CliRunner().invoke(benchmark_cli, [
        "score", "--track", "temp", "--split", "dev", "--gold", str(gold_path),
        str(predictions), "--json", "--resamples", "0"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    n = len(gold)
    assert n == len(release_gold.get("temp", "dev"))  # one retired, one added
    assert abs(body["metrics"]["em"] - 100 * (n - 1) / n) < 1e-9

    release_file = tmp_path / "release.jsonl"  # the release's keys: rejected, named
    release_file.write_bytes(prediction_file(release_gold.get("temp", "dev")))
    refused = CliRunner().invoke(benchmark_cli, [
        "score", "--track", "temp", "--split", "dev", "--gold", str(gold_path),
        str(release_file)])
    assert refused.exit_code == 1 and "unknown example for temp/dev" in refused.output

    broken = tmp_path / "broken.gold.jsonl"
    broken.write_text('{"key": "1"}\n')
    bad = CliRunner().invoke(benchmark_cli, [
        "score", "--track", "temp", "--split", "dev", "--gold", str(broken), str(predictions)])
    assert bad.exit_code == 1 and "broken.gold.jsonl:1" in bad.output
