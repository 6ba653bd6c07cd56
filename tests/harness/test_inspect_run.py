"""The real Inspect with the tiny GPT-2 through its local `hf` provider: the .eval log of a
whole split scores, through the CLI, the API and `situatedqa submit`, as its predictions
read by hand with inspect_ai's own log reader, and as Inspect's own metrics."""

from __future__ import annotations

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
from benchmark.harness_files import first_line
from situatedqa_server import client as situatedqa_client
from tests.server.conftest import LiveServer, make_app, new_token, register

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.slow
INSPECT = Path(sys.executable).with_name("inspect")
#: The whole present dev split (531 examples): Inspect's per-sample cost is high on 2 cores.
TRACK, SPLIT = "present", "dev"


def cli_json(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(benchmark_cli, ["score", "--track", TRACK, "--split", SPLIT,
                                                str(path), "--json", "--resamples", "0"])
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.output)
    return parsed


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The .eval log of one Inspect run over the whole split (once for both backends)."""
    tmp_path = tmp_path_factory.mktemp("inspect")
    model = Path(tiny_model(tmp_path / "tiny", ["paris", "london", "biden"]))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "INSPECT_LOG_DIR": str(tmp_path / "logs")}
    done = subprocess.run(
        [str(INSPECT), "eval", f"situatedqa/{TRACK}", "--model", "hf/local", "-M",
         f"model_path={model}", "-M", "use_chat_template=false", "-M", "do_sample=false",
         "-M", "batch_size=64", "--max-connections", "64", "--max-tokens", "2",
         "--log-dir", str(tmp_path / "logs"), "--display", "none"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = sorted((tmp_path / "logs").glob("*.eval"))
    return log


def test_inspect_log_scores_as_its_predictions_by_hand(
        eval_log: Path, tmp_path: Path, release_gold: GoldSet, database: dict[str, Any],
        gold_dir: Path) -> None:
    log = eval_log
    from inspect_ai.log import read_eval_log

    read = read_eval_log(str(log))
    assert read.samples is not None
    gold = release_gold.get(TRACK, SPLIT)
    assert len(read.samples) == len(gold)
    compact = tmp_path / "by_hand.jsonl"
    compact.write_text("".join(json.dumps({"key": s.id, "prediction": first_line(
        s.output.completion)}) + "\n" for s in read.samples))
    expected = cli_json(compact)
    scored = cli_json(log)
    assert scored["metrics"] == expected["metrics"] and scored["scorer"] == fingerprint()
    assert read.results is not None
    inspect_metrics = {name: m.value for s in read.results.scores
                       for name, m in s.metrics.items()}
    for name in ("em", "em_stable", "em_updated", "em_equiv", "f1"):
        assert inspect_metrics[f"sqa_{name}"] == expected["metrics"][name]

    app = make_app(database, gold_dir, tmp_path)
    browser = app.test_client()
    register(browser, "fay")
    token = new_token(browser)
    with LiveServer(app) as server:
        submitted = CliRunner().invoke(situatedqa_client.main, [
            "--url", server.url, "submit", str(log), "--track", TRACK, "--split", SPLIT,
            "--json"], env={"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"),
                            "SITUATEDQA_TOKEN": token})
    assert submitted.exit_code == 0, submitted.output
    body = json.loads(submitted.output)
    assert body["format"] == "inspect-eval" and body["harness"]["harness"] == "inspect"
    assert body["metrics"] == {name: expected["metrics"][name] for name in body["metrics"]}
