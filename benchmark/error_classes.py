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

A track's mark (tracks.Mark; geo: the US answer) is counted beside the classes: with
`classify_marked` (`reclassify_marked`) each example also gets a mark state, MARK_OUTSIDE
(not among the mark's examples), MARK_COUNTED or MARK_HIT (counted, and its wrong prediction
is a marked answer), from the same lookup. `error_metrics(..., marks=...)` adds
`{mark}_rate{suffix}` (percent of the partition's counted examples that are hits; count:
those examples) and `{mark}_share{suffix}` (percent of their wrong ones), on the same
resamples: each class's draw (and the right ones') is split among the states by conditional
binomials from the stream `{mark}{suffix}`. Stored, the state sits above the class in one
byte (`pack_codes`, `unpack_codes`); a byte without one (a row stored before the mark) has
no mark figures and cannot seed an incremental rescore.
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
from .situations import (
    CORRECT_CLASS,
    ERROR_CLASSES,
    OTHER_CONTEXT,
    SUBCLASSES,
    UNRELATED,
    Situated,
)
from .tracks import ERROR_FIGURES, ErrorRule, TrackInfo, track_info

__all__ = [
    "CORRECT_CLASS", "ERROR_CLASSES", "MARK_COUNTED", "MARK_HIT", "MARK_OUTSIDE", "UNRELATED",
    "ErrorTables", "build_error_tables", "check_codes", "check_marks", "class_members",
    "classify", "classify_marked", "compare_errors", "earlier_counts", "error_metrics",
    "error_tables", "pack_codes", "possible_counts", "reclassify", "reclassify_marked",
    "restrict_tables",
    "unpack_codes",
]

_N_CODES: Final = len(ERROR_CLASSES)
#: An example's mark state (0 is never one: a stored byte without a state predates marks).
MARK_OUTSIDE, MARK_COUNTED, MARK_HIT = 1, 2, 3
#: The class takes the low three bits of a stored byte, the mark state the next two; in the
#: tables' lookup codes one bit says that the other answer is marked.
_CLASS_BITS: Final = 7
_STATE_SHIFT: Final = 3
_MARKED: Final = 8


@dataclass(frozen=True, eq=False)
class ErrorTables:
    """A QA split's other answers by class, laid out for lookups (build_error_tables).

    `situated[i]` is example i's map from normalized other answer to class code (and its
    `since` and context `year`, temp); `since` and `years` the same years as arrays (-1:
    none). For the lookup every
    distinct other answer has a number in `vocabulary`, and `keys` holds the sorted
    `position * width + number` of every (example, other answer) pair, `codes` their classes.
    `candidates` are the examples with at least one other answer, in gold order. With a
    mark, `marked[i]` is example i's marked answers (None: outside the mark), `mark_states`
    its state before any prediction (MARK_OUTSIDE or MARK_COUNTED), and a `codes` entry has
    bit _MARKED for a marked answer; without one, () and None.
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
    marked: tuple[frozenset[str] | None, ...] = ()
    mark_states: IntArray | None = None

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
    marked = tuple(rule.mark.answers(gold.examples)) if rule.mark else ()
    for position, answers in enumerate(marked):
        if answers and not answers <= situated[position].others.keys():
            # A mark refines the classes' lookup; an answer outside it would never be found.
            raise ValueError(f"the {rule.mark and rule.mark.name} mark of {gold.track}/"
                             f"{gold.split} example {gold.examples[position].key!r} names "
                             "answers that are not its other answers")
    vocabulary: dict[str, int] = {}
    for entry in situated:
        for answer in entry.others:
            vocabulary.setdefault(answer, len(vocabulary))
    width = max(len(vocabulary), 1)

    def looked_up(position: int, answer: str, code: int) -> int:
        hit = bool(marked) and answer in (marked[position] or ())
        return code | _MARKED if hit else code

    pairs = sorted((position * width + vocabulary[answer], looked_up(position, answer, code))
                   for position, entry in enumerate(situated)
                   for answer, code in entry.others.items())
    candidates = [position for position, entry in enumerate(situated) if entry.others]
    tables = ErrorTables(
        track=gold.track, split=gold.split, situated=situated,
        since=np.array([-1 if e.since is None else e.since for e in situated], dtype=np.int64),
        years=np.array([-1 if e.year is None else e.year for e in situated], dtype=np.int64),
        vocabulary=vocabulary, width=width,
        keys=np.array([key for key, _ in pairs], dtype=np.int64),
        codes=np.array([code for _, code in pairs], dtype=np.int64),
        candidates=np.array(candidates, dtype=np.int64), _pick=_picker(candidates),
        marked=marked,
        mark_states=np.array([MARK_OUTSIDE if answers is None else MARK_COUNTED
                              for answers in marked], dtype=np.int64) if rule.mark else None)
    with _tables_lock:
        _tables[gold] = (companion, tables)
    return tables


def _picker(candidates: Sequence[int]) -> Callable[[Sequence[str]], Sequence[str]]:
    """The function that picks the candidates' predictions out of all, in order."""
    if len(candidates) > 1:
        return operator.itemgetter(*candidates)
    if candidates:
        only = candidates[0]
        return lambda texts: (texts[only],)
    return lambda texts: ()


def restrict_tables(tables: ErrorTables, mask: BoolArray) -> ErrorTables:
    """The tables of the examples a mask keeps, in their order, as build_error_tables would
    give for those examples alone (a later version's paper examples, a fresh window): the
    lookups, the figures and the horizon then read positions of the kept examples."""
    if mask.shape != (len(tables),):
        raise ValueError("the mask must cover every example of the tables")
    kept = np.flatnonzero(mask)
    renumbered = np.full(len(tables), -1, dtype=np.int64)
    renumbered[kept] = np.arange(kept.size, dtype=np.int64)
    owners = renumbered[tables.keys // tables.width]
    inside = owners >= 0
    # Renumbering keeps the positions' order, so the keys stay sorted.
    keys = owners[inside] * tables.width + tables.keys[inside] % tables.width
    candidates = renumbered[tables.candidates]
    candidates = candidates[candidates >= 0]
    positions = kept.tolist()
    return ErrorTables(
        track=tables.track, split=tables.split,
        situated=tuple(tables.situated[i] for i in positions),
        since=tables.since[kept], years=tables.years[kept], vocabulary=tables.vocabulary,
        width=tables.width, keys=keys, codes=tables.codes[inside], candidates=candidates,
        _pick=_picker(candidates.tolist()),
        marked=tuple(tables.marked[i] for i in positions) if tables.marked else (),
        mark_states=None if tables.mark_states is None else tables.mark_states[kept])


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


def _lookup_all(tables: ErrorTables, normalized: Sequence[str], correct: BoolArray) -> IntArray:
    """Every example's lookup code (with bit _MARKED), CORRECT_CLASS where EM holds."""
    if len(normalized) != len(tables) or correct.shape != (len(tables),):
        raise ValueError("one normalized prediction and one EM value per example are needed")
    codes = np.full(len(tables), UNRELATED, dtype=np.int64)
    if tables.candidates.size:
        codes[tables.candidates] = _lookup(tables, tables.candidates,
                                           tables._pick(normalized))
    codes[correct] = CORRECT_CLASS
    return codes


def _split(tables: ErrorTables, looked: IntArray, positions: IntArray | None
           ) -> tuple[IntArray, IntArray | None]:
    """Lookup codes as (class codes, mark states: None without a mark)."""
    if tables.mark_states is None:
        return looked, None
    states = (tables.mark_states.copy() if positions is None
              else tables.mark_states[positions])
    states[(looked & _MARKED) > 0] = MARK_HIT
    return looked & _CLASS_BITS, states


def classify(tables: ErrorTables, normalized: Sequence[str], correct: BoolArray) -> IntArray:
    """One class code per example (ERROR_CLASSES' positions): CORRECT_CLASS where EM holds,
    else the class of the normalized prediction among the example's other answers, else
    UNRELATED. `normalized`: the normalized predictions in gold order (Predictions'
    normalized_answers); `correct`: EM per example (outcome bit CORRECT)."""
    return _split(tables, _lookup_all(tables, normalized, correct), None)[0]


def classify_marked(tables: ErrorTables, normalized: Sequence[str], correct: BoolArray
                    ) -> tuple[IntArray, IntArray | None]:
    """classify, and each example's mark state (None when the track has no mark)."""
    return _split(tables, _lookup_all(tables, normalized, correct), None)


def reclassify(tables: ErrorTables, positions: IntArray, normalized: Sequence[str],
               correct: BoolArray) -> IntArray:
    """classify for the examples at `positions` only (their predictions and EM, in order)."""
    return reclassify_marked(tables, positions, normalized, correct)[0]


def reclassify_marked(tables: ErrorTables, positions: IntArray, normalized: Sequence[str],
                      correct: BoolArray) -> tuple[IntArray, IntArray | None]:
    """classify_marked for the examples at `positions` only."""
    if len(normalized) != positions.size or correct.shape != positions.shape:
        raise ValueError("one normalized prediction and one EM value per position are needed")
    codes = _lookup(tables, positions, normalized)
    codes[correct] = CORRECT_CLASS
    return _split(tables, codes, positions)


def pack_codes(classes: IntArray, marks: IntArray | None) -> IntArray:
    """The stored form of an example's class and mark state: one byte, the state above."""
    classes = np.asarray(classes, dtype=np.int64)
    return classes if marks is None else classes | (np.asarray(marks, dtype=np.int64)
                                                    << _STATE_SHIFT)


def unpack_codes(stored: IntArray) -> tuple[IntArray, IntArray | None]:
    """(class codes, mark states) of stored bytes; the states are None unless every byte
    has one (a track without a mark, or a row stored before it)."""
    stored = np.asarray(stored, dtype=np.int64)
    states = stored >> _STATE_SHIFT
    return stored & _CLASS_BITS, (states if states.size and bool(np.all(states)) else None)


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


def check_marks(info: TrackInfo, marks: IntArray | None, n: int) -> IntArray | None:
    """The mark states as int64 (None stays None), if they are n states of the track's mark;
    else ValueError."""
    if marks is None:
        return None
    if _rule(info).mark is None:
        raise ValueError(f"track {info.name!r} has no mark")
    marks = np.asarray(marks, dtype=np.int64)
    if marks.shape != (n,):
        raise ValueError(f"{marks.size} mark states for {n} examples")
    if marks.size and (int(marks.min()) < MARK_OUTSIDE or int(marks.max()) > MARK_HIT):
        raise ValueError("mark states outside outside/counted/hit")
    return marks


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


def error_metrics(gold: GoldSplit, codes: IntArray, *, marks: IntArray | None = None,
                  seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                  ) -> dict[str, MetricValue]:
    """Every error figure of the track (TrackInfo.error_metrics) from the class codes.

    `{class}_rate{suffix}`: percent of the partition's examples in the class (count: the
    partition's size); `{class}_share{suffix}`: percent of its wrong examples (count: the
    number wrong; None when none is wrong). A rate or share at 0% or 100% takes the Wilson
    interval of its count (intervals.share_ci), a share that of its k of the number wrong.
    With the mark states (classify_marked) also the mark's figures over its counted examples
    (see the module docstring), under the same interval rule; without them the mark's
    figures are left out. resamples=0 skips the CIs.
    """
    info = track_info(gold.track)
    rule = _rule(info)
    codes = check_codes(info, codes, len(gold))
    marks = check_marks(info, marks, len(gold))
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
        if rule.mark is not None and marks is not None:
            values.update(_mark_values(
                rule.mark.name, suffix, part, _partition(gold, marks, suffix), exclusive,
                drawn, seed=seed))
    return {name: values[name] for name in info.error_metrics if name in values}


def _split_draw(rng: np.random.Generator, remaining: IntArray, k: int, rest: int) -> IntArray:
    """The draws of a cell of k examples out of `rest`, from `remaining` drawn in all: a
    conditional binomial (the whole draw, or none, without a random number)."""
    if k == 0:
        return np.zeros_like(remaining)
    if k == rest:
        return remaining
    return np.asarray(rng.binomial(remaining, k / rest), dtype=np.int64)


def _mark_values(name: str, suffix: str, codes: IntArray, marks: IntArray,
                 exclusive: Sequence[int], drawn: tuple[IntArray, dict[int, IntArray]] | None,
                 *, seed: int) -> dict[str, MetricValue]:
    """A mark's rate and share on one partition (its class codes and mark states).

    The CIs split each class's draw (and the right examples', n minus EM's draw of the
    number wrong) between hits and counted examples by conditional binomials, stream
    name + suffix: the states' multinomial within the classes' own resample.
    """
    counted = marks != MARK_OUTSIDE
    hit = marks == MARK_HIT
    wrong = codes != CORRECT_CLASS
    n_counted, n_hits = int(counted.sum()), int(hit.sum())
    n_wrong = int((counted & wrong).sum())
    rate_boot: tuple[float, float] | None = None
    share_boot: tuple[float, float] | None = None
    if drawn is not None and n_counted:
        total, draws = drawn
        rng = rng_for(seed, name + suffix)
        hits = np.zeros_like(total)
        counted_all = np.zeros_like(total)
        counted_wrong = np.zeros_like(total)
        n = int(codes.size)
        for code in (CORRECT_CLASS, *exclusive):
            draw = (n - total) if code == CORRECT_CLASS else draws[code]
            in_class = codes == code
            k = int(in_class.sum())
            k_hit = int((hit & in_class).sum())
            k_counted = int((counted & ~hit & in_class).sum())
            got = _split_draw(rng, draw, k_hit, k)
            more = _split_draw(rng, draw - got, k_counted, k - k_hit)
            hits = hits + got
            counted_all = counted_all + got + more
            if code != CORRECT_CLASS:
                counted_wrong = counted_wrong + got + more
        with np.errstate(invalid="ignore", divide="ignore"):
            rate_boot = percentile_interval(100.0 * hits / counted_all)
            if n_wrong:
                share_boot = percentile_interval(100.0 * hits / counted_wrong)
    return {
        f"{name}_rate{suffix}": (
            MetricValue(100.0 * n_hits / n_counted, share_ci(n_hits, n_counted, rate_boot),
                        n_counted) if n_counted else MetricValue(None, None, 0)),
        f"{name}_share{suffix}": (
            MetricValue(100.0 * n_hits / n_wrong, share_ci(n_hits, n_wrong, share_boot),
                        n_wrong) if n_wrong else MetricValue(None, None, 0)),
    }


def _figure_statistic(members: tuple[int, ...], kind: str) -> CountStatistic:
    """A figure as a function of class counts (draws, codes): for the paired comparison."""
    chosen = list(members)

    def statistic(counts: IntArray) -> FloatArray:
        hits = counts[..., chosen].sum(axis=-1)
        base = counts.sum(axis=-1) - (counts[..., CORRECT_CLASS] if kind == "share" else 0)
        return np.asarray(100.0 * hits / base, dtype=np.float64)

    return statistic


def _mark_categories(codes: IntArray, marks: IntArray) -> IntArray:
    """Per example: 0 outside the mark, 1 counted and right, 2 counted and wrong, 3 a hit."""
    return np.where(marks == MARK_OUTSIDE, 0, np.where(
        marks == MARK_HIT, 3, np.where(codes == CORRECT_CLASS, 1, 2))).astype(np.int64)


def _mark_rate(counts: IntArray) -> FloatArray:
    return np.asarray(100.0 * counts[..., 3] / counts[..., 1:].sum(axis=-1), dtype=np.float64)


def _mark_share(counts: IntArray) -> FloatArray:
    return np.asarray(100.0 * counts[..., 3] / counts[..., 2:].sum(axis=-1), dtype=np.float64)


def compare_errors(gold: GoldSplit, codes_a: IntArray, codes_b: IntArray, *,
                   marks_a: IntArray | None = None, marks_b: IntArray | None = None,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   greater: bool = False) -> dict[str, PairedDifference]:
    """Paired difference A - B of every error figure on the same examples, CI and p-value.

    As scoring.compare does for the paper's metrics: a paired bootstrap (one multinomial
    over the joint classes of A and B per partition, stream "paired:error_classes" +
    suffix) and the shifted-null p-value, two-sided (greater=True: one-sided, "A's figure is
    higher"). A share is undefined, and its difference None, when A or B has no error. The
    mark's figures, given both submissions' mark states, from a multinomial of their own
    over the joint states (stream "paired:" + mark + suffix).
    """
    info = track_info(gold.track)
    rule = _rule(info)
    codes_a = check_codes(info, codes_a, len(gold))
    codes_b = check_codes(info, codes_b, len(gold))
    marks_a = check_marks(info, marks_a, len(gold))
    marks_b = check_marks(info, marks_b, len(gold))
    result: dict[str, PairedDifference] = {}
    for suffix in info.error_partitions:
        statistics = {f"{name}_{kind}{suffix}": _figure_statistic(class_members(name), kind)
                      for kind in ERROR_FIGURES for name in rule.classes}
        result.update(paired_differences(
            _partition(gold, codes_a, suffix), _partition(gold, codes_b, suffix), _N_CODES,
            statistics, name="error_classes" + suffix, seed=seed, resamples=resamples,
            greater=greater))
        if rule.mark is not None and marks_a is not None and marks_b is not None:
            name = rule.mark.name
            result.update(paired_differences(
                _partition(gold, _mark_categories(codes_a, marks_a), suffix),
                _partition(gold, _mark_categories(codes_b, marks_b), suffix), 4,
                {f"{name}_rate{suffix}": _mark_rate, f"{name}_share{suffix}": _mark_share},
                name=name + suffix, seed=seed, resamples=resamples, greater=greater))
    return {name: result[name] for name in info.error_metrics if name in result}


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


def earlier_counts(gold: GoldSplit, tables: ErrorTables) -> dict[str, dict[str, int]]:
    """Per partition ("all", "static", ...): its examples, those with an earlier answer (an
    other answer an earlier context or the timeline carries), those answers (one per example
    and answer), and how many of them the alias and came-back rules class other-context:
    answers a stale model may give that the outdated figures do not count."""
    info = track_info(gold.track)
    if (tables.track, tables.split, len(tables)) != (gold.track, gold.split, len(gold)):
        raise ValueError(f"tables of {tables.track}/{tables.split} for {gold.track}/"
                         f"{gold.split}")
    answers = np.array([len(entry.earlier) for entry in tables.situated], dtype=np.int64)
    moved = np.array([sum(entry.others[a] == OTHER_CONTEXT for a in entry.earlier)
                      for entry in tables.situated], dtype=np.int64)
    result = {}
    for suffix in info.error_partitions:
        positions = _partition(gold, np.arange(len(gold), dtype=np.int64), suffix)
        result[suffix[1:] or "all"] = {
            "examples": int(positions.size),
            "with_earlier": int((answers[positions] > 0).sum()),
            "earlier_answers": int(answers[positions].sum()),
            "other_context": int(moved[positions].sum())}
    return result
