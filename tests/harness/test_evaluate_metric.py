"""`evaluate.load` on the metric folder gives the CLI's numbers, on 20 generated files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from harness_helpers import generated

from benchmark import GoldSet
from benchmark.cli import main as benchmark_cli
from benchmark.harness import fingerprint

pytest.importorskip("evaluate")
METRIC = Path(__file__).resolve().parents[2] / "benchmark/harness/evaluate_metric/situatedqa"
#: Loads the metric folder (no Hub) and scores each file named on the command line.
SCRIPT = """
import json, sys
import evaluate
metric = evaluate.load(sys.argv[1])
out = []
for path in sys.argv[3:]:
    rows = [json.loads(line) for line in open(path)]
    out.append(metric.compute(predictions=rows, references=[
        {"key": r["key"], "track": "temp", "split": sys.argv[2]} for r in rows]))
print(json.dumps(out))
"""


def test_evaluate_metric_agrees_with_the_cli_on_20_files(tmp_path: Path,
                                                         release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    paths = []
    for seed in range(20):
        path = tmp_path / f"p{seed}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in generated(gold, seed)))
        paths.append(path)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(METRIC), "dev",
                           *map(str, paths)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for path, result in zip(paths, results, strict=True):
        cli = CliRunner().invoke(benchmark_cli, ["score", "--track", "temp", "--split", "dev",
                                                 str(path), "--json", "--resamples", "0"])
        assert cli.exit_code == 0, cli.output
        offline = json.loads(cli.output)
        assert result["scorer"] == offline["scorer"] == fingerprint()
        assert result["n"] == offline["n"] == len(gold)
        names = [n for n in offline["metrics"] if n in result]
        assert {"em", "em_any", "em_static", "em_equiv", "f1"} <= set(names)
        assert {n: result[n] for n in names} == {n: offline["metrics"][n] for n in names}
