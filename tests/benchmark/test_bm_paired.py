"""The rank groups' paired test is benchmark.compare's test of the primary metric."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark import compare, compare_primary
from benchmark.gold import GoldSplit
from benchmark.harness import conformance_cases
from benchmark.tracks import TRACK_INFO

RNG = np.random.default_rng(7)


def random_outcomes(gold: GoldSplit) -> np.ndarray:
    """Outcome codes a scorer could give: TP/FP/FN/TN (0-3) on identification, the EM and
    EM Any bits on QA (EM implies EM Any)."""
    if gold.is_identification:
        return RNG.integers(0, 4, size=len(gold)).astype(np.int64)
    correct = RNG.integers(0, 2, size=len(gold))
    return (correct | (np.maximum(correct, RNG.integers(0, 2, size=len(gold))) << 1)).astype(
        np.int64)


@pytest.mark.parametrize("case", conformance_cases(), ids=lambda c: c.name)
def test_the_primary_test_is_compares(case: object) -> None:
    gold: GoldSplit = case.gold  # type: ignore[attr-defined]
    primary = TRACK_INFO[gold.track].primary
    for _ in range(5):
        a, b = random_outcomes(gold), random_outcomes(gold)
        full = compare(gold, a, b, resamples=300)[primary]
        alone = compare_primary(gold.track, a, b, resamples=300)
        assert (alone.difference, alone.ci, alone.p_value) == (
            full.difference, full.ci, full.p_value)


def test_different_examples_are_refused() -> None:
    with pytest.raises(ValueError):
        compare_primary("temp", np.zeros(3, dtype=np.int64), np.zeros(4, dtype=np.int64))
