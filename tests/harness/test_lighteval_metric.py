"""lighteval's metric group of a track gives the CLI's numbers: each sample through
lighteval's own Metric.compute_sample, each metric through its corpus aggregation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from harness_helpers import generated

from benchmark import GoldSet
from benchmark.cli import main as benchmark_cli
from benchmark.harness.docs import document

pytest.importorskip("lighteval")

from lighteval.models.model_output import ModelResponse  # noqa: E402

from benchmark.harness.lighteval_metric import prompt_function, situatedqa_metric  # noqa: E402


def lighteval_scores(gold: object, rows: list[dict[str, str]], track: str) -> dict[str, float]:
    metric = situatedqa_metric(track)
    by_key = {e.key: e for e in gold.examples}  # type: ignore[attr-defined]
    samples = []
    for row in rows:  # a model's text: the answer, then whatever it rambles on with (the
        # filter takes the first non-blank line, so a model that answers nothing says nothing)
        doc = prompt_function(document(by_key[row["key"]], track, "dev", harness="lighteval"),
                              f"situatedqa:{track}")
        text = f"{row['prediction']}\nQuestion: and then" if row["prediction"] else ""
        response = ModelResponse(text=[text])
        samples.append(metric.compute_sample(doc=doc, model_response=response))
    return {name: aggregate([s[name] for s in samples])
            for name, aggregate in metric.get_corpus_aggregations().items()}


@pytest.mark.parametrize("track", ["temp", "geo"])
def test_lighteval_metric_agrees_with_the_cli(tmp_path: Path, release_gold: GoldSet,
                                             track: str) -> None:
    gold = release_gold.get(track, "dev")
    for seed in range(3):
        rows = generated(gold, seed)
        path = tmp_path / f"{track}{seed}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cli = CliRunner().invoke(benchmark_cli, ["score", "--track", track, "--split", "dev",
                                                 str(path), "--json", "--resamples", "0"])
        assert cli.exit_code == 0, cli.output
        offline = json.loads(cli.output)["metrics"]
        scores = lighteval_scores(gold, rows, track)
        assert {"em", "em_any", "em_equiv", "f1"} <= scores.keys()
        assert scores == {name: offline[name] for name in scores}


def test_a_document_without_gold_gives_no_metric(release_gold: GoldSet) -> None:
    example = release_gold.get("temp", "dev").examples[0]
    doc = prompt_function(document(example, "temp", "test", harness="lighteval",
                                   with_gold=False))
    with pytest.raises(ValueError, match="carries no gold"):
        situatedqa_metric("temp").compute_sample(doc=doc,
                                                 model_response=ModelResponse(text=["x"]))
