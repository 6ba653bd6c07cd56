"""Scoring a validated prediction set against one gold split: the paper's numbers with CIs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .formats import Predictions
from .gold import GoldSplit
from .metrics import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ID_STATISTICS,
    CountStatistic,
    IntArray,
    MetricValue,
    PairedDifference,
    accuracy_from_binary,
    auc_metric,
    confusion_codes,
    metric_from_codes,
    normalized_em,
    paired_difference,
)
from .normalize import normalize_many
from .tracks import track_info

CORRECT = 1
CORRECT_ANY = 2


@dataclass(frozen=True)
class ScoreResult:
    """Metrics (percent, 0-100), 95% CIs and counts of one submission on one split.

    `outcomes` holds one code per gold example, in gold order: for QA tracks
    CORRECT | CORRECT_ANY bits; for identification tracks the confusion category
    (0 TP, 1 FP, 2 FN, 3 TN). Paired comparisons work from these codes alone.
    """

    track: str
    split: str
    n: int
    metrics: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None]
    counts: dict[str, int]
    outcomes: IntArray

    def to_json(self) -> dict[str, Any]:
        """The result in the CLI's --json shape."""
        return {
            "track": self.track, "split": self.split, "n": self.n,
            "metrics": dict(self.metrics),
            "ci": {name: (list(ci) if ci else None) for name, ci in self.ci.items()},
            "counts": dict(self.counts),
        }


def source_slug(source: str) -> str:
    """Short metric suffix for a source dataset name (nq_table.open -> nq_table)."""
    return source.split(".")[0]


def _metric_specs(
    gold: GoldSplit, outcomes: IntArray
) -> Iterator[tuple[str, IntArray, int, CountStatistic]]:
    """(name, category codes, number of categories, statistic) for every metric of a track."""
    if gold.is_identification:
        for name, statistic in ID_STATISTICS.items():
            yield name, outcomes, 4, statistic
        for source, mask in gold.source_masks.items():
            for name, statistic in ID_STATISTICS.items():
                yield f"{name}_{source_slug(source)}", outcomes[mask], 4, statistic
        return
    correct = outcomes & CORRECT
    for name in track_info(gold.track).metrics:
        if name == "em":
            yield name, correct, 2, accuracy_from_binary
        elif name == "em_any":
            yield name, (outcomes & CORRECT_ANY) >> 1, 2, accuracy_from_binary
        else:
            partition = name.removeprefix("em_")
            mask = gold.partition_masks.get(partition, np.zeros(len(gold), dtype=np.bool_))
            yield name, correct[mask], 2, accuracy_from_binary


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
    normalized = normalize_many(predictions.answers)  # once, for both gold sets
    correct = normalized_em(normalized, gold.normalized_answers)
    correct_any = normalized_em(normalized, gold.normalized_any_answers)
    return (correct.astype(np.int64) * CORRECT) | (correct_any.astype(np.int64) * CORRECT_ANY)


def score(
    gold: GoldSplit,
    predictions: Predictions,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> ScoreResult:
    """Every metric of the track with its bootstrap CI (resamples=0 skips the CIs)."""
    outcomes = outcome_codes(gold, predictions)
    values: dict[str, MetricValue] = {
        name: metric_from_codes(codes, categories, statistic,
                                name=name, seed=seed, resamples=resamples)
        for name, codes, categories, statistic in _metric_specs(gold, outcomes)
    }
    if gold.is_identification and predictions.scores is not None:
        values["auc"] = auc_metric(predictions.scores, gold.labels, seed=seed,
                                   resamples=resamples)
    return ScoreResult(
        track=gold.track, split=gold.split, n=len(gold),
        metrics={name: v.value for name, v in values.items()},
        ci={name: v.ci for name, v in values.items()},
        counts={name: v.count for name, v in values.items()},
        outcomes=outcomes,
    )


def compare(
    gold: GoldSplit,
    outcomes_a: IntArray,
    outcomes_b: IntArray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    greater: bool = False,
) -> dict[str, PairedDifference]:
    """Paired difference A - B of every metric on the same examples, with CI and p-value.

    The p-value is two-sided; greater=True makes it one-sided, for "A is better than B".
    """
    if outcomes_a.shape != (len(gold),) or outcomes_b.shape != (len(gold),):
        raise ValueError("both outcome arrays must cover every example of the gold split")
    specs_b = {name: codes for name, codes, _, _ in _metric_specs(gold, outcomes_b)}
    return {
        name: paired_difference(codes_a, specs_b[name], categories, statistic,
                                name=name, seed=seed, resamples=resamples, greater=greater)
        for name, codes_a, categories, statistic in _metric_specs(gold, outcomes_a)
    }


def per_example(gold: GoldSplit, predictions: Predictions, result: ScoreResult) -> list[dict[str, Any]]:
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
        rows.append(row)
    return rows
