"""The baselines' scores, computed by the benchmark's own normalization and metrics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from benchmark.metrics import ID_STATISTICS, confusion_codes, normalized_em
from benchmark.normalize import normalize_answer, normalize_many

__all__ = ["binary_metrics", "contains_answer", "em_score", "exact_match", "normalize_answer"]


def exact_match(prediction: str, answers: Iterable[str]) -> bool:
    """Whether the normalized prediction equals any normalized gold answer."""
    return normalize_answer(prediction) in frozenset(normalize_many(list(answers)))


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether a normalized passage contains any normalized non-empty answer as whole words."""
    padded = f" {normalize_answer(text)} "
    return any(norm and f" {norm} " in padded for norm in normalize_many(list(answers)))


def em_score(predictions: Sequence[str], answers: Sequence[Sequence[str]]) -> float:
    """Exact match in percent over aligned predictions and gold answer lists."""
    if len(predictions) != len(answers):
        raise ValueError(f"{len(predictions)} predictions for {len(answers)} answer lists")
    if not predictions:
        return 0.0
    gold = [frozenset(normalize_many(list(a))) for a in answers]
    return 100.0 * float(normalized_em(normalize_many(predictions), gold).mean())


def binary_metrics(gold: Sequence[bool], pred: Sequence[bool]) -> dict[str, float]:
    """Accuracy, precision, recall and F1 in percent, positive = context-dependent."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(pred)} predictions for {len(gold)} gold labels")
    if not gold:
        return dict.fromkeys(ID_STATISTICS, 0.0)
    codes = confusion_codes(np.array(pred, dtype=np.bool_), np.array(gold, dtype=np.bool_))
    counts = np.bincount(codes, minlength=4).astype(np.int64)
    return {name: float(statistic(counts)) for name, statistic in ID_STATISTICS.items()}
