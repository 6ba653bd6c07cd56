"""The project's scorer as a lighteval (0.13) metric, and a prompt function for its tasks.

`situatedqa_metric(track)` is a `CorpusLevelMetricGrouping` over the track's metrics (the
paper's, then the lenient), built from the lm-eval task's functions, not from a copy of
them: each sample's step is `process_results` on the document lighteval carries in
`Doc.specific` and the first line of the model's text (the lm-eval task's filter); each
metric's corpus step is that task's `aggregation`, which scores every pair with
`benchmark.score`. So a lighteval run gives the numbers of the CLI, lm-eval, Inspect and the
`evaluate` metric for the same answers.

`prompt_function(line, task_name)` turns a document of `benchmark.harness.docs.document`
(one row of the lm-eval task's dataset) into lighteval's `Doc`: the task's zero-shot
prompt, the canonical answer as the one choice, the document itself as `specific`.
Documents without gold (the server's blank inputs) give no metric: upload the answers.

This module imports lighteval only inside these functions: `benchmark.harness` itself
imports no harness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from .docs import first_line, prompt, target
from .lm_eval_task import _track_of, aggregation, metric_names, process_results


def prompt_function(line: Mapping[str, Any], task_name: str = "") -> Any:
    """lighteval's Doc for one of the task's documents."""
    from lighteval.tasks.requests import Doc

    track = str(line.get("situatedqa_track") or _track_of(line))
    return Doc(query=prompt(line, track), choices=[target(line, track)], gold_index=0,
               specific=dict(line), task_name=task_name, id=str(line["key"]))


def situatedqa_metric(track: str) -> Any:
    """Every metric of `track` as one lighteval metric group (its names: metric_names)."""
    from lighteval.metrics.metrics_sample import SampleLevelComputation
    from lighteval.metrics.utils.metric_utils import CorpusLevelMetricGrouping
    from lighteval.tasks.requests import SamplingMethod

    names = list(metric_names(track))

    class SituatedQAPair(SampleLevelComputation):
        """The sample's (track, split, key, answer) under every metric's name."""

        def compute(self, doc: Any, model_response: Any, **kwargs: Any) -> dict[str, Any]:
            texts = model_response.text or [""]
            items = process_results(doc.specific or {}, [first_line(texts[0])])
            if not items:
                raise ValueError(
                    f"document {doc.id!r} carries no gold (the server's blank inputs): "
                    "lighteval computes no SituatedQA metric for it; upload the answers")
            return items

    # lighteval annotates higher_is_better as dict[str, Callable]; it reads booleans.
    higher_is_better = cast(dict[str, Callable[..., Any]], dict.fromkeys(names, True))
    return CorpusLevelMetricGrouping(
        metric_name=names, higher_is_better=higher_is_better,
        category=SamplingMethod.GENERATIVE, sample_level_fn=SituatedQAPair(),
        corpus_level_fn={name: aggregation(name) for name in names})
