"""A score after a model's declared knowledge cutoff, added to a result (benchmark.cutoff).

A submission that declares `knowledge_cutoff` (a stored submission's column, the
`knowledge_cutoff` of predictions in hand) gets the figures after and by its cutoff in its
score's metrics, CIs and counts, on every split and every gold version: the version's split
gives the examples' effective dates (a campaign's `answer_since`, temp's `since` year), the
result its outcome and class codes. On a later version's test board the figures count the
examples the submission was given (the release's, and the fresh examples of the input
releases it answered), as the provenance figures do. Nothing here ranks a board.

evaluation.score_into (its `_as_board`) calls `with_cutoff` for every new result whose
source declares a cutoff, after every other figure is in, with the examples the source was
given: every scoring path (an upload, an incremental or a full rescore) gives the same.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from benchmark import ScoreResult
from benchmark.cutoff import cutoff_values
from benchmark.metrics import BoolArray

from . import gold_store


def with_cutoff(view: gold_store.VersionGold, result: ScoreResult, cutoff: date,
                given: BoolArray | None = None) -> ScoreResult:
    """The result with the cutoff figures of its outcomes (and class codes) on the
    version's split; as it is when no example it was given has an effective date, or the
    result does not cover the split. `given`: the examples the source was given (None:
    every one)."""
    split = view.gold.get(result.track, result.split)
    n = len(split)
    if result.outcomes.shape != (n,):
        return result
    classes = result.error_classes
    figures = cutoff_values(split, view.tables(split), result.outcomes,
                            classes if classes is not None and classes.shape == (n,) else None,
                            cutoff, given)
    if not figures:
        return result
    return replace(
        result, metrics={**result.metrics, **{k: v.value for k, v in figures.items()}},
        ci={**result.ci, **{k: v.ci for k, v in figures.items()}},
        counts={**result.counts, **{k: v.count for k, v in figures.items()}})
