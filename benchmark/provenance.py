"""Where a gold example's answer comes from: the public release, or a later gold version.

The release's test answers are public. An example of a later version is *unreleased* when
its current gold was never published: it is not in the release (added through a gold
version), or its gold was updated to answers the release does not hold for it (the
release's answers and any_answer, compared normalized, as EM compares them; on an
identification track, another label). Everything here is a pure function of two splits
and a submission's outcome codes, so an incremental rescore gives what a full one gives.

The figures (not in the paper, never ranking a board):

* ``unreleased``: the track's per-example correctness (EM on QA tracks, accuracy on the
  identification tracks) on the unreleased examples, with its CI as the paper's
  partitions' (a bootstrap on its own seeded stream, the Wilson interval at 0% or 100%);
* ``released``: the same on the other examples;
* ``contamination_gap``: released minus unreleased, in points. The two are different
  examples, so its CI comes from a bootstrap that resamples each set on its own (two
  independent binomial draws per resample, streams of their own), or, when either side is
  at 0% or 100% (where that side's draws cannot vary: often the few unreleased examples),
  Newcombe's hybrid score interval of the two (intervals.py). A positive gap is an
  indication of contamination, not a proof: the new examples may simply be harder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from .gold import Example, GoldSplit
from .intervals import codes_value, difference_ci
from .metrics import (
    TN,
    TP,
    BoolArray,
    IntArray,
    MetricValue,
    accuracy_from_binary,
    metric_from_codes,
    percentile_interval,
    rng_for,
)
from .normalize import normalize_answer
from .tracks import GAP, PROVENANCE_LABELS, PROVENANCE_METRICS, RELEASED, UNRELEASED

__all__ = ["GAP", "PROVENANCE_LABELS", "PROVENANCE_METRICS", "RELEASED", "UNRELEASED",
           "correct_of", "gap_counts", "gap_interval", "is_unreleased", "origins",
           "provenance_values", "unreleased_mask"]

#: The bootstrap streams of the gap's two sides (apart from the figures' own streams).
GAP_STREAMS: Final = (f"{GAP}:{RELEASED}", f"{GAP}:{UNRELEASED}")


def _held(example: Example) -> frozenset[str]:
    """The normalized answers an example's gold holds (answers and any_answer)."""
    return frozenset(normalize_answer(a) for a in (*example.answers, *example.any_answers))


def is_unreleased(example: Example, released: Example | None) -> bool:
    """Whether an example's gold was never published, given the release's example of the
    same key (None: the release does not have it)."""
    if released is None:
        return True
    if example.label is not None or released.label is not None:
        return example.label != released.label
    return not _held(example) <= _held(released)


def unreleased_mask(release: GoldSplit, split: GoldSplit) -> BoolArray:
    """Per example of `split`, in its order: True when its gold is not the release's (see
    is_unreleased); `release` is the same track and split of the release."""
    if (release.track, release.split) != (split.track, split.split):
        raise ValueError(f"{release.track}/{release.split} is not the release of "
                         f"{split.track}/{split.split}")
    if release.examples == split.examples:
        return np.zeros(len(split), dtype=np.bool_)
    by_key = {example.key: example for example in release.examples}
    return np.fromiter((is_unreleased(e, by_key.get(e.key)) for e in split.examples),
                       dtype=np.bool_, count=len(split))


#: An example's origin (origins): its gold as released, added after the release, or its
#: gold changed after the release.
RELEASE_ORIGIN: Final = "release"
ADDED_ORIGIN: Final = "added"
CHANGED_ORIGIN: Final = "changed"
ORIGINS: Final = (RELEASE_ORIGIN, ADDED_ORIGIN, CHANGED_ORIGIN)


def origins(release: GoldSplit, split: GoldSplit) -> list[str]:
    """Where each example of `split` comes from, in its order (ORIGINS): the release (the
    release's gold unchanged), added through a gold version, or changed by one (any change
    of its answers, any_answer or label; unreleased only when the new gold is not the
    release's, see is_unreleased)."""
    if release.examples == split.examples:
        return [RELEASE_ORIGIN] * len(split)
    by_key = {example.key: example for example in release.examples}

    def origin(example: Example) -> str:
        released = by_key.get(example.key)
        if released is None:
            return ADDED_ORIGIN
        same = (released.answers, released.any_answers, released.label) == (
            example.answers, example.any_answers, example.label)
        return RELEASE_ORIGIN if same else CHANGED_ORIGIN
    return [origin(example) for example in split.examples]


def correct_of(split: GoldSplit, outcomes: IntArray) -> BoolArray:
    """Per-example correctness from a score's outcome codes: EM on a QA track (bit 1 of the
    codes, scoring.CORRECT), TP or TN on an identification track."""
    codes = np.asarray(outcomes, dtype=np.int64)
    if split.is_identification:
        return np.asarray((codes == TP) | (codes == TN), dtype=np.bool_)
    return np.asarray((codes & 1) > 0, dtype=np.bool_)


def gap_interval(k_released: int, n_released: int, k_unreleased: int, n_unreleased: int, *,
                 seed: int, resamples: int) -> tuple[float, float] | None:
    """The 95% CI of released minus unreleased accuracy (points), resampling the two example
    sets independently: per resample, Binomial(n, k/n) right answers on each side (the
    count of right answers in n examples drawn with replacement), each side from its own
    stream (GAP_STREAMS); the percentile interval of the differences. None without CIs or
    when a side is empty. provenance_values keeps it unless a side is at 0% or 100%."""
    if resamples <= 0 or n_released == 0 or n_unreleased == 0:
        return None
    released_stream, unreleased_stream = GAP_STREAMS
    released = rng_for(seed, released_stream).binomial(
        n_released, k_released / n_released, size=resamples)
    unreleased = rng_for(seed, unreleased_stream).binomial(
        n_unreleased, k_unreleased / n_unreleased, size=resamples)
    differences = (100.0 * released / n_released) - (100.0 * unreleased / n_unreleased)
    return percentile_interval(np.asarray(differences, dtype=np.float64))


def provenance_values(split: GoldSplit, outcomes: IntArray, mask: BoolArray, *, seed: int,
                      resamples: int, given: BoolArray | None = None
                      ) -> dict[str, MetricValue]:
    """The unreleased and released figures and the contamination gap of a score's outcomes,
    their CIs by the score-interval rule (see the module); {} when no example is
    unreleased. `given`: the examples the submission was asked (a later version's fresh
    examples only when it answered their input release; None: every example)."""
    if mask.shape != (len(split),) or (given is not None and given.shape != mask.shape):
        raise ValueError("the unreleased mask must cover every example of the split")
    unreleased_part = mask if given is None else mask & given
    released_part = ~mask if given is None else ~mask & given
    if not unreleased_part.any():
        return {}
    correct = correct_of(split, outcomes).astype(np.int64)
    values = {
        name: codes_value(metric_from_codes(correct[part], 2, accuracy_from_binary, name=name,
                                            seed=seed, resamples=resamples),
                          correct[part], 2, accuracy_from_binary)
        for name, part in ((UNRELEASED, unreleased_part), (RELEASED, released_part))}
    unreleased, released = values[UNRELEASED], values[RELEASED]
    gap = (None if released.value is None or unreleased.value is None
           else released.value - unreleased.value)
    k_released = int(correct[released_part].sum())
    k_unreleased = int(correct[unreleased_part].sum())
    # The gap has no n of its own: it compares two (RELEASED's and UNRELEASED's counts),
    # which gap_counts shows; its count is 0 and results leave it out of their counts.
    values[GAP] = MetricValue(gap, None if gap is None else difference_ci(
        k_released, released.count, k_unreleased, unreleased.count,
        gap_interval(k_released, released.count, k_unreleased, unreleased.count, seed=seed,
                     resamples=resamples)), 0)
    return values


def gap_counts(counts: Mapping[str, int]) -> str:
    """The gap's n as shown: the two counts it compares, released first ("2,775 vs 20")."""
    return f"{counts.get(RELEASED, 0):,} vs {counts.get(UNRELEASED, 0):,}"
