"""Test-split quotas per team and track, enforced under a lock, and the rejected-upload cap.

What counts: an accepted test-split submission counts once against the UTC day it was made
and against the total; a rejected file never does (it counts against REJECTED_DAILY_CAP);
deleting a submission gives nothing back. Days are UTC calendar days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import Select, TextClause, bindparam, select, text, update

from benchmark import HIDDEN_SPLIT

from ..extensions import db, upsert_insert
from ..models import QuotaCounter, RejectedUpload
from .errors import ServiceError

TOTAL = "total"
#: Uploads to the hidden split count against the quotas: only its scores can be probed.
QUOTA_SPLIT = HIDDEN_SPLIT


class QuotaExceeded(ServiceError):
    """A team has used up a quota; `details` says which and when it resets."""

    status = 429
    code = "quota_exceeded"

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message, details, headers=retry_after(details))
        self.details: dict[str, Any] = details


@dataclass(frozen=True)
class QuotaUsage:
    """Used and allowed test submissions of a team on a track."""

    used_today: int
    daily_limit: int
    used_total: int
    total_limit: int

    @property
    def remaining(self) -> int:
        """Submissions still allowed today."""
        return max(0, min(self.daily_limit - self.used_today, self.total_limit - self.used_total))


def utc_today() -> date:
    """Today's date in UTC, the quota day."""
    return datetime.now(UTC).date()


def next_reset() -> str:
    """When the daily quota resets: the next UTC midnight, ISO 8601."""
    midnight = datetime.combine(utc_today() + timedelta(days=1), time(0), tzinfo=UTC)
    return midnight.isoformat().replace("+00:00", "Z")


def retry_after(details: dict[str, Any]) -> dict[str, str]:
    """A Retry-After header (seconds to the reset) for a quota that resets; none otherwise."""
    if not details.get("resets_at"):
        return {}
    moment = datetime.fromisoformat(details["resets_at"])
    return {"Retry-After": str(max(1, int((moment - datetime.now(UTC)).total_seconds()) + 1))}


def begin_locked() -> None:
    """End the session's transaction and start one that holds the write lock (SQLite).

    On PostgreSQL the rows are locked by the quota upsert instead. Nothing may touch the
    session between the commit and the new connection, or a plain BEGIN would run.
    On PostgreSQL the reads before it may share the transaction (each statement sees what
    is committed), so it does nothing there: committing would expire the loaded user and
    team and cost two more round trips for every upload.
    """
    if db.session.get_bind().dialect.name != "sqlite":
        return
    db.session.commit()
    db.session.connection(execution_options={"sqlite_immediate": True})


def _insert_missing(model: type[Any], **values: Any) -> None:
    """INSERT … ON CONFLICT DO NOTHING, so concurrent first uploads do not collide."""
    db.session.execute(upsert_insert(model).values(**values).on_conflict_do_nothing())


def usage(team_id: int, track: str) -> QuotaUsage:
    """Current use of the test quota (a snapshot: the locked check is in consume())."""
    rows = dict(db.session.execute(
        select(QuotaCounter.period, QuotaCounter.used).where(
            QuotaCounter.team_id == team_id, QuotaCounter.track == track,
            QuotaCounter.period.in_([TOTAL, utc_today().isoformat()]))).all())
    config = current_app.config
    return QuotaUsage(rows.get(utc_today().isoformat(), 0), config["TEST_DAILY_QUOTA"],
                      rows.get(TOTAL, 0), config["TEST_TOTAL_QUOTA"])


def check(usage_now: QuotaUsage) -> None:
    """Raise QuotaExceeded when no submission is left (compares with >=, never ==)."""
    details: dict[str, Any] = {
        "used_today": usage_now.used_today, "daily_limit": usage_now.daily_limit,
        "used_total": usage_now.used_total, "total_limit": usage_now.total_limit,
    }
    if usage_now.used_total >= usage_now.total_limit:
        raise QuotaExceeded(
            f"your team has used all {usage_now.total_limit} test submissions on this track",
            {**details, "resets_at": None})
    if usage_now.used_today >= usage_now.daily_limit:
        raise QuotaExceeded(
            f"your team has used its {usage_now.daily_limit} test submissions on this track "
            "for today (UTC)", {**details, "resets_at": next_reset()})


def _consume_statement() -> TextClause:
    """consume()'s upsert, as one SQL text valid on PostgreSQL and SQLite (3.35+).

    SQLAlchemy cannot cache a multi-row VALUES insert (its cache key is None), so the Core
    form was compiled again by every upload (0.55 ms); a text statement is compiled once.
    The names come from the table, so they cannot drift from the model.
    """
    name, columns = QuotaCounter.__tablename__, QuotaCounter.__table__.c
    team_id, track, period, used = (columns[key].name for key in (
        "team_id", "track", "period", "used"))
    return text(
        f"INSERT INTO {name} ({team_id}, {track}, {period}, {used}) "
        f"VALUES (:team_id, :track, '{TOTAL}', 1), (:team_id, :track, :today, 1) "
        f"ON CONFLICT ({team_id}, {track}, {period}) "
        f"DO UPDATE SET {used} = {name}.{used} + 1 RETURNING {period}, {used}")


#: Run by every test upload: built once.
_CONSUME = _consume_statement()


def consume(team_id: int, track: str) -> None:
    """Inside begin_locked(): count one submission and check the quota, or raise.

    One statement: both counters are upserted with used + 1 and their new values returned,
    locking the rows (total first, then the day: concurrent requests cannot deadlock) until
    the upload's transaction ends. Over a limit, QuotaExceeded; the caller's rollback then
    takes the increment back, so nothing is spent.
    """
    today = utc_today().isoformat()
    used: dict[str, int] = dict(db.session.execute(
        _CONSUME, {"team_id": team_id, "track": track, "today": today}).all())
    config = current_app.config
    check(QuotaUsage(used[today] - 1, config["TEST_DAILY_QUOTA"], used[TOTAL] - 1,
                     config["TEST_TOTAL_QUOTA"]))


def _early_statement() -> Select[Any]:
    """check_before_scoring()'s read (team_id, track, day and period bound)."""
    def counter(period: Any) -> Any:
        return select(QuotaCounter.used).where(
            QuotaCounter.team_id == bindparam("team_id"),
            QuotaCounter.track == bindparam("track"),
            QuotaCounter.period == period).scalar_subquery()

    rejected = select(RejectedUpload.count).where(
        RejectedUpload.team_id == bindparam("team_id"),
        RejectedUpload.day == bindparam("day")).scalar_subquery()
    return select(rejected, counter(bindparam("period")), counter(TOTAL))


#: Built once: the statement's construction cost more than its execution.
_EARLY = _early_statement()


def check_before_scoring(team_id: int, track: str, split: str) -> None:
    """The early answers of an upload, read in one round trip: the rejected-upload cap, and
    on the quota split the quota (a snapshot: the locked check is in consume())."""
    today = utc_today()
    rejected, used_today, used_total = db.session.execute(_EARLY, {
        "team_id": team_id, "track": track, "day": today, "period": today.isoformat()}).one()
    check_rejection_cap(rejected or 0)
    if split == QUOTA_SPLIT:
        config = current_app.config
        check(QuotaUsage(used_today or 0, config["TEST_DAILY_QUOTA"], used_total or 0,
                         config["TEST_TOTAL_QUOTA"]))


def check_rejection_cap(rejected_today: int) -> None:
    """Raise QuotaExceeded when `rejected_today` reached the cap."""
    cap = current_app.config["REJECTED_DAILY_CAP"]
    if rejected_today >= cap:
        raise QuotaExceeded(
            f"your team has had {cap} rejected uploads today (UTC); check files offline with "
            "`python -m benchmark score` and retry tomorrow",
            {"rejected_today": cap, "rejected_daily_cap": cap, "resets_at": next_reset()})


def record_rejection(team_id: int) -> None:
    """Count one rejected upload, in its own committed transaction."""
    begin_locked()
    _insert_missing(RejectedUpload, team_id=team_id, day=utc_today(), count=0)
    db.session.execute(update(RejectedUpload).where(
        RejectedUpload.team_id == team_id, RejectedUpload.day == utc_today())
        .values(count=RejectedUpload.count + 1))
    db.session.commit()
