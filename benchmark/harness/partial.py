"""Offline scoring of a partial harness run (`python -m benchmark score --partial`).

An upload refuses a run that covers part of a split (`--limit`); offline, its covered
examples can be scored, and the CLI marks the result `partial`, with the coverage. Such a
number is never comparable with a board's.
"""

from __future__ import annotations

from ..formats import Problem, ValidationError, decompress_limited
from ..gold import GoldSplit
from ..harness_files import covered_gold, harness_predictions, read_harness_file
from ..metrics import DEFAULT_RESAMPLES, DEFAULT_SEED
from ..scoring import ScoreResult, score


def partial_result(data: bytes, gold: GoldSplit, *, filename: str = "predictions",
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   max_bytes: int, harness_filter: str | None = None
                   ) -> tuple[ScoreResult, str]:
    """The covered examples' scores and the coverage ("10 of 2795"); ValidationError."""
    data = decompress_limited(data, filename, max_bytes)
    read = read_harness_file(data, gold, filename=filename, max_bytes=max_bytes,
                             harness_filter=harness_filter, allow_partial=True)
    if read is None:
        raise ValidationError([Problem(filename, "--partial reads an lm-eval samples file or "
                                                 "an Inspect log; this is neither")])
    covered = covered_gold(read, gold)
    result = score(covered, harness_predictions(read, covered), resamples=resamples, seed=seed)
    return result, f"{len(covered)} of {len(gold)}"
