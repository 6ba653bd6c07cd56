"""Harness files uploaded through the API and `situatedqa submit`: scored as the CLI scores
them, the run's facts stored and shown, and bad files refused with no quota spent."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from harness_helpers import inspect_log, samples_file

from benchmark import GoldSet
from benchmark.cli import main as benchmark_cli
from benchmark.harness import fingerprint
from situatedqa_server import client as situatedqa_client
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from tests.server.conftest import LiveServer, make_app, new_token, register


@pytest.fixture
def live(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A live server allowing one test submission a day, a user and a token."""
    app: Flask = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=1)
    browser = app.test_client()
    register(browser, "dana")
    token = new_token(browser)
    with LiveServer(app) as server:
        yield {"app": app, "url": server.url, "token": token, "browser": browser}


def answers(gold: Any) -> dict[str, str]:
    """Every fourth example right, the rest wrong (a made-up model's answers)."""
    return {e.key: (e.answers[0] if i % 4 == 0 else f"wrong {i}")
            for i, e in enumerate(gold.examples)}


def upload(live: dict[str, Any], data: bytes, track: str, split: str,
           filename: str = "samples_situatedqa_temp_2026.jsonl", **fields: str) -> Any:
    client = live["app"].test_client()
    form: dict[str, Any] = {"track": track, "split": split, "method_name": "harness run",
                            "public": "false", **fields,
                            "file": (io.BytesIO(data), filename)}
    return client.post("/api/v1/submissions", data=form, content_type="multipart/form-data",
                       headers={"Authorization": f"Bearer {live['token']}"})


def cli_score(tmp_path: Path, name: str, data: bytes, *args: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_bytes(data)
    result = CliRunner().invoke(benchmark_cli, ["score", "--track", "temp", "--split", "dev",
                                                str(path), "--json", "--resamples", "0",
                                                *args])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.output)
    return parsed


def assert_same_numbers(server: dict[str, Any], offline: dict[str, Any]) -> None:
    """Every metric the server reports is the CLI's, exactly (the CLI adds the error classes,
    which need the split's error tables)."""
    assert {"em", "em_any", "em_equiv", "f1"} <= server.keys() <= offline.keys()
    assert server == {name: offline[name] for name in server}


def test_samples_file_through_api_and_client_scores_as_the_cli(
        live: dict[str, Any], tmp_path: Path, release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    predicted = answers(gold)
    data = samples_file(gold, predicted)
    compact = "".join(json.dumps({"key": k, "prediction": v}) + "\n"
                      for k, v in predicted.items()).encode()
    by_hand = cli_score(tmp_path, "compact.jsonl", compact)
    from_samples = cli_score(tmp_path, "samples.jsonl", data)
    assert from_samples["metrics"] == by_hand["metrics"]
    assert from_samples["scorer"] == fingerprint()

    response = upload(live, data, "temp", "dev")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["format"] == "lm-eval-samples" and body["scorer"] == fingerprint()
    assert_same_numbers(body["metrics"], by_hand["metrics"])
    assert body["harness"]["harness"] == "lm-eval"
    assert body["harness"]["harness_version"] == "0.4.13"
    assert body["harness"]["model"] == "tiny-model"
    assert body["harness"]["samples"] == len(gold)
    with live["app"].app_context():
        stored = db.session.get(Submission, body["id"])
        assert stored is not None and stored.harness_hashes is not None
        assert len(stored.harness_hashes) == len(gold)
    page = live["browser"].get(f"/submissions/{body['id']}").get_data(as_text=True)
    assert "lm-eval 0.4.13" in page and "tiny-model" in page and "situatedqa_temp" in page

    # The same file again, with two filters, through `situatedqa submit --filter`.
    two = samples_file(gold, predicted, filters=("first-line", "strict"))
    path = tmp_path / "samples_two.jsonl"
    path.write_bytes(two)
    env = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"), "SITUATEDQA_TOKEN": live["token"]}
    refused = CliRunner().invoke(situatedqa_client.main, [
        "--url", live["url"], "submit", str(path), "--track", "temp", "--split", "dev",
        "--json"], env=env)
    assert refused.exit_code != 0 and "choose one" in refused.output
    submitted = CliRunner().invoke(situatedqa_client.main, [
        "--url", live["url"], "submit", str(path), "--track", "temp", "--split", "dev",
        "--filter", "first-line", "--method-name", "two filters", "--json"], env=env)
    # The first-line filter's answers are the first upload's: the team's duplicate (409).
    assert "already submitted these predictions as submission" in submitted.output, \
        submitted.output
    strict = CliRunner().invoke(situatedqa_client.main, [
        "--url", live["url"], "submit", str(path), "--track", "temp", "--split", "dev",
        "--filter", "strict", "--method-name", "strict filter", "--json"], env=env)
    assert strict.exit_code == 0, strict.output
    strict_body = json.loads(strict.output)
    assert strict_body["harness"]["filter"] == "strict"
    upper = {k: f"other {v}" for k, v in predicted.items()}
    assert_same_numbers(strict_body["metrics"], cli_score(tmp_path, "upper.jsonl", "".join(
        json.dumps({"key": k, "prediction": v}) + "\n" for k, v in upper.items()).encode())[
        "metrics"])


def test_inspect_log_through_the_api(live: dict[str, Any], tmp_path: Path,
                                     release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    predicted = answers(gold)
    log = json.dumps(inspect_log(gold, predicted)).encode()
    response = upload(live, log, "temp", "dev", filename="log.json")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["format"] == "inspect-json" and body["harness"]["model"] == "hf/tiny"
    assert_same_numbers(body["metrics"], cli_score(tmp_path, "log.json", log)["metrics"])


@pytest.mark.parametrize("case", ["wrong-task", "truncated", "two-filters", "tampered",
                                  "results-file", "partial"])
def test_bad_harness_files_spend_no_quota(live: dict[str, Any], release_gold: GoldSet,
                                          case: str) -> None:
    gold = release_gold.get("temp", "test")
    predicted = answers(gold)
    good = samples_file(gold, predicted)
    lines = good.splitlines(keepends=True)
    if case == "wrong-task":
        data, track, message = good, "geo", "this sample is of the task 'situatedqa_temp'"
    elif case == "truncated":
        data, track, message = good[:-50], "temp", "truncated?"
    elif case == "two-filters":
        data = samples_file(gold, predicted, filters=("a", "b"))
        track, message = "temp", "choose one"
    elif case == "tampered":
        record = json.loads(lines[7])
        record["doc"]["date"] = "1850"
        lines[7] = (json.dumps(record) + "\n").encode()
        data, track, message = b"".join(lines), "temp", ":8: 'doc' does not match its doc_hash"
    elif case == "results-file":
        data = json.dumps({"results": {"situatedqa_temp": {}}, "configs": {},
                           "n-samples": {}}).encode()
        track, message = "temp", "this is lm-eval's results file"
    else:
        data, track = b"".join(lines[:100]), "temp"
        message = f"this run covers 100 of {len(gold)} examples of temp/test"
    response = upload(live, data, track, "test")
    assert response.status_code == 400, response.get_json()
    error = response.get_json()["error"]
    assert any(message in p["message"] or message in f"{p['file']}:{p['line']}: {p['message']}"
               for p in error["details"]["problems"]), error
    # The day's one test submission is still there to spend.
    assert upload(live, good, "temp", "test").status_code == 201


def test_download_inputs_gives_the_blank_inputs_the_tasks_read(
        live: dict[str, Any], tmp_path: Path, release_gold: GoldSet) -> None:
    from benchmark.harness.lm_eval_task import blank_examples

    out = tmp_path / "temp.test.inputs.jsonl"
    env = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"), "SITUATEDQA_TOKEN": live["token"]}
    done = CliRunner().invoke(situatedqa_client.main, [
        "--url", live["url"], "download-inputs", "temp", "test", "-o", str(out)], env=env)
    assert done.exit_code == 0, done.output
    gold = release_gold.get("temp", "test")
    examples = blank_examples(out, "temp")
    assert [e.key for e in examples] == list(gold.keys)
    assert all(not e.answers and not e.any_answers for e in examples)


def test_a_harness_file_s_paths_are_shown_by_their_last_component(
        database: dict[str, Any], gold_dir: Path, tmp_path: Path, release_gold: GoldSet) -> None:
    """lm-eval run with `--model_args pretrained=/abs/path/model` writes that folder into
    every document (our task's situatedqa_model), Inspect records `model_args.model_path`:
    the server stores and shows the folder's name, never the uploader's path."""
    app = make_app(database, gold_dir, tmp_path)
    browser = app.test_client()
    register(browser, "erin")
    token = new_token(browser)
    run = {"app": app, "token": token}
    auth = {"Authorization": f"Bearer {token}"}
    gold = release_gold.get("temp", "dev")
    predicted = answers(gold)

    response = upload(run, samples_file(gold, predicted, model="/abs/path/model"), "temp", "dev")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["harness"]["model"] == "model"
    assert "/abs/path" not in response.get_data(as_text=True)
    page = browser.get(f"/submissions/{body['id']}").get_data(as_text=True)
    assert ">model<" in page and "/abs/path" not in page

    log = inspect_log(gold, {key: f"other {value}" for key, value in predicted.items()})
    log["eval"]["model_args"] = {"model_path": "D:\\models\\erin\\tiny"}
    inspected = upload(run, json.dumps(log).encode(), "temp", "dev", filename="log.json")
    assert inspected.status_code == 201, inspected.get_json()
    assert inspected.get_json()["harness"]["model"] == "hf/tiny (tiny)"

    # A run stored before paths were kept out is shown by the last component too.
    with app.app_context():
        stored = db.session.get_one(Submission, body["id"])
        stored.harness = {**(stored.harness or {}), "model": "/abs/erin/models/stored-model"}
        db.session.commit()
    shown = app.test_client().get(f"/api/v1/submissions/{body['id']}", headers=auth)
    assert shown.get_json()["harness"]["model"] == "stored-model"
    assert "/abs/erin" not in browser.get(f"/submissions/{body['id']}").get_data(as_text=True)

    # lm-eval's results file (its config names the model_args) is refused, its path unsaid.
    results = {"results": {"situatedqa_temp": {"em,first-line": 0.1}},
               "configs": {"situatedqa_temp": {"task": "situatedqa_temp"}},
               "config": {"model": "hf", "model_args": "pretrained=/abs/path/model"},
               "n-samples": {"situatedqa_temp": {"original": len(gold)}}}
    refused = upload(run, json.dumps(results).encode(), "temp", "dev",
                     filename="results_2026.json")
    assert refused.status_code == 400 and "results file" in refused.get_data(as_text=True)
    assert "/abs/path" not in refused.get_data(as_text=True)
