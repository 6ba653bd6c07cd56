"""One scorer, proven: the published conformance vectors give their hand-computed numbers
through the CLI's scorer, a samples-file upload's parser, the lm-eval aggregations, the
Inspect metrics and the `evaluate` metric; and the fingerprint names that scorer."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from harness_helpers import inspect_log, samples_file

from benchmark import score
from benchmark.cli import main as benchmark_cli
from benchmark.gold import GoldSplit
from benchmark.harness import conformance as conformance_module
from benchmark.harness import conformance_cases, fingerprint, lm_eval_task, score_case
from benchmark.harness_files import parse_file

CASES = conformance_cases()
METRIC = Path(__file__).resolve().parents[2] / "benchmark/harness/evaluate_metric/situatedqa"


def close(got: dict[str, Any], expected: dict[str, float]) -> None:
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-9), name


def test_the_vectors_are_published_with_their_reasons() -> None:
    assert {c.name for c in CASES} == {"temp-a", "temp-b", "geo", "present", "curprev"}
    assert all(c.why and c.expected for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scorer_gives_the_hand_computed_numbers(case: conformance_module.ConformanceCase
                                                ) -> None:
    close(score_case(case).metrics, case.expected)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_path_gives_the_same_numbers(case: conformance_module.ConformanceCase,
                                           tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    reference = score_case(case).metrics
    gold: GoldSplit = case.gold
    # An uploaded lm-eval samples file and an Inspect log (the server's parser).
    for data in (samples_file(gold, case.predictions),
                 json.dumps(inspect_log(gold, case.predictions, task=f"x/{gold.track}"))
                 .encode()):
        assert score(gold, parse_file(data, gold), resamples=0).metrics == reference
    # The CLI, on a gold file of the case.
    gold_file = tmp_path / "gold.jsonl"
    gold_file.write_text("".join(json.dumps(e.to_json()) + "\n" for e in gold.examples))
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"key": k, "prediction": v}) + "\n"
                                   for k, v in case.predictions.items()))
    cli = CliRunner().invoke(benchmark_cli, [
        "score", "--track", gold.track, "--split", gold.split, "--gold", str(gold_file),
        str(predictions), "--json", "--resamples", "0"])
    assert cli.exit_code == 0, cli.output
    offline = json.loads(cli.stdout)
    assert offline["scorer"] == fingerprint()
    assert {n: offline["metrics"][n] for n in reference} == reference
    # lm-eval's aggregations, over the items its process_results gives.
    monkeypatch.setitem(lm_eval_task._LOADED, (gold.track, gold.split), gold)
    items = [(gold.track, gold.split, k, v) for k, v in case.predictions.items()]
    for name in lm_eval_task.metric_names(gold.track):
        assert lm_eval_task.aggregation(name)(items) == pytest.approx(
            reference[name] if reference[name] is not None else float("nan"), nan_ok=True)
    # The evaluate metric's function, with the gold carried in the references.
    if importlib.util.find_spec("evaluate") is not None:
        spec = importlib.util.spec_from_file_location("sqa_metric", METRIC / "situatedqa.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = module.compute_situatedqa(
            [{"key": k, "prediction": v} for k, v in case.predictions.items()],
            [{"key": e.key, "track": gold.track, "split": gold.split, "gold": e.to_json()}
             for e in gold.examples])
        assert {n: result[n] for n in reference} == reference


def test_fingerprint_changes_with_the_vectors(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    first = fingerprint()
    assert first.startswith("sqa-") and len(first) == 20
    package = tmp_path / "benchmark"
    (package / "harness").mkdir(parents=True)
    source = Path(conformance_module.__file__).resolve().parent.parent
    for name in conformance_module.SCORER_MODULES:
        (package / name).write_bytes((source / name).read_bytes())
    vectors = json.loads((source / "harness" / "conformance.json").read_text())
    vectors["cases"][0]["expected"]["em"] = 51.0
    (package / "harness" / "conformance.json").write_text(json.dumps(vectors))
    monkeypatch.setattr(conformance_module, "_PACKAGE", package)
    conformance_module.fingerprint.cache_clear()
    try:
        assert conformance_module.fingerprint() != first
    finally:
        monkeypatch.undo()
        conformance_module.fingerprint.cache_clear()
    assert fingerprint() == first
