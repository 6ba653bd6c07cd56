"""lm-eval's `!function utils.…` hooks of the SituatedQA tasks: bound per track, all code in
benchmark.harness.lm_eval_task (the project's scorer, imported, never re-implemented)."""

from functools import partial

from benchmark.harness.docs import prompt, target
from benchmark.harness.lm_eval_task import (
    aggregation,
    all_metrics,
    first_line_filter,
    load,
    process_results,
)
from benchmark.tracks import TRACKS

__all__ = ["first_line_filter", "process_results"]

for _track in TRACKS:
    _name = _track.replace("-", "_")
    globals()[f"load_{_name}"] = partial(load, _track)
    globals()[f"prompt_{_name}"] = partial(lambda doc, track: prompt(doc, track), track=_track)
    globals()[f"target_{_name}"] = partial(lambda doc, track: target(doc, track), track=_track)
for _metric in all_metrics():
    globals()[f"agg_{_metric}"] = aggregation(_metric)
