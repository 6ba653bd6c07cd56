"""Visibility changes by owners and moderation by organizers, each written to the audit log."""

from __future__ import annotations

from ..extensions import db
from ..models import Submission, User, Visibility, utcnow
from . import audit


class NotReleased(Exception):
    """The Ladder withheld this submission's scores, so it cannot be published."""

    def __init__(self, submission: Submission) -> None:
        super().__init__(f"submission #{submission.id} cannot be published: it was not "
                         "significantly better than submission "
                         f"#{submission.shown_submission_id}, so its scores were not "
                         "released; publish that one instead")


def publish(submission: Submission, actor: User | None) -> None:
    """Show the submission on the leaderboard (NotReleased if the Ladder withheld it)."""
    if not submission.is_released:
        raise NotReleased(submission)
    if not submission.is_public:
        submission.visibility = Visibility.PUBLIC.value
        submission.published_at = utcnow()
        audit.record("publish", submission, actor)
    db.session.commit()


def withdraw(submission: Submission, actor: User | None) -> None:
    """Make the submission private again."""
    if submission.is_public:
        submission.visibility = Visibility.PRIVATE.value
        audit.record("withdraw", submission, actor)
    db.session.commit()


def delete(submission: Submission, actor: User | None) -> None:
    """Soft-delete: the row stays, so its quota is not given back."""
    if submission.deleted_at is None:
        submission.deleted_at = utcnow()
        audit.record("delete", submission, actor)
    db.session.commit()


def hide(submission: Submission, actor: User | None, reason: str) -> None:
    """Organizers: remove an entry from the leaderboard, with a reason."""
    submission.hidden = True
    submission.hidden_reason = reason
    audit.record("hide", submission, actor, reason)
    db.session.commit()


def unhide(submission: Submission, actor: User | None, reason: str = "") -> None:
    """Organizers: show a hidden entry again."""
    submission.hidden = False
    submission.hidden_reason = None
    audit.record("unhide", submission, actor, reason)
    db.session.commit()


def flag(submission: Submission, actor: User | None, reason: str) -> None:
    """Organizers: mark an entry on the leaderboard with a reason."""
    submission.flag_reason = reason
    audit.record("flag", submission, actor, reason)
    db.session.commit()


def unflag(submission: Submission, actor: User | None, reason: str = "") -> None:
    """Organizers: remove a flag."""
    submission.flag_reason = None
    audit.record("unflag", submission, actor, reason)
    db.session.commit()
