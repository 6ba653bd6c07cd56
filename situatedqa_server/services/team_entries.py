"""A team's own submissions, as its list pages show them (the site's and the API's)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from ..extensions import db
from ..models import Score, Submission
from . import gold_store, scoring


def team_submissions(team_id: int) -> Sequence[Submission]:
    """The team's submissions that are not deleted, newest first."""
    return db.session.scalars(
        select(Submission).where(Submission.team_id == team_id,
                                 Submission.deleted_at.is_(None))
        .order_by(Submission.created_at.desc(), Submission.id.desc())).all()


def released_primary(rows: Sequence[Submission]) -> dict[int, float | None]:
    """Each submission's released primary metric on the active gold (one query; under the
    Ladder a withheld submission shows the score it is shown with)."""
    if not rows:  # nothing uploaded yet (maybe no gold imported either)
        return {}
    shown = {s.id: scoring.shown_id(s) for s in rows}
    version_id = gold_store.active_version().id
    found = dict(db.session.execute(select(Score.submission_id, Score.primary_metric).where(
        Score.gold_version_id == version_id,
        Score.submission_id.in_(set(shown.values())))).all())
    return {ident: found.get(target) for ident, target in shown.items()}
