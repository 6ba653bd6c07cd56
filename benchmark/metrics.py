"""The paper's metrics as small pure functions over outcome arrays, with bootstrap CIs.

Every metric here is a function of per-example *categories* (for EM: correct or not; for
identification: TP/FP/FN/TN). Resampling examples with replacement is then the same as a
multinomial draw of the category counts, so a 95% bootstrap CI costs one multinomial call
per metric instead of thousands of index resamples.
"""

from __future__ import annotations

import functools
import math
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .normalize import normalize_answer

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20211107  # EMNLP 2021's first day: any fixed seed makes CIs reproducible.
CONFIDENCE = 0.95

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: Maps a (draws, categories) count matrix to one metric value per draw, in percent.
CountStatistic = Callable[[IntArray], FloatArray]


def exact_match(prediction: str, normalized_gold: frozenset[str]) -> bool:
    """EM: the normalized prediction equals any (already normalized) gold answer."""
    return normalize_answer(prediction) in normalized_gold


def normalized_em(
    normalized_predictions: Sequence[str], normalized_gold: Sequence[frozenset[str]]
) -> BoolArray:
    """Per-example EM of already normalized predictions (a set lookup each)."""
    if len(normalized_predictions) != len(normalized_gold):
        raise ValueError("one prediction per gold example is needed")
    return np.fromiter(map(frozenset.__contains__, normalized_gold, normalized_predictions),
                       dtype=np.bool_, count=len(normalized_gold))


#: Per thread: (seed, name) -> a generator and its initial state. Seeding a generator
#: (SeedSequence hashing) costs more than restoring a saved state; per thread, because a
#: generator must not be shared by threads drawing at once.
_generators = threading.local()
_GENERATORS_KEPT = 4096


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by the run seed and the metric name, stable across runs.

    The same (seed, name) always starts the same stream: a cached generator is reset to
    its initial state, so use it before asking for the same stream again.
    """
    cache: dict[tuple[int, str], tuple[np.random.Generator, Mapping[str, Any]]] | None = getattr(
        _generators, "cache", None)
    if cache is None:
        cache = _generators.cache = {}
    # Any integer seed (negative or beyond 64 bits, as a CLI may pass) maps to a valid one.
    key = (seed % 2**64, name)
    entry = cache.get(key)
    if entry is None:
        if len(cache) >= _GENERATORS_KEPT:
            cache.clear()
        generator = np.random.default_rng([key[0], zlib.crc32(name.encode())])
        entry = cache[key] = (generator, generator.bit_generator.state)
    generator, state = entry
    generator.bit_generator.state = state
    return generator


#: The percentiles of the central CONFIDENCE interval (2.5 and 97.5), as np.percentile reads
#: them: divided by 100.
_TAIL_PERCENT = (1 - CONFIDENCE) / 2 * 100
_QUANTILES = (_TAIL_PERCENT / 100, (100 - _TAIL_PERCENT) / 100)


@functools.lru_cache(maxsize=64)
def _linear_positions(size: int) -> tuple[tuple[int, int, float], ...]:
    """(lower index, upper index, weight) of each of _QUANTILES in `size` sorted values.

    np.percentile's linear method, step for step: virtual index (size - 1) * q, its floor
    and the next index, the weight the remainder; at or beyond the last index, the max twice
    with the weight numpy computes there (from index -1).
    """
    positions = []
    for q in _QUANTILES:
        virtual = (size - 1) * q
        if virtual >= size - 1:
            positions.append((size - 1, size - 1, virtual + 1))
        else:
            below = math.floor(virtual)
            positions.append((below, below + 1, virtual - below))
    return tuple(positions)


def _lerp(below: float, above: float, weight: float) -> float:
    """np.percentile's interpolation (numpy's _lerp), in the same float operations."""
    difference = above - below
    if weight >= 0.5:
        return above - difference * (1 - weight)
    return below + difference * weight


def _interval_of_sorted(at: Callable[[int], float], size: int) -> tuple[float, float]:
    """The interval from the order statistics `at(index)` of `size` values."""
    (i, i_next, w_low), (j, j_next, w_high) = _linear_positions(size)
    return (_lerp(at(i), at(i_next), w_low), _lerp(at(j), at(j_next), w_high))


def _order_statistics(values: npt.NDArray[Any], size: int) -> npt.NDArray[Any]:
    """The values partially sorted so that every index the interval reads holds its rank's.

    The same partition as np.percentile's (it also places the min and max): -0.0 and 0.0
    compare equal, so another partition could put the other zero where the interval reads.
    """
    (i, i_next, _), (j, j_next, _) = _linear_positions(size)
    return np.partition(values, sorted({0, size - 1, i, i_next, j, j_next}))


def percentile_interval(values: FloatArray) -> tuple[float, float]:
    """The central CONFIDENCE interval of bootstrap values, ignoring undefined draws.

    Bit for bit np.percentile(finite, [2.5, 97.5]) (linear method; a test compares them)
    from one partial sort and four scalars: np.percentile's own overhead is most of its cost
    on 2,000 values.
    """
    finite = values if np.isfinite(values).all() else values[np.isfinite(values)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    ordered = _order_statistics(finite, finite.size)
    return _interval_of_sorted(lambda index: float(ordered[index]), finite.size)


def accuracy_interval(wrong: int, n: int, rng: np.random.Generator, resamples: int
                      ) -> tuple[float, float]:
    """percentile_interval(accuracy_from_binary(multinomial_draws(...))) of (wrong, n - wrong)
    counts, bit for bit, from one binomial draw and a partial sort of integers.

    numpy's multinomial draws a category's count as a binomial of what the categories before
    it left: with two categories, Binomial(n, wrong / n) for the first and the rest for the
    second, the very stream rng.binomial gives (a test checks it). 100 * right / n is
    non-decreasing in right, so its order statistics are those of the counts right.
    """
    right = n - rng.binomial(n, wrong / n, size=resamples)
    ordered = _order_statistics(right, resamples)
    return _interval_of_sorted(lambda index: 100.0 * int(ordered[index]) / n, resamples)


def count_interval(draws: IntArray, n: int) -> tuple[float, float]:
    """percentile_interval(100.0 * draws / n) of bootstrap counts out of n, bit for bit.

    100 * count / n is non-decreasing in the count, so its order statistics are those of the
    counts (one partial sort of integers, as accuracy_interval reads them).
    """
    ordered = _order_statistics(draws, draws.size)
    return _interval_of_sorted(lambda index: 100.0 * int(ordered[index]) / n, draws.size)


def multinomial_draws(
    counts: IntArray, rng: np.random.Generator, resamples: int
) -> IntArray:
    """Bootstrap draws of category counts: resampling n examples with replacement."""
    n = int(counts.sum())
    if n == 0:
        return np.zeros((resamples, counts.size), dtype=np.int64)
    return rng.multinomial(n, counts / n, size=resamples).astype(np.int64)


# --- statistics over category counts (vectorised over draws) -------------------------------


def accuracy_from_binary(counts: IntArray) -> FloatArray:
    """Percent of category 1 among categories (0, 1)."""
    totals = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(100.0 * counts[..., 1] / totals, dtype=np.float64)


# Identification categories, positive = context-dependent.
TP, FP, FN, TN = 0, 1, 2, 3


def confusion_codes(predicted: BoolArray, gold: BoolArray) -> IntArray:
    """Category per example: 0 TP, 1 FP, 2 FN, 3 TN."""
    return np.where(predicted, np.where(gold, TP, FP), np.where(gold, FN, TN)).astype(np.int64)


def _safe_ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    # Precision with no predicted positives is 0, as in scikit-learn's zero_division=0.
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.maximum(denominator, 1), 0.0)


def id_accuracy(counts: IntArray) -> FloatArray:
    """Accuracy in percent from confusion counts."""
    c = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(100.0 * (c[..., TP] + c[..., TN]) / c.sum(axis=-1), dtype=np.float64)


def id_precision(counts: IntArray) -> FloatArray:
    """Precision in percent from confusion counts."""
    c = counts.astype(np.float64)
    return 100.0 * _safe_ratio(c[..., TP], c[..., TP] + c[..., FP])


def id_recall(counts: IntArray) -> FloatArray:
    """Recall in percent from confusion counts."""
    c = counts.astype(np.float64)
    return 100.0 * _safe_ratio(c[..., TP], c[..., TP] + c[..., FN])


def id_f1(counts: IntArray) -> FloatArray:
    """F1 in percent from confusion counts: 2TP / (2TP + FP + FN)."""
    c = counts.astype(np.float64)
    return 100.0 * _safe_ratio(2 * c[..., TP], 2 * c[..., TP] + c[..., FP] + c[..., FN])


ID_STATISTICS: dict[str, CountStatistic] = {
    "accuracy": id_accuracy, "precision": id_precision, "recall": id_recall, "f1": id_f1,
}


@dataclass(frozen=True)
class MetricValue:
    """A metric's value in percent, its 95% CI and the number of examples behind it."""

    value: float | None
    ci: tuple[float, float] | None
    count: int


def metric_from_codes(
    codes: IntArray,
    n_categories: int,
    statistic: CountStatistic,
    *,
    name: str,
    seed: int,
    resamples: int,
) -> MetricValue:
    """Value and bootstrap CI of a statistic of per-example category codes."""
    counts = np.bincount(codes, minlength=n_categories).astype(np.int64)
    n = int(counts.sum())
    if n == 0:
        return MetricValue(None, None, 0)
    value = float(statistic(counts))
    if resamples <= 0:
        return MetricValue(value, None, n)
    if n_categories == 2 and statistic is accuracy_from_binary:  # EM: the same CI, cheaper
        return MetricValue(value, accuracy_interval(int(counts[0]), n, rng_for(seed, name),
                                                    resamples), n)
    draws = multinomial_draws(counts, rng_for(seed, name), resamples)
    return MetricValue(value, percentile_interval(statistic(draws)), n)


def roc_auc(scores: FloatArray, gold: BoolArray) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties)."""
    positives = int(gold.sum())
    negatives = gold.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    ranks = np.empty(scores.size, dtype=np.float64)
    # Average rank within each run of tied scores.
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [scores.size]))
    average = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(average, ends - starts)
    u = ranks[gold].sum() - positives * (positives + 1) / 2.0
    return float(100.0 * u / (positives * negatives))


def auc_from_counts(positives: FloatArray, negatives: FloatArray) -> FloatArray:
    """ROC AUC in percent from per-score counts (columns by increasing score), per row.

    Mann-Whitney U: each positive counts the negatives below its score and half of those at
    it. Every term is a multiple of 1/2, so the sum is exact and equals roc_auc bit for bit.
    """
    positive_total = positives.sum(axis=-1)
    negative_total = negatives.sum(axis=-1)
    below = np.cumsum(negatives, axis=-1) - negatives
    u = (positives * (below + 0.5 * negatives)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where((positive_total > 0) & (negative_total > 0),
                                   100.0 * u / (positive_total * negative_total), np.nan),
                          dtype=np.float64)


#: Resamples whose per-score counts are built at once (bounds the memory of auc_metric).
AUC_CHUNK = 256


def auc_metric(
    scores: FloatArray, gold: BoolArray, *, seed: int, resamples: int
) -> MetricValue:
    """ROC AUC in percent with an index-resampling bootstrap CI.

    Each resample's AUC comes from its counts per (distinct score, label) cell, built for
    many resamples at once with one bincount: the same draws and values as calling roc_auc
    on every resample, without a Python loop over resamples.
    """
    value = roc_auc(scores, gold)
    if resamples <= 0 or not np.isfinite(value):
        return MetricValue(value if np.isfinite(value) else None, None, int(gold.size))
    rng = rng_for(seed, "auc")
    indices = rng.integers(0, gold.size, size=(resamples, gold.size))
    levels, level_of = np.unique(scores, return_inverse=True)
    width = 2 * levels.size  # cells: (distinct score, label), negative first
    cell_of = 2 * level_of + gold
    values = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, AUC_CHUNK):
        chunk = indices[start:start + AUC_CHUNK]
        rows = chunk.shape[0]
        cells = (cell_of[chunk] + np.arange(0, rows * width, width)[:, None]).ravel()
        counts = np.bincount(cells, minlength=rows * width).reshape(rows, -1, 2)
        cell_counts = counts.astype(np.float64)
        values[start:start + rows] = auc_from_counts(cell_counts[..., 1], cell_counts[..., 0])
    return MetricValue(value, percentile_interval(values), int(gold.size))


@dataclass(frozen=True)
class PairedDifference:
    """A minus B on the same examples: difference in points, its 95% CI and a p-value."""

    difference: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    count: int


def paired_difference(
    codes_a: IntArray,
    codes_b: IntArray,
    n_categories: int,
    statistic: CountStatistic,
    *,
    name: str,
    seed: int,
    resamples: int,
    greater: bool = False,
) -> PairedDifference:
    """Paired bootstrap of statistic(A) - statistic(B) over the joint categories.

    The p-value is two-sided, from the bootstrap distribution shifted to the null of no
    difference: the share of draws whose deviation from the observed difference is at least
    as large as the observed difference itself. With greater=True it is one-sided, for
    "A is better than B": the share of shifted draws at least as large as the observed
    difference (0.5 or more when A is not ahead).
    """
    joint = codes_a * n_categories + codes_b
    counts = np.bincount(joint, minlength=n_categories * n_categories).astype(np.int64)
    n = int(counts.sum())
    if n == 0:
        return PairedDifference(None, None, None, 0)

    def difference(joint_counts: IntArray) -> FloatArray:
        shaped = joint_counts.reshape(*joint_counts.shape[:-1], n_categories, n_categories)
        return np.asarray(statistic(shaped.sum(axis=-1)) - statistic(shaped.sum(axis=-2)))

    observed = float(difference(counts))
    draws = difference(multinomial_draws(counts, rng_for(seed, f"paired:{name}"), resamples))
    deviations = draws - observed
    extreme = (deviations >= observed - 1e-12) if greater else (
        np.abs(deviations) >= abs(observed) - 1e-12)
    p_value = float((1 + int(extreme.sum())) / (resamples + 1))
    return PairedDifference(observed, percentile_interval(draws), min(p_value, 1.0), n)


def paired_differences(
    codes_a: IntArray,
    codes_b: IntArray,
    n_categories: int,
    statistics: Mapping[str, CountStatistic],
    *,
    name: str,
    seed: int,
    resamples: int,
    greater: bool = False,
) -> dict[str, PairedDifference]:
    """paired_difference of several statistics of the same category codes, from one draw.

    One multinomial over the joint categories (stream "paired:NAME") serves every statistic;
    CI and p-value of each are computed as paired_difference computes them. A statistic
    undefined on the observed counts (an error share with no error) gives no difference;
    undefined draws are left out, of the CI and of the p-value's draws alike.
    """
    joint = codes_a * n_categories + codes_b
    counts = np.bincount(joint, minlength=n_categories * n_categories).astype(np.int64)
    n = int(counts.sum())
    if n == 0:
        return {label: PairedDifference(None, None, None, 0) for label in statistics}
    shaped = counts.reshape(n_categories, n_categories)
    draws = multinomial_draws(counts, rng_for(seed, f"paired:{name}"), resamples) if (
        resamples > 0) else None
    drawn = None if draws is None else draws.reshape(resamples, n_categories, n_categories)
    result = {}
    for label, statistic in statistics.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = float(statistic(shaped.sum(axis=-1)) - statistic(shaped.sum(axis=-2)))
        if not math.isfinite(observed):
            result[label] = PairedDifference(None, None, None, n)
            continue
        if drawn is None:
            result[label] = PairedDifference(observed, None, None, n)
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.asarray(statistic(drawn.sum(axis=-1)) - statistic(drawn.sum(axis=-2)))
        values = values[np.isfinite(values)]
        if values.size == 0:
            result[label] = PairedDifference(observed, None, None, n)
            continue
        deviations = values - observed
        extreme = (deviations >= observed - 1e-12) if greater else (
            np.abs(deviations) >= abs(observed) - 1e-12)
        p_value = float((1 + int(extreme.sum())) / (values.size + 1))
        result[label] = PairedDifference(observed, percentile_interval(values),
                                         min(p_value, 1.0), n)
    return result


# --- the lenient metrics' CIs (not in the paper; see equivalence.py) -----------------------


@functools.lru_cache(maxsize=64)
def _fast_positions(size: int) -> tuple[int, int, float, int, int, float]:
    """fast_interval's (index, next index, virtual index) of the low and the high end."""
    tail = (1 - CONFIDENCE) / 2
    low_at, high_at = tail * (size - 1), (1 - tail) * (size - 1)
    i, j = int(low_at), int(high_at)
    return i, min(i + 1, size - 1), low_at, j, min(j + 1, size - 1), high_at


def _fast_of_sorted(at: Callable[[int], float], size: int) -> tuple[float, float]:
    """fast_interval from the order statistics `at(index)` of `size` values."""
    i, i_next, low_at, j, j_next, high_at = _fast_positions(size)
    low, high = at(i), at(j)
    return (low + (low_at - i) * (at(i_next) - low), high + (high_at - j) * (at(j_next) - high))


def fast_interval(values: FloatArray) -> tuple[float, float]:
    """percentile_interval's value from one partial sort (np.percentile's linear method).

    Equal to percentile_interval up to rounding in the last place (the lenient metrics'
    CIs, which have always been drawn so; the paper's keep percentile_interval).
    """
    finite = values if np.isfinite(values).all() else values[np.isfinite(values)]
    size = finite.size
    if size == 0:
        return (float("nan"), float("nan"))
    i, i_next, _, j, j_next, _ = _fast_positions(size)
    ordered = np.partition(finite, sorted({i, i_next, j, j_next}))
    return _fast_of_sorted(lambda index: float(ordered[index]), size)


def binary_metric(correct: BoolArray, *, name: str, seed: int, resamples: int) -> MetricValue:
    """Percent correct with its bootstrap CI, drawn as one binomial per resample.

    Resampling n examples with replacement draws the number right from Binomial(n, k/n):
    the same distribution as the EM metrics' two-category multinomial, from one scalar
    binomial call. Its own stream (seed, name), so adding metrics changes no other CI.
    """
    n = int(correct.size)
    if n == 0:
        return MetricValue(None, None, 0)
    return binary_metric_of_counts(int(np.count_nonzero(correct)), n, name=name, seed=seed,
                                   resamples=resamples)


def binary_metric_of_counts(k: int, n: int, *, name: str, seed: int, resamples: int
                            ) -> MetricValue:
    """binary_metric of n examples of which k are correct (no array needed).

    The CI is fast_interval(100 * draws / n), read off the sorted counts (the percentage is
    non-decreasing in the count) without the array of percentages.
    """
    if n == 0:
        return MetricValue(None, None, 0)
    value = 100.0 * k / n
    if resamples <= 0:
        return MetricValue(value, None, n)
    draws = rng_for(seed, name).binomial(n, k / n, size=resamples)
    i, i_next, _, j, j_next, _ = _fast_positions(resamples)
    draws.partition(sorted({i, i_next, j, j_next}))
    return MetricValue(value, _fast_of_sorted(
        lambda index: 100.0 * int(draws[index]) / n, resamples), n)


def mean_metric(scores: FloatArray, *, name: str, seed: int, resamples: int) -> MetricValue:
    """The mean of per-example scores in [0, 1], in percent, with a bootstrap CI.

    A resample of n examples holds Binomial(n, m/n) of the m examples scoring above 0 (exact),
    and the sum of their scores is drawn from the normal law of a sum of that many draws from
    the observed positive scores (their mean and variance: the central limit theorem; clipped
    to [0, count]). Two vectorized draws per resample instead of a multinomial over every
    distinct score value; tests compare it with a plain index bootstrap.
    """
    n = int(scores.size)
    if n == 0:
        return MetricValue(None, None, 0)
    # The mean as ndarray.mean computes it (one pairwise sum, then a division by the count),
    # without its wrapper's overhead; integer scores keep ndarray.mean (it sums them as floats).
    value = 100.0 * (float(np.add.reduce(scores)) / n if scores.dtype == np.float64
                     else float(scores.mean()))
    if resamples <= 0:
        return MetricValue(value, None, n)
    positive = scores[scores > 0]
    size = positive.size
    # The mean and standard deviation as ndarray.mean / .std compute them (one pairwise sum
    # each, then a division; the std from the squared deviations), without their overhead.
    mean = float(np.add.reduce(positive)) / size if size else 0.0
    spread = 0.0
    if size:
        deviations = positive - mean
        np.multiply(deviations, deviations, out=deviations)
        spread = math.sqrt(float(np.add.reduce(deviations)) / size)
    rng = rng_for(seed, name)
    counts = rng.binomial(n, size / n, size=resamples).astype(np.float64)
    totals = counts * mean
    if spread > 0:
        noise = rng.standard_normal(resamples)
        np.multiply(noise, np.sqrt(counts), out=noise)
        noise *= spread
        totals += noise
        # np.clip(totals, 0, counts) element for element (max, then min: no value is NaN or
        # -0.0, as counts * mean >= +0.0), without np.clip's Python wrapper.
        np.maximum(totals, 0.0, out=totals)
        np.minimum(totals, counts, out=totals)
    # The CI is fast_interval(totals * 100 / n). Every total is finite, and x * 100 / n is
    # non-decreasing in x, so the order statistics of the percentages are those of the totals,
    # scaled: a partial sort of the totals, then the same float operations on the few read.
    i, i_next, _, j, j_next, _ = _fast_positions(resamples)
    totals.partition(sorted({i, i_next, j, j_next}))
    return MetricValue(value, _fast_of_sorted(
        lambda index: float(totals[index]) * 100.0 / n, resamples), n)
