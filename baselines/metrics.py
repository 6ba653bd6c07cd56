"""Answer normalization, exact match and binary classification metrics (pure functions)."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD/DrQA normalization: NFD, lower-case, drop punctuation and articles, squash spaces."""
    text = unicodedata.normalize("NFD", text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Iterable[str]) -> bool:
    """Whether the normalized prediction equals any normalized gold answer."""
    pred = normalize_answer(prediction)
    return any(pred == normalize_answer(answer) for answer in answers)


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether a normalized passage contains any normalized non-empty answer as whole words."""
    padded = f" {normalize_answer(text)} "
    return any(norm and f" {norm} " in padded
               for norm in (normalize_answer(answer) for answer in answers))


def em_score(predictions: Sequence[str], answers: Sequence[Sequence[str]]) -> float:
    """Exact match in percent over aligned predictions and gold answer lists."""
    if not predictions:
        return 0.0
    hits = sum(exact_match(p, a) for p, a in zip(predictions, answers, strict=True))
    return 100.0 * hits / len(predictions)


def binary_metrics(gold: Sequence[bool], pred: Sequence[bool]) -> dict[str, float]:
    """Accuracy, precision, recall and F1 in percent, positive = context-dependent."""
    tp = sum(g and p for g, p in zip(gold, pred, strict=True))
    fp = sum((not g) and p for g, p in zip(gold, pred, strict=True))
    fn = sum(g and not p for g, p in zip(gold, pred, strict=True))
    correct = sum(g == p for g, p in zip(gold, pred, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "accuracy": 100.0 * correct / len(gold) if gold else 0.0,
        "precision": 100.0 * precision,
        "recall": 100.0 * recall,
        "f1": 100.0 * f1,
    }
