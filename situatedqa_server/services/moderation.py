"""The organizers' list of every submission: a search over method, team, file, track and id,
in pages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, or_, select

from ..extensions import db
from ..models import Submission, Team


@dataclass(frozen=True)
class SubmissionPage:
    """One page of the organizers' submission list."""

    rows: Sequence[Submission]
    page: int
    pages: int
    total: int


def search_submissions(search: str, page: int, page_size: int) -> SubmissionPage:
    """Submissions matching a search (method, team or file name, a track, an id), newest
    first; the page is clamped to the pages there are."""
    query = select(Submission).join(Team, Team.id == Submission.team_id)
    if search:
        escaped = search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        matches: list[ColumnElement[bool]] = [column.ilike(pattern, escape="\\") for column in (
            Submission.method_name, Team.name, Submission.filename)]
        matches.append(Submission.track == search)
        if search.isdigit() and len(search) < 10:
            matches.append(Submission.id == int(search))
        query = query.where(or_(*matches))
    total = db.session.scalar(select(func.count()).select_from(query.subquery())) or 0
    pages = max(1, -(-total // page_size))
    page = min(max(1, page), pages)
    rows = db.session.scalars(query.order_by(Submission.id.desc())
                              .limit(page_size).offset((page - 1) * page_size)).all()
    return SubmissionPage(rows, page, pages, total)
