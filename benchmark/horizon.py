"""Knowledge horizon of a temporal submission: where its year-binned outcome curve drops.

Not in the paper. A model whose knowledge stops at year Y answers with the answer valid at Y:
right for every answer that took effect by Y, outdated for every answer that took effect
later. The examples that tell such a model apart are those whose answer replaced an earlier,
different one (situations.py gives each its `since` year; others carry no information), and
the informative predictions there are the right and the outdated ones: a premature, other-
context or unrelated answer says nothing about how stale the model is, so it is left out.

The outcome curve is EM of those examples binned by the year their answer took effect. The
horizon is its change point: the year t maximizing the log-likelihood gain of two Bernoulli
segments (years <= t, years > t) over one, among the observed years whose both segments hold
at least MIN_SIDE examples and where EM drops (segment 1's rate above segment 2's); the
earliest such t wins a tie. The data cannot tell t from the years up to the next observed
one, so `identified` is [t, next observed year - 1].

* CI: percentile bootstrap over the examples (a multinomial over the (year, right) cells,
  stream "horizon"), the 2.5% order statistic of the resampled t (numpy's "lower") and the
  97.5% one of the resampled next observed year - 1 ("higher"): years, never interpolated.
* Not determined (`year` None, `reason` says why) when fewer than MIN_EXAMPLES examples
  inform it, when they all took effect in one year, when EM never drops, or when the drop is
  not significant: a parametric bootstrap under one rate for all years (stream
  "horizon:null") gives its p-value, (1 + #null gains >= the observed) / (resamples + 1),
  and p > ALPHA is not determined. With resamples=0 there is neither CI nor test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from .error_classes import ErrorTables, check_codes
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, FloatArray, IntArray, rng_for
from .situations import CORRECT_CLASS, OUTDATED
from .tracks import track_info

MIN_EXAMPLES: Final = 20
MIN_SIDE: Final = 5
ALPHA: Final = 0.05
_TAIL: Final = 0.025


@dataclass(frozen=True)
class Horizon:
    """A knowledge-horizon estimate: the year, its CI, or why it is not determined.

    `bins` is the outcome curve: (year the answer took effect, examples, right) per observed
    year; `n` the examples behind it; `p_value` that of the drop (None without resamples).
    """

    year: int | None
    ci: tuple[int, int] | None
    identified: tuple[int, int] | None
    p_value: float | None
    n: int
    reason: str | None
    bins: tuple[tuple[int, int, int], ...]

    @property
    def determined(self) -> bool:
        """True when the data place the horizon."""
        return self.year is not None

    def to_json(self) -> dict[str, Any]:
        """The estimate as JSON (years as integers; the curve as [year, n, right] rows)."""
        return {
            "year": self.year, "ci": list(self.ci) if self.ci else None,
            "identified": list(self.identified) if self.identified else None,
            "determined": self.determined, "reason": self.reason, "p_value": self.p_value,
            "n": self.n, "bins": [list(row) for row in self.bins],
        }


def best_split(examples: IntArray, right: IntArray, min_side: int = MIN_SIDE
               ) -> tuple[IntArray, FloatArray]:
    """The change point of outcome curves (rows of per-year counts, years in order).

    For every row: the index j of the last year of segment 1 maximizing the log-likelihood
    gain of two Bernoulli segments over one, among splits with at least min_side examples
    each side and a drop in the rate; the earliest j of equal gains; -1 (gain 0) when none.
    """
    if examples.shape[-1] < 2:
        shape = examples.shape[:-1]
        return np.full(shape, -1, dtype=np.int64), np.zeros(shape, dtype=np.float64)
    n_total = examples.sum(axis=-1, keepdims=True)
    c_total = right.sum(axis=-1, keepdims=True)
    n_first = np.cumsum(examples, axis=-1)[..., :-1]
    c_first = np.cumsum(right, axis=-1)[..., :-1]
    n_second, c_second = n_total - n_first, c_total - c_first
    # x log x (0 log 0 = 0) of counts up to the largest total, read from one table.
    counts = np.arange(int(n_total.max()) + 1, dtype=np.float64)
    xlogx = counts * np.log(np.maximum(counts, 1.0))
    loglik = (xlogx[c_first] + xlogx[n_first - c_first] - xlogx[n_first]
              + xlogx[c_second] + xlogx[n_second - c_second] - xlogx[n_second])
    base = xlogx[c_total] + xlogx[n_total - c_total] - xlogx[n_total]
    # A drop: c1 / n1 > c2 / n2, compared in integers.
    valid = (n_first >= min_side) & (n_second >= min_side) & (
        c_first * n_second > c_second * n_first)
    gains = np.where(valid, loglik, -np.inf)
    index = np.argmax(gains, axis=-1)
    best = np.take_along_axis(gains, index[..., None], axis=-1)[..., 0]
    found = np.isfinite(best)
    return (np.where(found, index, -1).astype(np.int64),
            np.where(found, best - base[..., 0], 0.0).astype(np.float64))


def curve(tables: ErrorTables, codes: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """(years, examples, right) of the outcome curve: per year an answer took effect, the
    examples whose answer replaced an earlier one that were answered right or outdated."""
    used = (tables.since >= 0) & ((codes == CORRECT_CLASS) | (codes == OUTDATED))
    years, at = np.unique(tables.since[used], return_inverse=True)
    examples = np.bincount(at, minlength=years.size).astype(np.int64)
    right = np.bincount(at, weights=(codes[used] == CORRECT_CLASS),
                        minlength=years.size).astype(np.int64)
    return years.astype(np.int64), examples, right


def by_context_year(tables: ErrorTables, codes: IntArray
                    ) -> tuple[tuple[int, int, int, int], ...]:
    """(context year, examples, right, outdated) per year of the contexts (dated tracks):
    the picture the paper draws, EM and the outdated answers by when the question is asked.
    Contexts whose date cannot be read are left out."""
    codes = check_codes(track_info(tables.track), codes, len(tables))
    dated = tables.years >= 0
    years, at = np.unique(tables.years[dated], return_inverse=True)
    part = codes[dated]
    counts = [np.bincount(at, weights=weights, minlength=years.size).astype(np.int64)
              for weights in (None, part == CORRECT_CLASS, part == OUTDATED)]
    return tuple((int(year), int(n), int(right), int(stale))
                 for year, n, right, stale in zip(years, *counts, strict=True))


def knowledge_horizon(tables: ErrorTables, codes: IntArray, *, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES) -> Horizon:
    """The knowledge horizon of a submission from its class codes (error_classes.classify).

    ValueError for a track whose contexts are not dated (TrackInfo.errors.horizon).
    """
    info = track_info(tables.track)
    if info.errors is None or not info.errors.horizon:
        raise ValueError(f"track {tables.track!r} has no dated contexts: no horizon")
    codes = check_codes(info, codes, len(tables))
    years, examples, right = curve(tables, codes)
    n = int(examples.sum())
    bins = tuple((int(y), int(k), int(c)) for y, k, c in zip(years, examples, right,
                                                              strict=True))

    def undetermined(reason: str, p_value: float | None = None) -> Horizon:
        return Horizon(None, None, None, p_value, n, reason, bins)

    if n < MIN_EXAMPLES:
        return undetermined(f"fewer than {MIN_EXAMPLES} examples whose answer replaced an "
                            f"earlier one were answered right or outdated ({n})")
    if years.size < 2:
        return undetermined("every such answer took effect in the same year")
    index, gain = best_split(examples, right)
    j = int(index)
    if j < 0:
        return undetermined(f"EM by year never drops (with at least {MIN_SIDE} examples "
                            "each side)")
    year, identified = int(years[j]), (int(years[j]), int(years[j + 1]) - 1)
    if resamples <= 0:
        return Horizon(year, None, identified, None, n, None, bins)
    null_right = rng_for(seed, "horizon:null").binomial(
        examples, int(right.sum()) / n, size=(resamples, years.size))
    _, null_gain = best_split(np.broadcast_to(examples, null_right.shape), null_right)
    p_value = float((1 + int((null_gain >= float(gain) - 1e-12).sum())) / (resamples + 1))
    if p_value > ALPHA:
        return undetermined(f"the drop is not significant (p = {p_value:.3f} > {ALPHA})",
                            p_value)
    cells = np.stack([examples - right, right], axis=-1).ravel()
    nonzero = np.flatnonzero(cells)
    drawn = np.zeros((resamples, cells.size), dtype=np.int64)
    drawn[:, nonzero] = rng_for(seed, "horizon").multinomial(
        n, cells[nonzero] / n, size=resamples)
    drawn_cells = drawn.reshape(resamples, years.size, 2)
    draw_index, _ = best_split(drawn_cells.sum(axis=-1), drawn_cells[..., 1])
    placed = draw_index[draw_index >= 0]
    ci = None
    if placed.size:
        ci = (int(np.quantile(years[placed], _TAIL, method="lower")),
              int(np.quantile(years[placed + 1] - 1, 1 - _TAIL, method="higher")))
    return Horizon(year, ci, identified, p_value, n, None, bins)
