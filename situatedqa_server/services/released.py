"""A submission's released score: what its plots, diagnostics and exports are drawn from.

One rule for all of them: the visitor may see the submission, the Ladder did not withhold
its scores, and it has a score on the active gold version.
"""

from __future__ import annotations

from ..models import Score, Submission, User
from . import ladder, scoring, visibility
from .errors import NotFound


class NoReleasedScore(NotFound):
    """A visible submission with no score to show: withheld by the Ladder, or unscored
    against the active gold version."""


def released_score(submission_id: int, user: User | None) -> tuple[Submission, Score]:
    """A submission the user may see and its score on the active gold; NoSuchSubmission or
    NoReleasedScore otherwise."""
    submission = visibility.visible(submission_id, user)
    if (withheld := ladder.message(submission)) is not None:
        raise NoReleasedScore(f"submission {submission.id} is {withheld}")
    score = scoring.score_for(submission)
    if score is None:
        raise NoReleasedScore(f"submission {submission.id} has no score against the active "
                              "gold version")
    return submission, score
