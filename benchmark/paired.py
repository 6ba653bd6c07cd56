"""The paired test of a track's primary metric alone: what a board's rank groups are
separated by.

It is benchmark.compare's test of that metric (the same per-example codes, statistic,
bootstrap stream and seed, so the same p-value), without the gold, which the primary metric
(over every example) does not need, and without the other metrics' resamples: a board
tests many neighbouring pairs.
"""

from __future__ import annotations

from .metrics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ID_STATISTICS,
    IntArray,
    PairedDifference,
    accuracy_from_binary,
    paired_difference,
)
from .scoring import CORRECT
from .tracks import track_info

__all__ = ["compare_primary"]


def compare_primary(track: str, outcomes_a: IntArray, outcomes_b: IntArray, *,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                    greater: bool = False) -> PairedDifference:
    """compare()'s paired difference A - B of the track's primary metric, from the outcome
    codes of the same examples."""
    if outcomes_a.shape != outcomes_b.shape:
        raise ValueError("both outcome arrays must cover the same examples")
    info = track_info(track)
    if info.identification:  # F1 of the TP/FP/FN/TN codes, as compare() tests it
        codes_a, codes_b, categories = outcomes_a, outcomes_b, 4
        statistic = ID_STATISTICS[info.primary]
    elif info.primary == "em":  # EM over every example: the CORRECT bit
        codes_a, codes_b, categories = outcomes_a & CORRECT, outcomes_b & CORRECT, 2
        statistic = accuracy_from_binary
    else:
        raise ValueError(f"no paired test of {track}'s primary metric {info.primary!r}")
    return paired_difference(codes_a, codes_b, categories, statistic, name=info.primary,
                             seed=seed, resamples=resamples, greater=greater)
