"""Who may see or change a submission (pages and API alike), visibility changes by owners
and moderation by organizers, each written to the audit log."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, false, or_

from ..extensions import db
from ..models import Submission, User, Visibility, utcnow
from . import audit, board
from .errors import ServiceError


class NoSuchSubmission(ServiceError):
    """No live submission with this id that the caller may see (or change).

    A 404 in the one error shape (API) or the error page: missing, deleted and someone
    else's private submissions look alike, so the answer is no existence oracle.
    """

    status = 404
    code = "not_found"

    def __init__(self, submission_id: int) -> None:
        super().__init__("no such submission")
        self.submission_id = submission_id


def owns(user: User | None, submission: Submission) -> bool:
    """The user's team made the submission, or the user is an organizer."""
    return user is not None and (user.is_admin or user.team_id == submission.team_id)


def is_listed(submission: Submission) -> bool:
    """Published and not hidden by organizers: anyone may see it."""
    return submission.is_public and not submission.hidden


def may_see(user: User | None, submission: Submission) -> bool:
    """A live submission that is the user's team's (organizers: any) or published and shown."""
    return submission.deleted_at is None and (owns(user, submission) or is_listed(submission))


def may_change(user: User | None, submission: Submission) -> bool:
    """Publish, withdraw, delete and per-example rows: the user's team's live submission
    (organizers: any)."""
    return submission.deleted_at is None and owns(user, submission)


def seen_clause(user: User | None) -> ColumnElement[bool]:
    """may_see as a SQL condition on Submission (organizers are not widened here: pickers
    show them what a team member would see plus their own team's)."""
    own = Submission.team_id == user.team_id if user is not None else false()
    listed = and_(*board.listed_where())
    return and_(Submission.deleted_at.is_(None), or_(own, listed))


def visible(submission_id: int, user: User | None) -> Submission:
    """The submission if the user may see it; NoSuchSubmission otherwise."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or not may_see(user, submission):
        raise NoSuchSubmission(submission_id)
    return submission


def changeable(submission_id: int, user: User | None) -> Submission:
    """The submission if the user may change it; NoSuchSubmission otherwise."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or not may_change(user, submission):
        raise NoSuchSubmission(submission_id)
    return submission


class NotReleased(ServiceError):
    """The Ladder withheld this submission's scores, so it cannot be published."""

    status = 409
    code = "not_released"

    def __init__(self, submission: Submission) -> None:
        super().__init__(f"submission #{submission.id} cannot be published: it was not "
                         "significantly better than submission "
                         f"#{submission.shown_submission_id}, so its scores were not "
                         "released; publish that one instead",
                         {"shown_submission_id": submission.shown_submission_id})


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
