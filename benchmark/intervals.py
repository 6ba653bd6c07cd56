"""Score intervals for the shares a percentile bootstrap cannot vary: 0% or 100%.

A share is a figure that counts examples: k of its n examples are right (EM and em_equiv on
every partition, identification accuracy, the unreleased and released figures), in a class
(an error-class rate or share), or, for precision and recall, right among the predicted or
the gold positives. Resampling its n examples draws Binomial(n, k/n) of them; at k = 0 or
k = n every draw is k, so the percentile bootstrap's interval is a point ("0.00 [0.00, 0.00]"
on 3 examples): a certainty the data cannot give.

The rule, in one sentence (the metric card says it): a share at 0% or 100% gets the 95%
Wilson score interval, and the contamination gap, whenever one of its two sides is at 0% or
100%, Newcombe's hybrid score interval; every other figure keeps its percentile bootstrap.

The bootstrap is kept everywhere else, so the rule leaves every interval it gives bit for
bit as it is (a board's published CIs, the reference submissions' pinned ones). Its known
weakness near the ends (1 of 20 right: bootstrap [0, 15], Wilson [0.89, 23.61]) is the
metric card's Limitations, not a rule here.

* Wilson (1927): the proportions p whose score test |k/n - p| <= z sqrt(p(1-p)/n) accepts,
  z the normal quantile of the CONFIDENCE (1.96); closed form, inside [0, 1], never a point
  for n >= 1, with 0 as its lower end at k = 0 and 1 as its upper end at k = n.
* Newcombe (1998), method 10, for p1 - p2 of two independent shares, from their Wilson
  intervals (l1, u1), (l2, u2): [d - sqrt((p1 - l1)^2 + (u2 - p2)^2),
  d + sqrt((u1 - p1)^2 + (p2 - l2)^2)], d = p1 - p2, inside [-1, 1].

Everything here is closed-form (the standard library's normal quantile, no draw): the same
counts give the same interval on every machine, with or without a seed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist
from typing import Final

import numpy as np

from .metrics import (
    CONFIDENCE,
    FN,
    FP,
    TN,
    TP,
    CountStatistic,
    FloatArray,
    IntArray,
    MetricValue,
    accuracy_from_binary,
    id_accuracy,
    id_precision,
    id_recall,
)

__all__ = ["BOOTSTRAP", "NEWCOMBE", "SHARES", "WILSON", "Z", "codes_value", "difference_ci",
           "interval_method", "mean_ci", "newcombe_interval", "score_interval_applies",
           "share_ci", "share_value", "wilson_interval"]

#: The two-sided normal quantile of CONFIDENCE: 1.959963984540054 for 95%.
Z: Final = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)

#: The intervals by name, as exports label them.
BOOTSTRAP: Final = "percentile bootstrap over the examples"
WILSON: Final = "Wilson score interval"
NEWCOMBE: Final = "Newcombe's hybrid score interval (method 10)"


def _check(k: int, n: int) -> None:
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"a share needs 0 <= k <= n and n > 0, not {k} of {n}")


def wilson_interval(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of k successes in n, as proportions in [0, 1]."""
    _check(k, n)
    z2 = Z * Z
    center = k + z2 / 2
    half = Z * math.sqrt(k * (n - k) / n + z2 / 4)
    # At k = 0 (k = n) the lower (upper) end is exactly 0 (1); the float operations would
    # leave a rounding error there, which must not put the end beyond the share itself.
    low = 0.0 if k == 0 else max(0.0, (center - half) / (n + z2))
    high = 1.0 if k == n else min(1.0, (center + half) / (n + z2))
    return low, high


def newcombe_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """Newcombe's hybrid score interval (1998, method 10) of k1/n1 - k2/n2, two independent
    shares, as a difference of proportions in [-1, 1]."""
    (l1, u1), (l2, u2) = wilson_interval(k1, n1), wilson_interval(k2, n2)
    p1, p2 = k1 / n1, k2 / n2
    difference = p1 - p2
    # Mathematically inside [-1, 1] ((p1 - l1) + (u2 - p2) <= 1 + d); clipped for rounding.
    return (max(-1.0, difference - math.hypot(p1 - l1, u2 - p2)),
            min(1.0, difference + math.hypot(u1 - p1, p2 - l2)))


def score_interval_applies(k: int, n: int) -> bool:
    """The rule: a share of k in n takes the score interval when it is 0% or 100%."""
    return n > 0 and k in (0, n)


def share_ci(k: int, n: int, bootstrap: tuple[float, float] | None
             ) -> tuple[float, float] | None:
    """A share's 95% CI in percent: the Wilson interval at 0% or 100% (score_interval_applies),
    else its bootstrap CI as given. None stays None (no CIs asked for, resamples=0)."""
    if bootstrap is None or not score_interval_applies(k, n):
        return bootstrap
    low, high = wilson_interval(k, n)
    return 100.0 * low, 100.0 * high


def share_value(value: MetricValue, k: int, n: int | None = None) -> MetricValue:
    """A share's MetricValue with its CI by the rule (share_ci); n defaults to its count
    (a precision's or an error share's n is its own denominator, not the shown count)."""
    ci = share_ci(k, value.count if n is None else n, value.ci)
    return value if ci is value.ci else replace(value, ci=ci)


#: The statistics of category codes that are shares: the categories they count, and those of
#: the examples they are a share of (None: every example). Identification F1 is none.
SHARES: Final[dict[CountStatistic, tuple[tuple[int, ...], tuple[int, ...] | None]]] = {
    accuracy_from_binary: ((1,), None),
    id_accuracy: ((TP, TN), None),
    id_precision: ((TP,), (TP, FP)),
    id_recall: ((TP,), (TP, FN)),
}


def codes_value(value: MetricValue, codes: IntArray, n_categories: int,
                statistic: CountStatistic) -> MetricValue:
    """metrics.metric_from_codes's value with its CI by the rule, when the statistic is a
    share (SHARES); any other statistic's value as it is. A precision (recall) with no
    predicted (gold) positive is a share of no example: its bootstrap CI stays."""
    counted = SHARES.get(statistic)
    # A share is 0% or 100% exactly when its value is (100 * k / n is exact at k = 0 and
    # k = n, and below 100 otherwise for any n under 10^16): the counts only then.
    if counted is None or value.ci is None or value.value not in (0.0, 100.0):
        return value
    counts = np.bincount(codes, minlength=n_categories)
    of, among = counted
    k = int(counts[list(of)].sum())
    n = int(counts.sum() if among is None else counts[list(among)].sum())
    return share_value(value, k, n) if n else value


def difference_ci(k1: int, n1: int, k2: int, n2: int, bootstrap: tuple[float, float] | None
                  ) -> tuple[float, float] | None:
    """The 95% CI in points of k1/n1 - k2/n2, two independent shares: Newcombe's interval
    when either share is at 0% or 100%, else the bootstrap CI as given (None stays None)."""
    if bootstrap is None or not (score_interval_applies(k1, n1)
                                 or score_interval_applies(k2, n2)):
        return bootstrap
    low, high = newcombe_interval(k1, n1, k2, n2)
    return 100.0 * low, 100.0 * high


def mean_ci(scores: FloatArray, bootstrap: tuple[float, float] | None
            ) -> tuple[float, float] | None:
    """The CI of a mean of per-example scores in [0, 1] (token F1): when every score is 0,
    or every one is 1, the scores are 0/1 and the mean is a share at 0% or 100% (Wilson);
    else the bootstrap CI as given."""
    n = int(scores.size)
    if bootstrap is None or n == 0:
        return bootstrap
    ones = int(np.count_nonzero(scores >= 1.0))
    if ones == n:
        return share_ci(n, n, bootstrap)
    if not np.any(scores > 0.0):
        return share_ci(0, n, bootstrap)
    return bootstrap


def interval_method(value: float | None, ci: tuple[float, float] | None) -> str:
    """The name of the interval one of the paper's stored metrics carries (WILSON or
    BOOTSTRAP), from the figure alone: at 0% or 100% a bootstrap interval is a point, so a
    wider one there is the Wilson interval (scores stored before the rule keep the
    bootstrap's name, and their point). Not for the gap, whose score interval is NEWCOMBE."""
    if value in (0.0, 100.0) and ci is not None and ci[0] != ci[1]:
        return WILSON
    return BOOTSTRAP
