"""Paired comparisons and error analysis from stored outcome codes, test gold kept hidden.

Only aggregates are computed for the hidden test split. Per-example rows (question, context,
dev gold answers, correctness) are built for dev and train alone, whose gold is published.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select

from benchmark import HIDDEN_SPLIT, GoldSplit, compare
from benchmark.error_classes import compare_errors, unpack_codes
from benchmark.metrics import FN, FP, TN, TP
from benchmark.scoring import CORRECT, CORRECT_ANY

from ..extensions import db
from ..models import Score, Submission, Team, User
from . import gold_store, input_releases, released, versions, visibility
from .errors import ServiceError

CONFUSION = {TP: "TP", FP: "FP", FN: "FN", TN: "TN"}


class PickError(ServiceError):
    """A compare parameter (A or B) that names no submission the visitor may compare."""

    code = "invalid_pick"


class BadPick(PickError):
    """A compare parameter that is not a submission number."""


class UnseenPick(PickError):
    """A compare parameter naming no submission the visitor may see."""

    status = 404
    code = "not_found"


class UnscoredPick(PickError):
    """A compare parameter naming a submission with no released score to compare."""

    status = 409
    code = "not_scored"


def pick(name: str, raw: str, user: User | None,
         max_id: int) -> tuple[Submission, Score] | None:
    """The submission a compare parameter names (None when empty), with its active score;
    a PickError naming the parameter otherwise."""
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) > max_id:
        raise BadPick(f"{name.upper()}: {raw[:40]!r} is not a submission number; "
                      "pick a submission from the list")
    try:
        return released.released_score(int(raw), user)
    except visibility.NoSuchSubmission:
        raise UnseenPick(f"{name.upper()}: there is no submission {int(raw)} that you may see "
                         "(it does not exist, was deleted, or is private to another team)"
                         ) from None
    except released.NoReleasedScore as exc:
        raise UnscoredPick(f"{name.upper()}: {exc.message}") from None


def compare_candidates(user: User | None, a: Submission | None,
                       limit: int) -> list[tuple[Submission, float | None, str]]:
    """What the compare picker offers: the user's team's and the public submissions with a
    released score on the active gold (on A's board when A is chosen), best first per board,
    at most `limit`; each with its primary metric and team name."""
    query = (select(Submission, Score.primary_metric, Team.name).join(Score).join(Team).where(
        Score.gold_version_id == gold_store.active_version().id,
        Submission.shown_submission_id.is_(None),  # the Ladder withheld the others' scores
        visibility.seen_clause(user)))
    if a is not None:
        query = query.where(Submission.track == a.track, Submission.split == a.split)
    rows = db.session.execute(query.order_by(
        Submission.track, Submission.split, Score.primary_metric.desc().nulls_last(),
        Submission.id).limit(limit)).all()
    return [(s, value, team) for s, value, team in rows]


class NotComparable(ServiceError):
    """Two submissions are on different tracks, splits or gold versions."""

    status = 400
    code = "not_comparable"


def scored_gold(score: Score) -> GoldSplit:
    """The gold a score was computed against (its version's), for partition masks."""
    return versions.gold_of(score.gold_version).get(score.track, score.split)


def codes(score: Score) -> np.ndarray:
    """A score's per-example outcome codes as an int64 array."""
    return np.frombuffer(score.outcomes, dtype=np.uint8).astype(np.int64)


def error_codes(score: Score) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A QA score's per-example error classes and mark states (None: a row stored without
    classes; states None: without them, a row stored before the mark or a track without)."""
    if score.error_classes is None:
        return None
    return unpack_codes(np.frombuffer(score.error_classes, dtype=np.uint8))


@dataclass
class Comparison:
    """A minus B per metric, and on dev/train the examples where their answers differ."""

    rows: list[dict[str, Any]]
    differing: int
    #: Off the test split, every example: inputs, gold, whether A and B are right, "differ".
    examples: list[dict[str, Any]] = field(default_factory=list)


def compare_scores(a: Submission, score_a: Score, b: Submission, score_b: Score,
                   resamples: int) -> Comparison:
    """Paired bootstrap differences of every metric; per-example rows off the test split."""
    if (a.track, a.split, score_a.gold_version_id) != (b.track, b.split, score_b.gold_version_id):
        raise NotComparable("both submissions must be on the same track, split and gold version")
    whole = scored_gold(score_a)
    outcomes_a, outcomes_b = codes(score_a), codes(score_b)
    if outcomes_a.shape != outcomes_b.shape or len(outcomes_a) != len(whole):
        raise NotComparable("the two scores do not cover the same examples")
    # On a later version's test board, the release's examples: what both were given.
    gold, paper = input_releases.paper_view(score_a.gold_version, a.track, a.split)
    if paper is not None:
        outcomes_a, outcomes_b = outcomes_a[paper], outcomes_b[paper]
    differences = compare(gold, outcomes_a, outcomes_b, resamples=resamples, lenient=True)
    errors_a, errors_b = error_codes(score_a), error_codes(score_b)
    if paper is not None and errors_a is not None and errors_b is not None:
        errors_a = (errors_a[0][paper], None if errors_a[1] is None else errors_a[1][paper])
        errors_b = (errors_b[0][paper], None if errors_b[1] is None else errors_b[1][paper])
    if errors_a is not None and errors_b is not None and (
            errors_a[0].shape == errors_b[0].shape == outcomes_a.shape):
        # The paired difference of each error figure (not in the paper), on the same draws;
        # the mark's only when both rows carry its states.
        differences.update(compare_errors(gold, errors_a[0], errors_b[0], marks_a=errors_a[1],
                                          marks_b=errors_b[1], resamples=resamples))
    rows = [{"metric": name, "a": score_a.metrics.get(name), "b": score_b.metrics.get(name),
             "difference": d.difference, "ci": d.ci, "p_value": d.p_value, "count": d.count}
            for name, d in differences.items()]
    right_a, right_b = correct(gold, outcomes_a), correct(gold, outcomes_b)
    differ = np.flatnonzero(right_a != right_b)
    comparison = Comparison(rows, int(differ.size))
    if a.split != HIDDEN_SPLIT:
        comparison.examples = [
            {**example_inputs(gold, i), "a_correct": bool(right_a[i]),
             "b_correct": bool(right_b[i]), "differ": bool(right_a[i] != right_b[i])}
            for i in range(len(gold))]
    return comparison


def filter_compared(rows: list[dict[str, Any]], partition: str | None,
                    only_differ: bool) -> list[dict[str, Any]]:
    """Compared examples in one partition (None: all), optionally only where A and B differ."""
    return [r for r in rows if (not partition or partition in r["partitions"])
            and (r["differ"] or not only_differ)]


def correct(gold: GoldSplit, outcomes: np.ndarray) -> np.ndarray:
    """Whether each example is right: EM for QA, a true positive or negative for ID."""
    if gold.is_identification:
        return np.isin(outcomes, (TP, TN))
    return (outcomes & CORRECT).astype(np.bool_)


def example_inputs(gold: GoldSplit, position: int) -> dict[str, Any]:
    """What a dev/train example shows: key, question, context, partitions and gold."""
    example = gold.examples[position]
    shown: dict[str, Any] = {"key": example.key, "question": example.question,
                             "context": example.context, "partitions": list(example.partitions)}
    shown["gold"] = example.label if gold.is_identification else list(example.answers)
    return shown


def _qa_summary(name: str, outcomes: np.ndarray) -> dict[str, Any]:
    """EM and Any - One (paper Table 6: EM against every annotated context's answers minus EM
    against this context's) of a group of examples: the share right for another context
    only."""
    n = int(outcomes.size)
    right = (outcomes & CORRECT) > 0
    other = ((outcomes & CORRECT_ANY) > 0) & ~right
    return {"group": name, "n": n,
            "em": 100.0 * right.mean() if n else None,
            "any_not_one": 100.0 * other.mean() if n else None,
            "any_not_one_count": int(other.sum())}


def _id_summary(name: str, outcomes: np.ndarray) -> dict[str, Any]:
    """Confusion counts and accuracy of a group of identification examples."""
    counts = {label: int((outcomes == code).sum()) for code, label in CONFUSION.items()}
    n = int(outcomes.size)
    return {"group": name, "n": n, **counts,
            "accuracy": 100.0 * (counts["TP"] + counts["TN"]) / n if n else None}


@dataclass
class Diagnostics:
    """Aggregates per partition and, off the test split, one row per example."""

    identification: bool
    groups: list[dict[str, Any]]
    examples: list[dict[str, Any]] = field(default_factory=list)


def diagnose(submission: Submission, score: Score) -> Diagnostics:
    """Error analysis of one score: overall and per partition; per example on dev/train."""
    gold = scored_gold(score)
    outcomes = codes(score)
    summary = _id_summary if gold.is_identification else _qa_summary
    groups = [summary("all", outcomes)] + [
        summary(name, outcomes[mask]) for name, mask in gold.partition_masks.items()]
    result = Diagnostics(gold.is_identification, groups)
    if submission.split != HIDDEN_SPLIT:
        result.examples = [_example_row(gold, i, int(code)) for i, code in enumerate(outcomes)]
    return result


def _example_row(gold: GoldSplit, position: int, code: int) -> dict[str, Any]:
    """One dev/train example with its outcome."""
    row = example_inputs(gold, position)
    if gold.is_identification:
        row.update(outcome=CONFUSION[code], correct=code in (TP, TN))
    else:
        right, any_context = bool(code & CORRECT), bool(code & CORRECT_ANY)
        row.update(correct=right, correct_any=any_context,
                   any_not_one=any_context and not right)
    return row
