"""The real lm-evaluation-harness with a tiny GPT-2 made here (no download): a samples file
of the whole temp dev split scores, through the CLI, the API and `situatedqa submit`,
exactly as the predictions extracted from it by hand; a --limit run is refused."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from harness_helpers import tiny_model

from benchmark import GoldSet
from benchmark.cli import main as benchmark_cli
from benchmark.harness import fingerprint
from benchmark.harness.lm_eval_task import TASKS_DIR, written_files
from tests.server.conftest import make_app, new_token, register

pytest.importorskip("lm_eval")
pytestmark = pytest.mark.slow
LM_EVAL = Path(sys.executable).with_name("lm_eval")


def run_lm_eval(model: Path, out: Path, *args: str) -> Path:
    """lm_eval on our task folder with the tiny model; the samples file it wrote."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(out / "hf")}
    done = subprocess.run(
        [str(LM_EVAL), "--model", "hf", "--model_args", f"pretrained={model},dtype=float32",
         "--include_path", str(TASKS_DIR), "--batch_size", "64", "--log_samples",
         "--output_path", str(out), "--gen_kwargs", "max_gen_toks=2", *args],
        cwd=out, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = sorted(out.rglob("samples_*.jsonl"))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory, release_gold: GoldSet) -> Path:
    words = sorted({w for e in release_gold.get("temp", "train").examples[:300]
                    for a in e.answers for w in a.lower().split()})
    return Path(tiny_model(tmp_path_factory.mktemp("tiny-gpt2"), words))


@pytest.fixture(scope="module")
def dev_samples(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_lm_eval(model, tmp_path_factory.mktemp("lm-eval-dev"), "--tasks",
                       "situatedqa_temp")


def by_hand(samples: Path) -> bytes:
    """The predictions of a samples file extracted by hand: doc's key, the filtered answer."""
    lines = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]
    return "".join(json.dumps({"key": s["doc"]["key"], "prediction": s["filtered_resps"][0]})
                   + "\n" for s in lines).encode()


def cli_json(path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(benchmark_cli, ["score", "--track", "temp", "--split", "dev",
                                                str(path), "--json", "--resamples", "0", *args])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.output)
    return parsed


def test_task_folder_is_written_from_the_registry() -> None:
    for name, text in written_files().items():
        assert (TASKS_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python -m benchmark.harness.lm_eval_task")
    assert f"scorer: {fingerprint()}" in (TASKS_DIR / "situatedqa_temp.yaml").read_text()


def test_samples_file_scores_as_its_predictions_by_hand(
        dev_samples: Path, tmp_path: Path, release_gold: GoldSet, database: dict[str, Any],
        gold_dir: Path) -> None:
    gold = release_gold.get("temp", "dev")
    compact = tmp_path / "by_hand.jsonl"
    compact.write_bytes(by_hand(dev_samples))
    expected = cli_json(compact)
    scored = cli_json(dev_samples)
    assert scored["n"] == len(gold) and scored["metrics"] == expected["metrics"]
    # lm-eval's own numbers are the project's scorer's (its aggregations call benchmark).
    results = json.loads(next(dev_samples.parent.glob("results_*.json")).read_text())
    harness = results["results"]["situatedqa_temp"]
    for name in ("em", "em_any", "em_static", "em_sampled", "em_start", "em_equiv", "f1"):
        assert harness[f"{name},first-line"] == expected["metrics"][name]
    assert results["configs"]["situatedqa_temp"]["metadata"]["scorer"] == fingerprint()

    # The API and `situatedqa submit` give the same numbers.
    app = make_app(database, gold_dir, tmp_path)
    browser = app.test_client()
    register(browser, "erin")
    token = new_token(browser)
    response = app.test_client().post(
        "/api/v1/submissions", content_type="multipart/form-data",
        headers={"Authorization": f"Bearer {token}"},
        data={"track": "temp", "split": "dev", "method_name": "tiny gpt-2", "public": "false",
              "file": (io.BytesIO(dev_samples.read_bytes()), dev_samples.name)})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["harness"]["harness"] == "lm-eval" and body["harness"]["model"]
    assert body["metrics"] == {name: expected["metrics"][name] for name in body["metrics"]}


def test_limit_run_is_refused_and_scored_offline_only_as_partial(
        model: Path, tmp_path: Path) -> None:
    samples = run_lm_eval(model, tmp_path, "--tasks", "situatedqa_temp", "--limit", "12")
    refused = CliRunner().invoke(benchmark_cli, ["score", "--track", "temp", "--split", "dev",
                                                 str(samples)])
    assert refused.exit_code != 0
    assert "this run covers 12 of 3423 examples of temp/dev (a run with --limit?)" in \
        refused.output
    partial = cli_json(samples, "--partial")
    assert partial["partial"] is True and partial["coverage"] == "12 of 3423"
    assert partial["n"] == 12


def test_blank_inputs_give_a_samples_file_without_gold(model: Path, tmp_path: Path,
                                                       release_gold: GoldSet) -> None:
    blank = tmp_path / "temp.test.inputs.jsonl"
    blank.write_text("".join(json.dumps(e.blank()) + "\n"
                             for e in release_gold.get("temp", "test").examples[:6]))
    samples = run_lm_eval(model, tmp_path, "--tasks", "situatedqa_temp", "--metadata",
                          json.dumps({"split": "test", "inputs": str(blank)}))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(lines) == 6
    for line in lines:
        assert line["target"] == ""
        assert not {"answers", "any_answers", "label"} & line["doc"].keys()
        assert line["doc"]["situatedqa_split"] == "test"
