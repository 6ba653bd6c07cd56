"""Scoring a validated prediction set against one gold split: the paper's numbers with CIs."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import numpy as np

from .equivalence import GoldForms, gold_forms, lenient_family, lenient_outcomes
from .error_classes import ErrorTables, check_marks, classify_marked, error_metrics
from .formats import Predictions
from .gold import GoldSplit
from .horizon import Horizon, knowledge_horizon
from .intervals import codes_value, mean_ci, share_value
from .metrics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ID_STATISTICS,
    BoolArray,
    CountStatistic,
    FloatArray,
    IntArray,
    MetricValue,
    PairedDifference,
    accuracy_from_binary,
    auc_metric,
    binary_metric_of_counts,
    confusion_codes,
    mean_metric,
    metric_from_codes,
    normalized_em,
    paired_difference,
)
from .tracks import track_info

#: Per-example values of one kind (codes, booleans, F1 scores).
Values = TypeVar("Values", bound=np.ndarray[Any, Any])

CORRECT = 1
CORRECT_ANY = 2
#: em_equiv against the answers and against any_answer (lenient, not in the paper).
CORRECT_EQUIV = 4
CORRECT_EQUIV_ANY = 8
#: Set on every example of a QA score that carries the two bits above: scores stored before
#: the lenient metrics existed lack it, so nothing reads their zero bits as "wrong".
LENIENT_SCORED = 16


@dataclass(frozen=True)
class ScoreResult:
    """Metrics (percent, 0-100), 95% CIs and counts of one submission on one split.

    `outcomes` holds one code per gold example, in gold order: for QA tracks
    CORRECT | CORRECT_ANY | CORRECT_EQUIV | CORRECT_EQUIV_ANY | LENIENT_SCORED bits (one
    uint8 each, as the server stores them); for identification tracks the confusion
    category (0 TP, 1 FP, 2 FN, 3 TN). Paired comparisons work from these codes alone.
    `f1` / `f1_any` hold each QA example's best token F1 (0-1); they are not stored.
    `error_classes` (QA, scored with error tables) holds one class code per example, in
    gold order (benchmark.situations.ERROR_CLASSES' positions, one uint8 each to store, as
    the outcomes): with the gold's error tables they are all an incremental rescore needs;
    the error figures are then in `metrics` (TrackInfo.error_metrics, not in the paper),
    and `horizon` is the knowledge horizon (dated tracks). `error_marks` holds each
    example's state for the track's mark (geo: the US answer; error_classes.MARK_*), None
    without one; error_classes.pack_codes stores both in one byte.
    """

    track: str
    split: str
    n: int
    metrics: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None]
    counts: dict[str, int]
    outcomes: IntArray
    f1: FloatArray | None = None
    f1_any: FloatArray | None = None
    error_classes: IntArray | None = None
    horizon: Horizon | None = None
    #: False when the error figures were computed without their CIs and without the knowledge
    #: horizon (score(..., error_intervals=False)); error_values gives both.
    error_intervals: bool = True
    error_marks: IntArray | None = None

    def to_json(self) -> dict[str, Any]:
        """The result in the CLI's --json shape (with "horizon" when estimated)."""
        result: dict[str, Any] = {
            "track": self.track, "split": self.split, "n": self.n,
            "metrics": dict(self.metrics),
            "ci": {name: (list(ci) if ci else None) for name, ci in self.ci.items()},
            "counts": dict(self.counts),
        }
        if self.horizon is not None:
            result["horizon"] = self.horizon.to_json()
        return result


def source_slug(source: str) -> str:
    """Short metric suffix for a source dataset name (nq_table.open -> nq_table)."""
    return source.split(".")[0]


def _metric_specs(
    gold: GoldSplit, outcomes: IntArray, *, with_equiv: bool = False
) -> Iterator[tuple[str, IntArray, int, CountStatistic]]:
    """(name, category codes, number of categories, statistic) for every metric of a track.

    with_equiv adds the em_equiv metrics when the codes carry them (paired comparisons;
    score() draws their CIs in _lenient_values). Token F1 is not a function of the codes.
    """
    if gold.is_identification:
        for name, statistic in ID_STATISTICS.items():
            yield name, outcomes, 4, statistic
        for source, mask in gold.source_masks.items():
            for name, statistic in ID_STATISTICS.items():
                yield f"{name}_{source_slug(source)}", outcomes[mask], 4, statistic
        return
    info = track_info(gold.track)
    correct, correct_any = outcomes & CORRECT, (outcomes & CORRECT_ANY) >> 1
    for name in info.metrics:
        yield name, _partition_of(gold, name, correct, correct_any), 2, accuracy_from_binary
    if with_equiv and outcomes.size and bool(np.all(outcomes & LENIENT_SCORED)):
        equiv = (outcomes & CORRECT_EQUIV) >> 2
        equiv_any = (outcomes & CORRECT_EQUIV_ANY) >> 3
        for name in info.lenient_metrics:
            if lenient_family(name) == "em_equiv":
                yield (name, _partition_of(gold, name, equiv, equiv_any), 2,
                       accuracy_from_binary)


def _partition_of(gold: GoldSplit, name: str, values: Values, values_any: Values) -> Values:
    """The per-example values a metric averages: its partition's, or the any_answer ones."""
    suffix = name.removeprefix(lenient_family(name) or "em").removeprefix("_")
    if suffix == "":
        return values
    if suffix == "any":
        return values_any
    mask = gold.partition_masks.get(suffix, np.zeros(len(gold), dtype=np.bool_))
    return cast(Values, values[mask])


def outcome_codes(gold: GoldSplit, predictions: Predictions) -> IntArray:
    """Per-example outcome codes of a prediction set (see ScoreResult)."""
    if predictions.track != gold.track or predictions.split != gold.split:
        raise ValueError(
            f"predictions for {predictions.track}/{predictions.split} cannot be scored "
            f"against {gold.track}/{gold.split}")
    if gold.is_identification:
        if predictions.labels is None:
            raise ValueError("identification predictions need labels")
        return confusion_codes(predictions.labels, gold.labels)
    if predictions.answers is None:
        raise ValueError("QA predictions need answers")
    normalized = predictions.normalized_answers  # once, for both gold sets and the server
    correct = normalized_em(normalized, gold.normalized_answers)
    correct_any = normalized_em(normalized, gold.normalized_any_answers)
    return (correct.astype(np.int64) * CORRECT) | (correct_any.astype(np.int64) * CORRECT_ANY)


def answer_forms(gold: GoldSplit) -> GoldForms:
    """The lenient metrics' parsed gold answers of a QA split (built once per split)."""
    # The alternates: every context's answers (normalized once for EM Any already).
    return gold_forms(gold, "answers", lambda: [e.answers for e in gold.examples],
                      lambda: gold.normalized_any_answers)


def added_forms(gold: GoldSplit) -> GoldForms:
    """The parsed any_answer answers that the answers lack (built once per split)."""
    return gold_forms(gold, "added", lambda: [
        tuple(a for a in e.any_answers if a not in e.answers) for e in gold.examples])


def warm_lenient(gold: GoldSplit) -> None:
    """Build a QA split's lenient gold forms now (a server worker, before its first upload)."""
    if gold.is_identification:
        return
    answer_forms(gold)
    if "em_any" in track_info(gold.track).metrics:
        added_forms(gold)


def lenient_codes(gold: GoldSplit, predictions: Predictions, outcomes: IntArray
                  ) -> tuple[IntArray, FloatArray, FloatArray]:
    """The outcome codes with the em_equiv bits added, and per-example token F1 (answers, any).

    EM comes from the codes, so work is spent only where EM failed.
    """
    if predictions.answers is None:
        raise ValueError("QA predictions need answers")
    answers = predictions.answers
    normalized = predictions.normalized_answers
    cache: dict[tuple[str, int], frozenset[str]] = {}
    shapes: dict[str, tuple[bool, tuple[str, ...]]] = {}
    forms = answer_forms(gold)
    equiv, f1 = lenient_outcomes(answers, normalized, (outcomes & CORRECT) > 0, forms, cache,
                                 shapes)
    codes = outcomes | LENIENT_SCORED | (equiv.astype(np.int64) * CORRECT_EQUIV)
    if "em_any" not in track_info(gold.track).metrics:
        return codes, f1, f1
    # any_answer is the answers plus the other contexts' answers, so against it em_equiv and
    # F1 are those against the answers or against the added answers, whichever is better:
    # only the added ones need reading, and only where EM Any and the answers fall short.
    added = added_forms(gold)
    settled = ((outcomes & CORRECT_ANY) > 0) | (equiv & (f1 >= 1.0))
    equiv_added, f1_added = lenient_outcomes(answers, normalized, settled, added, cache,
                                             shapes)
    equiv_any = equiv | equiv_added
    return (codes | (equiv_any.astype(np.int64) * CORRECT_EQUIV_ANY), f1,
            np.maximum(f1, f1_added))


@dataclass(frozen=True)
class _LenientPlan:
    """A QA split's lenient metrics as _lenient_values reads them, built once per split.

    Per metric: its name, family, the EM metric on the same partition, and where its values
    come from (PLAIN: every example, ANY: every example against any_answer, else the index
    of its partition mask in `masks`). `masks` stacks the partition masks, `sizes` holds
    their example counts.
    """

    metrics: tuple[tuple[str, str, str, int], ...]
    masks: BoolArray
    sizes: tuple[int, ...]


_PLAIN, _ANY = -1, -2
_plans: weakref.WeakKeyDictionary[GoldSplit, _LenientPlan] = weakref.WeakKeyDictionary()
_plans_lock = threading.Lock()


def _lenient_plan(gold: GoldSplit) -> _LenientPlan:
    """The split's _LenientPlan, cached with the split (two threads may both build it)."""
    plan = _plans.get(gold)
    if plan is not None:
        return plan
    names: list[str] = []
    metrics = []
    for name in track_info(gold.track).lenient_metrics:
        family = lenient_family(name) or ""
        suffix = name.removeprefix(family).removeprefix("_")
        if suffix == "":
            source = _PLAIN
        elif suffix == "any":
            source = _ANY
        else:
            if suffix not in names:
                names.append(suffix)
            source = names.index(suffix)
        metrics.append((name, family, "em" + name.removeprefix(family), source))
    empty = np.zeros(len(gold), dtype=np.bool_)
    masks = np.array([gold.partition_masks.get(suffix, empty) for suffix in names],
                     dtype=np.bool_).reshape(len(names), len(gold))
    built = _LenientPlan(tuple(metrics), masks, tuple(int(n) for n in masks.sum(axis=1)))
    with _plans_lock:
        return _plans.setdefault(gold, built)


def _lenient_values(gold: GoldSplit, outcomes: IntArray, f1: FloatArray, f1_any: FloatArray,
                    paper: dict[str, MetricValue], *, seed: int, resamples: int
                    ) -> dict[str, MetricValue]:
    """em_equiv and token F1 on EM's partitions, with bootstrap CIs (see metrics.py), by the
    score-interval rule at 0% or 100% (intervals.py).

    Where a lenient metric's per-example values equal EM's on its partition, it is EM's
    metric (same data, same bootstrap distribution), so EM's value and CI are reused. The
    test is one whole-array comparison per family and side (where the values differ from
    EM's), then whether each partition holds such an example, for all partitions at once.
    """
    plan = _lenient_plan(gold)
    correct = outcomes & CORRECT
    equiv: BoolArray = (outcomes & CORRECT_EQUIV) > 0
    # em_equiv differs from EM where bit CORRECT_EQUIV (CORRECT_EQUIV_ANY) differs from bit
    # CORRECT (CORRECT_ANY), two places lower.
    flips = (outcomes >> 2) ^ outcomes
    differs = {"em_equiv": ((flips & CORRECT) > 0, (flips & CORRECT_ANY) > 0),
               "f1": (f1 != correct, f1_any != (outcomes & CORRECT_ANY) >> 1)}
    touched = {family: np.logical_and(plan.masks, plain).any(axis=1).tolist()
               for family, (plain, _) in differs.items()}
    values: dict[str, MetricValue] = {}
    for name, family, em_name, source in plan.metrics:
        plain, any_side = differs[family]
        if not (plain.any() if source == _PLAIN else any_side.any() if source == _ANY
                else touched[family][source]):
            values[name] = paper[em_name]
        elif family == "em_equiv":
            if source == _PLAIN:
                k, n = int(np.count_nonzero(equiv)), equiv.size
            elif source == _ANY:
                k, n = int(np.count_nonzero(outcomes & CORRECT_EQUIV_ANY)), outcomes.size
            else:
                k = int(np.count_nonzero(np.logical_and(equiv, plan.masks[source])))
                n = plan.sizes[source]
            values[name] = share_value(binary_metric_of_counts(k, n, name=name, seed=seed,
                                                               resamples=resamples), k)
        else:
            part = f1 if source == _PLAIN else f1_any if source == _ANY else f1[
                plan.masks[source]]
            mean = mean_metric(part, name=name, seed=seed, resamples=resamples)
            values[name] = replace(mean, ci=mean_ci(part, mean.ci))
    return values


def score(
    gold: GoldSplit,
    predictions: Predictions,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    lenient: bool = True,
    errors: ErrorTables | None = None,
    error_intervals: bool = True,
) -> ScoreResult:
    """Every metric of the track with its 95% CI (resamples=0 skips the CIs): the percentile
    bootstrap, or a share's Wilson interval at 0% or 100% (intervals.py).

    QA tracks also get the lenient metrics (em_equiv, token f1; not in the paper) unless
    lenient=False; given the split's error tables (error_classes.error_tables), also the
    error classes, their figures and the knowledge horizon (not in the paper). The paper's
    metrics are the same either way. error_intervals=False leaves out the error figures'
    CIs and the knowledge horizon (most of their cost; error_values gives them later, the
    same numbers).
    """
    outcomes = outcome_codes(gold, predictions)
    f1: FloatArray | None = None
    f1_any: FloatArray | None = None
    codes: IntArray | None = None
    marks: IntArray | None = None
    if errors is not None:
        if (errors.track, errors.split, len(errors)) != (gold.track, gold.split, len(gold)):
            raise ValueError(f"error tables of {errors.track}/{errors.split} cannot classify "
                             f"{gold.track}/{gold.split}")
        codes, marks = classify_marked(errors, predictions.normalized_answers,
                                       (outcomes & CORRECT) > 0)
    if lenient and not gold.is_identification:
        outcomes, f1, f1_any = lenient_codes(gold, predictions, outcomes)
    return result_from_outcomes(gold, outcomes, f1, f1_any, scores=predictions.scores,
                                resamples=resamples, seed=seed, errors=errors,
                                error_classes=codes, error_marks=marks,
                                error_intervals=error_intervals)


def result_from_outcomes(
    gold: GoldSplit,
    outcomes: IntArray,
    f1: FloatArray | None = None,
    f1_any: FloatArray | None = None,
    *,
    scores: FloatArray | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    errors: ErrorTables | None = None,
    error_classes: IntArray | None = None,
    error_marks: IntArray | None = None,
    error_intervals: bool = True,
) -> ScoreResult:
    """Every metric and CI from per-example outcomes alone (see ScoreResult).

    score() ends here, and so does an incremental rescore that re-evaluated only the
    examples a gold update changed: equal outcomes give equal results, bit for bit.
    f1 / f1_any (QA, with LENIENT_SCORED codes) add the lenient metrics; scores (the
    identification scores, in gold order) add AUC; error_classes (QA, with the split's
    error tables) add the error figures and, for a dated track, the knowledge horizon;
    error_marks (with them) the mark's figures.
    """
    if (errors is None) != (error_classes is None):
        raise ValueError("error classes need their error tables, and the tables the classes")
    if error_marks is not None and error_classes is None:
        raise ValueError("mark states need the error classes")
    values: dict[str, MetricValue] = {
        name: codes_value(metric_from_codes(codes, categories, statistic, name=name,
                                            seed=seed, resamples=resamples),
                          codes, categories, statistic)
        for name, codes, categories, statistic in _metric_specs(gold, outcomes)
    }
    if gold.is_identification and scores is not None:
        values["auc"] = auc_metric(scores, gold.labels, seed=seed, resamples=resamples)
    if f1 is not None and f1_any is not None:
        values.update(_lenient_values(gold, outcomes, f1, f1_any, dict(values), seed=seed,
                                      resamples=resamples))
    horizon = None
    if errors is not None and error_classes is not None:
        figures, horizon = error_values(gold, errors, error_classes, marks=error_marks,
                                        seed=seed,
                                        resamples=resamples if error_intervals else 0)
        values.update(figures)
        if not error_intervals:
            # Without its test a change point is no horizon (the test may find the drop not
            # significant): it is left to the completion, with its CI.
            horizon = None
    return ScoreResult(
        track=gold.track, split=gold.split, n=len(gold),
        metrics={name: v.value for name, v in values.items()},
        ci={name: v.ci for name, v in values.items()},
        counts={name: v.count for name, v in values.items()},
        outcomes=outcomes, f1=f1, f1_any=f1_any, error_classes=error_classes,
        horizon=horizon, error_intervals=error_intervals or error_classes is None,
        error_marks=None if error_marks is None else check_marks(
            track_info(gold.track), error_marks, len(gold)),
    )


def error_values(gold: GoldSplit, errors: ErrorTables, error_classes: IntArray, *,
                 marks: IntArray | None = None, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED) -> tuple[dict[str, MetricValue], Horizon | None]:
    """The error figures of a QA score's class codes (and mark states) and, on a dated
    track, its knowledge horizon: what result_from_outcomes adds to the metrics
    (resamples=0: no CIs, no test)."""
    figures = error_metrics(gold, error_classes, marks=marks, seed=seed, resamples=resamples)
    rule = track_info(gold.track).errors
    horizon = (knowledge_horizon(errors, error_classes, seed=seed, resamples=resamples)
               if rule is not None and rule.horizon else None)
    return figures, horizon


def compare(
    gold: GoldSplit,
    outcomes_a: IntArray,
    outcomes_b: IntArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    greater: bool = False,
    lenient: bool = False,
) -> dict[str, PairedDifference]:
    """Paired difference A - B of every metric on the same examples, with CI and p-value.

    The p-value is two-sided; greater=True makes it one-sided, for "A is better than B".
    lenient=True adds em_equiv on its partitions when both code arrays carry it (token F1
    is not in the codes); the paper's metrics and their p-values are the same either way.
    """
    if outcomes_a.shape != (len(gold),) or outcomes_b.shape != (len(gold),):
        raise ValueError("both outcome arrays must cover every example of the gold split")
    specs_b = {name: codes for name, codes, _, _
               in _metric_specs(gold, outcomes_b, with_equiv=lenient)}
    return {
        name: paired_difference(codes_a, specs_b[name], categories, statistic,
                                name=name, seed=seed, resamples=resamples, greater=greater)
        for name, codes_a, categories, statistic
        in _metric_specs(gold, outcomes_a, with_equiv=lenient) if name in specs_b
    }


def per_example(gold: GoldSplit, predictions: Predictions,
                result: ScoreResult) -> list[dict[str, Any]]:
    """One row per example with gold, prediction and correctness: for non-hidden splits only."""
    rows = []
    for position, example in enumerate(gold.examples):
        code = int(result.outcomes[position])
        row: dict[str, Any] = {
            "key": example.key, "question": example.question, "context": example.context,
            "partitions": list(example.partitions),
            "prediction": predictions.value_of(position),
        }
        if gold.is_identification:
            row.update(gold=example.label, correct=code in (0, 3))
            if predictions.scores is not None:
                row["score"] = float(predictions.scores[position])
        else:
            row.update(gold=list(example.answers), correct=bool(code & CORRECT),
                       correct_any=bool(code & CORRECT_ANY))
            if code & LENIENT_SCORED and result.f1 is not None:
                row.update(correct_equiv=bool(code & CORRECT_EQUIV),
                           f1=float(result.f1[position]))
        rows.append(row)
    return rows
