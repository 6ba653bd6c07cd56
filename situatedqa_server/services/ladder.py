"""The Ladder (Blum & Hardt, ICML 2015): a test score is released only when it is better.

With SITUATEDQA_TEST_FEEDBACK=ladder, a team's new test submission on a track has its own
scores released only when a one-sided paired bootstrap on the stored per-example outcomes
shows it better than the team's best released submission on that track, on the track's
primary metric, at p < ALPHA (the level of the rank groups' test). Otherwise it keeps
pointing at that best submission (Submission.shown_submission_id), and every surface shows
that one's scores instead.
The decision is taken once, in the upload's locked transaction, against the active gold
version; a later rescore changes the numbers shown, never which submission is shown.
"""

from __future__ import annotations

import numpy as np
from flask import current_app
from sqlalchemy import select

from benchmark import HIDDEN_SPLIT, TRACK_INFO, GoldSplit, compare
from benchmark.metrics import IntArray

from ..extensions import db
from ..models import Score, Submission, Visibility
from . import input_releases
from .ranking import ALPHA

LADDER = "ladder"
#: Bootstrap resamples of the test: fixed, so a decision never depends on the CI setting.
RESAMPLES = 2000


def codes(outcomes: bytes) -> IntArray:
    """Stored outcome codes (one uint8 per gold example) as an int64 array."""
    return np.frombuffer(outcomes, dtype=np.uint8).astype(np.int64)


def p_better(gold: GoldSplit, new: IntArray, best: IntArray,
             resamples: int = RESAMPLES) -> float:
    """One-sided paired bootstrap p-value of "new beats best" on the primary metric."""
    primary = TRACK_INFO[gold.track].primary
    difference = compare(gold, new, best, resamples=resamples, greater=True)[primary]
    return 1.0 if difference.p_value is None else difference.p_value


def releases(gold: GoldSplit, new: IntArray, best: IntArray,
             resamples: int = RESAMPLES) -> bool:
    """Whether the Ladder releases new against the best released outcomes so far."""
    return p_better(gold, new, best, resamples) < ALPHA


def applies(submission: Submission) -> bool:
    """Whether the Ladder decides this submission's release (ladder mode, test split)."""
    return (current_app.config["TEST_FEEDBACK"] == LADDER
            and submission.split == HIDDEN_SPLIT and not submission.is_baseline)


def best_released(submission: Submission, version_id: int) -> tuple[Submission, Score] | None:
    """The team's best released test submission on the track before this one, if any.

    Deleted and hidden ones count: the team has seen their scores.
    """
    row = db.session.execute(
        select(Submission, Score).join(Score, Score.submission_id == Submission.id).where(
            Submission.team_id == submission.team_id, Submission.track == submission.track,
            Submission.split == HIDDEN_SPLIT, Submission.shown_submission_id.is_(None),
            Submission.is_baseline.is_(False), Submission.id != submission.id,
            Score.gold_version_id == version_id)
        .order_by(Score.primary_metric.desc().nulls_last(), Submission.id).limit(1)).first()
    return None if row is None else (row[0], row[1])


def decide(submission: Submission, row: Score) -> Score:
    """In the upload's transaction: release the new score (row), or return the best's.

    The two rows' outcomes are compared on the examples the board ranks by (its version's
    split, and there the release's examples alone: input_releases.paper_view). A withheld
    submission is kept private (it can never be published).
    """
    if not applies(submission):
        return row
    gold, paper = input_releases.paper_view(row.gold_version, row.track, row.split)
    best = best_released(submission, row.gold_version_id)
    if best is None:
        return row
    new, old = codes(row.outcomes), codes(best[1].outcomes)
    if paper is not None and new.shape == old.shape == paper.shape:
        new, old = new[paper], old[paper]  # the release's examples: what both were given
    if releases(gold, new, old):
        return row
    submission.shown_submission_id = best[0].id
    submission.visibility, submission.published_at = Visibility.PRIVATE.value, None
    return best[1]


def message(submission: Submission) -> str | None:
    """What the team is told about a withheld submission; None when it was released."""
    if submission.shown_submission_id is None:
        return None
    return (f"not significantly better than submission #{submission.shown_submission_id}: "
            f"its released scores are shown, not this submission's")
