"""One scorer everywhere: its fingerprint and the published conformance vectors.

The fingerprint is a SHA-256 over the source of the modules that decide a score
(normalization, answer equivalence, metrics and their intervals, scoring, the track registry,
the error classes) and over the conformance vectors: the CLI, the API's responses, the
lm-eval and Inspect tasks and the `evaluate` metric print it, so a number says which scorer
produced it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..example import Example
from ..formats import Predictions
from ..gold import GoldSplit
from ..metrics import DEFAULT_RESAMPLES, DEFAULT_SEED
from ..scoring import ScoreResult, score

CONFORMANCE_PATH = Path(__file__).resolve().parent / "conformance.json"
_PACKAGE = Path(__file__).resolve().parent.parent
#: The modules whose source decides a score, in a fixed order.
SCORER_MODULES = ("normalize.py", "equivalence.py", "metrics.py", "intervals.py", "scoring.py",
                  "tracks.py", "situations.py", "error_classes.py")
#: Characters of the hex digest shown (64 bits: enough to tell scorers apart).
FINGERPRINT_LENGTH = 16


@cache
def fingerprint() -> str:
    """The scorer's fingerprint: "sqa-" and 16 hex digits of a SHA-256 (see the module)."""
    digest = hashlib.sha256()
    for name in (*SCORER_MODULES, "harness/conformance.json"):
        digest.update(name.encode() + b"\0")
        digest.update((_PACKAGE / name).read_bytes().replace(b"\r\n", b"\n"))
    return "sqa-" + digest.hexdigest()[:FINGERPRINT_LENGTH]


@dataclass(frozen=True)
class ConformanceCase:
    """Tiny gold, predictions by key, and their hand-computed paper metrics (percent)."""

    name: str
    gold: GoldSplit
    predictions: dict[str, str]
    expected: dict[str, float]
    why: str


def conformance_cases(path: Path = CONFORMANCE_PATH) -> list[ConformanceCase]:
    """The published conformance vectors."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return [ConformanceCase(
        name=case["name"],
        gold=GoldSplit(case["track"], "test", [Example.from_json(e) for e in case["gold"]]),
        predictions=dict(case["predictions"]), expected=dict(case["expected"]),
        why=case["why"]) for case in document["cases"]]


def predictions_of(gold: GoldSplit, answers: Mapping[str, str | bool],
                   fmt: str) -> Predictions:
    """Answers (labels on identification tracks) by key as the scorer's predictions
    (KeyError names a missing key)."""
    if gold.is_identification:
        return Predictions(gold.track, gold.split, fmt, keys=gold.keys, labels=np.array(
            [bool(answers[k]) for k in gold.keys], dtype=np.bool_))
    return Predictions(gold.track, gold.split, fmt,
                       answers=tuple(str(answers[k]) for k in gold.keys), keys=gold.keys)


def score_case(case: ConformanceCase, resamples: int = 0) -> ScoreResult:
    """A conformance case scored by the project's scorer."""
    return score(case.gold, predictions_of(case.gold, case.predictions, "conformance"),
                 resamples=resamples)


def score_pairs(gold: GoldSplit, pairs: Iterable[tuple[str, str | bool]], *,
                resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                fmt: str = "pairs") -> ScoreResult:
    """(key, prediction) pairs covering every example of a QA split, scored by `score`.

    What the harness integrations call: ValueError names an unknown, repeated or missing
    key (a harness metric never scores part of a split as if it were all of it).
    """
    answers: dict[str, str | bool] = {}
    for key, prediction in pairs:
        if key not in gold.index:
            raise ValueError(f"unknown example {key!r} for {gold.track}/{gold.split}")
        if key in answers:
            raise ValueError(f"example {key!r} is predicted twice")
        answers[key] = prediction
    missing = [k for k in gold.keys if k not in answers]
    if missing:
        raise ValueError(f"{len(missing)} of {len(gold)} examples of {gold.track}/{gold.split} "
                         f"have no prediction (first: {missing[0]!r})")
    return score(gold, predictions_of(gold, answers, fmt), resamples=resamples, seed=seed)


def result_json(result: ScoreResult) -> dict[str, Any]:
    """A result's JSON form with the scorer's fingerprint."""
    return {**result.to_json(), "scorer": fingerprint()}
