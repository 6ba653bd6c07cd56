"""Situated error classes of QA predictions: per-example codes, rates with CIs, comparisons.

Not in the paper. Each wrong prediction of a QA track gets one class (situations.py has the
definitions and tie rules; the track's ErrorRule in tracks.py says which classes it has and
how its gold gives them). The work is split as the server needs it:

* once per gold split, `build_error_tables` (or `error_tables` from a gold set) turns the
  gold into lookup tables: every example's other answers, normalized, with their class;
* per upload, `classify` gives one class code per example (ERROR_CLASSES' positions, one
  byte each, stored beside the outcome codes): a table lookup of the normalized prediction
  where EM failed, for the examples that have other answers at all;
* `error_metrics` turns the codes into figures with 95% CIs, `{class}_rate{suffix}` (share
  of all examples of the partition) and `{class}_share{suffix}` (share of the wrong ones),
  on the bootstrap of the paper's EM: each resample's number wrong is EM's own draw (its
  stream, seed and resample count), split among the classes by conditional binomial draws
  from a stream of its own, which is a multinomial resample of the examples' classes; a
  figure at 0% or 100%, which no resample can move, takes the Wilson interval instead
  (intervals.py);
* `compare_errors` is the paired comparison of two submissions' figures;
* `reclassify` re-evaluates chosen examples (an incremental rescore: see incremental.py).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Final

import numpy as np

from .gold import GoldError, GoldSet, GoldSplit
from .intervals import share_ci
from .metrics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    BoolArray,
    CountStatistic,
    FloatArray,
    IntArray,
    MetricValue,
    PairedDifference,
    count_interval,
    paired_differences,
    percentile_interval,
    rng_for,
)
from .situations import CORRECT_CLASS, ERROR_CLASSES, SUBCLASSES, UNRELATED, Situated
from .tracks import ERROR_FIGURES, ErrorRule, TrackInfo, track_info

__all__ = [
    "CORRECT_CLASS", "ERROR_CLASSES", "UNRELATED", "ErrorTables", "build_error_tables",
    "class_members", "classify", "compare_errors", "error_metrics", "error_tables",
    "check_codes", "possible_counts", "reclassify",
]

_N_CODES: Final = len(ERROR_CLASSES)


@dataclass(frozen=True, eq=False)
class ErrorTables:
    """A QA split's other answers by class, laid out for lookups (build_error_tables).

    `situated[i]` is example i's map from normalized other answer to class code (and its
    `since` and context `year`, temp); `since` and `years` the same years as arrays (-1:
    none). For the lookup every
    distinct other answer has a number in `vocabulary`, and `keys` holds the sorted
    `position * width + number` of every (example, other answer) pair, `codes` their classes.
    `candidates` are the examples with at least one other answer, in gold order.
    """

    track: str
    split: str
    situated: tuple[Situated, ...]
    since: IntArray
    years: IntArray
    vocabulary: Mapping[str, int]
    width: int
    keys: IntArray
    codes: IntArray
    candidates: IntArray
    _pick: Callable[[Sequence[str]], Sequence[str]]

    def __len__(self) -> int:
        return len(self.situated)

    def entries(self, position: int) -> tuple[tuple[str, int], ...]:
        """Example `position`'s other answers and classes, sorted (to compare two tables)."""
        return tuple(sorted(self.situated[position].others.items()))


def _rule(info: TrackInfo) -> ErrorRule:
    if info.errors is None:
        raise ValueError(f"track {info.name!r} has no error classes")
    return info.errors


def class_members(name: str) -> tuple[int, ...]:
    """The codes a reported class counts: its own and its sub-classes' (wrong_place: both)."""
    return tuple(ERROR_CLASSES.index(member) for member in (name, *SUBCLASSES.get(name, ())))


_tables: weakref.WeakKeyDictionary[GoldSplit, tuple[GoldSplit | None, ErrorTables]] = (
    weakref.WeakKeyDictionary())
_tables_lock = threading.Lock()


def build_error_tables(gold: GoldSplit, companion: GoldSplit | None = None) -> ErrorTables:
    """The error tables of a QA split, built once per (split, companion) and cached.

    `companion` is the split of the same name of the track the rule names (temp: curprev);
    ValueError when the rule needs one and another (or none) is given, or the track has no
    error classes.
    """
    rule = _rule(track_info(gold.track))
    if rule.companion is not None and (
            companion is None or (companion.track, companion.split) != (rule.companion,
                                                                          gold.split)):
        raise ValueError(f"the error classes of {gold.track}/{gold.split} need the "
                         f"{rule.companion}/{gold.split} split")
    if rule.companion is None:
        companion = None
    found = _tables.get(gold)
    if found is not None and found[0] is companion:
        return found[1]
    situated = tuple(rule.other_answers(gold.examples,
                                        companion.examples if companion else ()))
    vocabulary: dict[str, int] = {}
    for entry in situated:
        for answer in entry.others:
            vocabulary.setdefault(answer, len(vocabulary))
    width = max(len(vocabulary), 1)
    pairs = sorted((position * width + vocabulary[answer], code)
                   for position, entry in enumerate(situated)
                   for answer, code in entry.others.items())
    candidates = [position for position, entry in enumerate(situated) if entry.others]
    pick: Callable[[Sequence[str]], Sequence[str]]
    if len(candidates) > 1:
        getter = operator.itemgetter(*candidates)
        pick = getter
    elif candidates:
        only = candidates[0]

        def pick(texts: Sequence[str]) -> Sequence[str]:
            return (texts[only],)
    else:
        def pick(texts: Sequence[str]) -> Sequence[str]:
            return ()
    tables = ErrorTables(
        track=gold.track, split=gold.split, situated=situated,
        since=np.array([-1 if e.since is None else e.since for e in situated], dtype=np.int64),
        years=np.array([-1 if e.year is None else e.year for e in situated], dtype=np.int64),
        vocabulary=vocabulary, width=width,
        keys=np.array([key for key, _ in pairs], dtype=np.int64),
        codes=np.array([code for _, code in pairs], dtype=np.int64),
        candidates=np.array(candidates, dtype=np.int64), _pick=pick)
    with _tables_lock:
        _tables[gold] = (companion, tables)
    return tables


def error_tables(gold_set: GoldSet, track: str, split: str) -> ErrorTables:
    """build_error_tables of one split of a gold set, with the companion split it needs."""
    gold = gold_set.get(track, split)
    rule = _rule(track_info(track))
    try:
        companion = gold_set.get(rule.companion, split) if rule.companion else None
    except GoldError as exc:
        raise GoldError(f"the error classes of {track}/{split} need it: {exc}") from None
    return build_error_tables(gold, companion)


def _lookup(tables: ErrorTables, positions: IntArray, texts: Sequence[str]) -> IntArray:
    """The class of each (position, normalized text): its table's, else UNRELATED."""
    get = tables.vocabulary.get
    numbers = np.fromiter(map(get, texts, repeat(-1)), dtype=np.int64, count=len(texts))
    wanted = np.where(numbers >= 0, positions * tables.width + numbers, -1)
    found = np.full(len(texts), UNRELATED, dtype=np.int64)
    if tables.keys.size == 0:
        return found
    at = np.minimum(np.searchsorted(tables.keys, wanted), tables.keys.size - 1)
    hit = tables.keys[at] == wanted
    found[hit] = tables.codes[at[hit]]
    return found


def classify(tables: ErrorTables, normalized: Sequence[str], correct: BoolArray) -> IntArray:
    """One class code per example (ERROR_CLASSES' positions): CORRECT_CLASS where EM holds,
    else the class of the normalized prediction among the example's other answers, else
    UNRELATED. `normalized`: the normalized predictions in gold order (Predictions'
    normalized_answers); `correct`: EM per example (outcome bit CORRECT)."""
    if len(normalized) != len(tables) or correct.shape != (len(tables),):
        raise ValueError("one normalized prediction and one EM value per example are needed")
    codes = np.full(len(tables), UNRELATED, dtype=np.int64)
    if tables.candidates.size:
        codes[tables.candidates] = _lookup(tables, tables.candidates,
                                           tables._pick(normalized))
    codes[correct] = CORRECT_CLASS
    return codes


def reclassify(tables: ErrorTables, positions: IntArray, normalized: Sequence[str],
               correct: BoolArray) -> IntArray:
    """classify for the examples at `positions` only (their predictions and EM, in order)."""
    if len(normalized) != positions.size or correct.shape != positions.shape:
        raise ValueError("one normalized prediction and one EM value per position are needed")
    codes = _lookup(tables, positions, normalized)
    codes[correct] = CORRECT_CLASS
    return codes


def check_codes(info: TrackInfo, codes: IntArray, n: int) -> IntArray:
    """The codes as int64, if they are n codes of the track's classes; else ValueError."""
    codes = np.asarray(codes, dtype=np.int64)
    allowed = {CORRECT_CLASS, *(c for name in _rule(info).classes for c in class_members(name))}
    if codes.shape != (n,):
        raise ValueError(f"{codes.size} class codes for {n} examples")
    if codes.size and (int(codes.min()) < 0 or not set(
            np.flatnonzero(np.bincount(codes, minlength=_N_CODES)).tolist()) <= allowed):
        raise ValueError(f"class codes outside track {info.name!r}'s classes")
    return codes


def _partition(gold: GoldSplit, values: IntArray, suffix: str) -> IntArray:
    """The values of one error partition ("" for all examples, "_static", ...)."""
    if suffix == "":
        return values
    mask = gold.partition_masks.get(suffix[1:])
    return values[mask] if mask is not None else values[:0]


def _class_draws(counts: IntArray, exclusive: Sequence[int], n: int, suffix: str, *,
                 seed: int, resamples: int) -> tuple[IntArray, dict[int, IntArray]]:
    """Bootstrap draws of the number wrong and of each exclusive class among them.

    The number wrong is drawn exactly as EM's CI draws it (metrics.accuracy_interval on the
    stream of metric "em" + suffix: the same resamples); it is then split among the classes
    by conditional binomials (numpy's multinomial, class by class) from stream
    "error_classes" + suffix.
    """
    wrong = n - int(counts[CORRECT_CLASS])
    total = rng_for(seed, "em" + suffix).binomial(n, wrong / n, size=resamples)
    rng = rng_for(seed, "error_classes" + suffix)
    remaining, rest = total, wrong
    draws: dict[int, IntArray] = {}
    for code in exclusive:
        k = int(counts[code])
        if k == 0:
            draws[code] = np.zeros(resamples, dtype=np.int64)
        elif k == rest:
            draws[code], remaining = remaining, np.zeros(resamples, dtype=np.int64)
        else:
            drawn = rng.binomial(remaining, k / rest)
            draws[code] = drawn
            remaining = remaining - drawn
        rest -= k
    return total, draws


def error_metrics(gold: GoldSplit, codes: IntArray, *, seed: int = DEFAULT_SEED,
                  resamples: int = DEFAULT_RESAMPLES) -> dict[str, MetricValue]:
    """Every error figure of the track (TrackInfo.error_metrics) from the class codes.

    `{class}_rate{suffix}`: percent of the partition's examples in the class (count: the
    partition's size); `{class}_share{suffix}`: percent of its wrong examples (count: the
    number wrong; None when none is wrong). resamples=0 skips the CIs. A rate or share at 0%
    or 100% takes the Wilson interval of its count (intervals.share_ci), a share that of its
    k of the number wrong.
    """
    info = track_info(gold.track)
    rule = _rule(info)
    codes = check_codes(info, codes, len(gold))
    exclusive = [ERROR_CLASSES.index(name) for name in rule.classes]
    values: dict[str, MetricValue] = {}
    for suffix in info.error_partitions:
        part = _partition(gold, codes, suffix)
        n = int(part.size)
        counts = np.bincount(part, minlength=_N_CODES).astype(np.int64)
        wrong = n - int(counts[CORRECT_CLASS])
        drawn = (_class_draws(counts, exclusive, n, suffix, seed=seed, resamples=resamples)
                 if n and resamples > 0 else None)
        for name in rule.classes:
            members = class_members(name)
            k = sum(int(counts[code]) for code in members)
            rate_ci: tuple[float, float] | None = None
            wrong_ci: tuple[float, float] | None = None
            if drawn is not None:
                total, draws = drawn
                hits = draws[members[0]] if len(members) == 1 else np.sum(
                    [draws[code] for code in members], axis=0)
                rate_ci = count_interval(hits, n)
                if wrong:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        shares: FloatArray = 100.0 * hits / total
                    wrong_ci = percentile_interval(shares)
            values[f"{name}_rate{suffix}"] = (
                MetricValue(100.0 * k / n, share_ci(k, n, rate_ci), n) if n
                else MetricValue(None, None, 0))
            values[f"{name}_share{suffix}"] = (
                MetricValue(100.0 * k / wrong, share_ci(k, wrong, wrong_ci), wrong) if wrong
                else MetricValue(None, None, 0))
    return {name: values[name] for name in info.error_metrics}


def _figure_statistic(members: tuple[int, ...], kind: str) -> CountStatistic:
    """A figure as a function of class counts (draws, codes): for the paired comparison."""
    chosen = list(members)

    def statistic(counts: IntArray) -> FloatArray:
        hits = counts[..., chosen].sum(axis=-1)
        base = counts.sum(axis=-1) - (counts[..., CORRECT_CLASS] if kind == "share" else 0)
        return np.asarray(100.0 * hits / base, dtype=np.float64)

    return statistic


def compare_errors(gold: GoldSplit, codes_a: IntArray, codes_b: IntArray, *,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   greater: bool = False) -> dict[str, PairedDifference]:
    """Paired difference A - B of every error figure on the same examples, CI and p-value.

    As scoring.compare does for the paper's metrics: a paired bootstrap (one multinomial
    over the joint classes of A and B per partition, stream "paired:error_classes" +
    suffix) and the shifted-null p-value, two-sided (greater=True: one-sided, "A's figure is
    higher"). A share is undefined, and its difference None, when A or B has no error.
    """
    info = track_info(gold.track)
    rule = _rule(info)
    codes_a = check_codes(info, codes_a, len(gold))
    codes_b = check_codes(info, codes_b, len(gold))
    result: dict[str, PairedDifference] = {}
    for suffix in info.error_partitions:
        statistics = {f"{name}_{kind}{suffix}": _figure_statistic(class_members(name), kind)
                      for kind in ERROR_FIGURES for name in rule.classes}
        result.update(paired_differences(
            _partition(gold, codes_a, suffix), _partition(gold, codes_b, suffix), _N_CODES,
            statistics, name="error_classes" + suffix, seed=seed, resamples=resamples,
            greater=greater))
    return {name: result[name] for name in info.error_metrics}


def possible_counts(gold: GoldSplit, tables: ErrorTables) -> dict[str, dict[str, int]]:
    """Per partition ("all", "static", ...): its examples, those with any other answer, and
    per class (unrelated aside: always possible) those where the class is possible at all,
    i.e. that have an other answer of it; for a dated track, the horizon's examples (`since`).
    """
    info = track_info(gold.track)
    rule = _rule(info)
    if (tables.track, tables.split, len(tables)) != (gold.track, gold.split, len(gold)):
        raise ValueError(f"tables of {tables.track}/{tables.split} for {gold.track}/"
                         f"{gold.split}")
    holds = {name: np.array([any(code in class_members(name) for code in entry.others.values())
                             for entry in tables.situated], dtype=np.bool_)
             for name in rule.classes if name != "unrelated"}
    any_other = np.array([bool(entry.others) for entry in tables.situated], dtype=np.bool_)
    result = {}
    for suffix in info.error_partitions:
        positions = _partition(gold, np.arange(len(gold), dtype=np.int64), suffix)
        row = {"examples": int(positions.size),
               "with_other_answers": int(any_other[positions].sum()),
               **{name: int(mask[positions].sum()) for name, mask in holds.items()}}
        if rule.horizon:
            row["horizon"] = int((tables.since[positions] >= 0).sum())
        result[suffix[1:] or "all"] = row
    return result
