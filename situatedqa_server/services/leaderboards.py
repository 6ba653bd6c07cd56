"""Leaderboard queries: ranked in SQL on the indexed primary metric, one page at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    Select,
    case,
    false,
    func,
    literal,
    null,
    select,
    union_all,
)

from benchmark import TRACK_INFO
from benchmark.tracks import FRESH

from ..extensions import db
from ..models import GoldVersion, ReportedEntry, Score, Submission, Team
from . import board, board_cache, gold_store, versions
from .board import BoardFilter, BoardQuery, UnknownVersion, columns_of, fresh_shown, fresh_total


@dataclass
class Board:
    """One page of a leaderboard and the columns it shows."""

    query: BoardQuery
    primary: str
    columns: list[str]
    entries: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    version: str = ""
    #: The id of that gold version.
    version_id: int = 0

    @property
    def pages(self) -> int:
        """The number of pages."""
        return max(1, -(-self.total // self.query.per_page))


def _sort_expressions(q: BoardQuery, primary: str, version_id: int) -> tuple[Any, ...]:
    """The sort key of the submission and of the reported rows (same column in the union)."""
    sort = q.sort or primary
    if sort == FRESH:
        total = fresh_total(q.track, version_id)
        return (case((fresh_shown(Score.counts, total), Score.sort_metrics[sort]
                      .as_float()), else_=null()), null())
    if sort == primary:
        return Score.primary_metric, ReportedEntry.primary_metric
    if sort == "method_name":
        return Submission.method_name, ReportedEntry.method_name
    if sort == "team":
        return Team.name, null()
    if sort == "submitted_at":
        return Submission.created_at, ReportedEntry.created_at
    return Score.sort_metrics[sort].as_float(), ReportedEntry.metrics[sort].as_float()


def _rows(q: BoardQuery, version_id: int,
          sort: tuple[Any, Any] | None = None) -> Select[Any]:
    """Every visible entry the filters let through, as one union of kind, id and filter
    columns; given the sort keys of the submission and of the reported rows (see
    _sort_expressions), also each entry's primary-metric rank and sort key."""
    columns = (Submission.id.label("id"), Submission.is_baseline.label("baseline"),
               Submission.model_type.label("model"), Submission.fine_tuned.label("fine_tuned"))
    visible = board.entries_where(q.track, q.split, version_id)
    submissions: Select[*tuple[Any, ...]]
    if sort is None:
        submissions = (select(literal("submission").label("kind"), *columns)
                       .join(Score, Score.submission_id == Submission.id).where(*visible))
    else:
        # The sort key is read in a subquery that PostgreSQL may not flatten (OFFSET 0), so
        # that the rank's window sorts narrow rows: flattened, each row would carry its
        # whole metrics document through that sort, and spill it to disk.
        keyed = (select(*columns, Score.primary_metric.label("primary"),
                        sort[0].label("sort_value"))
                 .join(Score, Score.submission_id == Submission.id)
                 .join(Team)  # a sort key may be the team's name (team_id is never null)
                 .where(*visible).offset(0).subquery())
        submissions = select(
            literal("submission").label("kind"), keyed.c.id, keyed.c.baseline, keyed.c.model,
            keyed.c.fine_tuned,
            board.rank_in(q.sort or "", keyed.c.primary, keyed.c.sort_value).label("rank"),
            keyed.c.sort_value)
    reported = (
        select(literal("reported"), ReportedEntry.id, false(), ReportedEntry.model_type,
               ReportedEntry.fine_tuned, *(() if sort is None else (null(), sort[1])))
        .where(ReportedEntry.track == q.track, ReportedEntry.split == q.split))
    union = union_all(submissions, reported).subquery()
    rows = select(union)
    if q.hide_baselines:
        rows = rows.where(union.c.baseline.is_(False), union.c.kind == "submission")
    if q.model_type:
        rows = rows.where(union.c.model == q.model_type)
    if q.fine_tuned is not None:
        rows = rows.where(union.c.fine_tuned.is_(q.fine_tuned))
    return rows


def load_board(q: BoardQuery) -> Board:
    """One page of the leaderboard of a track and split, against the chosen gold version.

    The page is cut in SQL (ORDER BY … LIMIT/OFFSET on the union of entries, the rank from
    a window over the primary metric) and its entry count read apart, so a read after the
    board changed fetches one page, not every entry. Both are kept in the board cache
    (services/board_cache.py) under the board's generation, with the page's entries.
    """
    primary = TRACK_INFO[q.track].primary
    stamp = board_cache.stamp(q.track, q.split)
    board = Board(q, primary, [])
    board.version_id, board.version = board_version_ref(q)
    board.columns = columns_of(q.track, q.split, board.version_id)
    data = board_cache.cache().board(
        (q.track, q.split, board.version_id, stamp.board, stamp.every))
    filters = BoardFilter.of(q)
    board.total = data.computed(("count", filters), lambda: _count(q, board.version_id))
    start = (q.page - 1) * q.per_page
    page: tuple[PageRow, ...] = ()
    if start < board.total:
        page_key = ("page", q.sort or primary, q.ascending, filters, start, q.per_page)
        page = data.computed(page_key, lambda: _page(q, primary, board.version_id, start))
    board.entries = _entries(page, board.version_id, data.entries)
    if FRESH in board.columns:
        total = fresh_total(q.track, board.version_id)
        board.entries = [entry if entry.get("reported") or _fresh_kept(entry, total)
                         else _without_fresh(entry) for entry in board.entries]
    return board


def _fresh_kept(entry: dict[str, Any], total: int) -> bool:
    """Whether an entry's `fresh` is shown (board.fresh_shown), or it has none."""
    return FRESH not in (entry.get("metrics") or {}) or bool(
        fresh_shown(entry.get("counts") or {}, total))


def _without_fresh(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry without its `fresh`: it has not answered every published release."""
    return {**entry, **{part: {k: v for k, v in (entry.get(part) or {}).items() if k != FRESH}
                        for part in ("metrics", "ci", "counts")}}


#: One entry of a page as the cache keeps it: kind ("s" submission, "r" paper row), id and
#: rank (0: none).
PageRow = tuple[str, int, int]


def _page(q: BoardQuery, primary: str, version_id: int, start: int) -> tuple[PageRow, ...]:
    """The entries of one page in the query's order (ties: submissions first, then by id)."""
    rows = _rows(q, version_id, _sort_expressions(q, primary, version_id)).subquery()
    order = rows.c.sort_value.asc() if q.ascending else rows.c.sort_value.desc()
    result = db.session.execute(
        select(rows.c.kind, rows.c.id, rows.c.rank)
        .order_by(order.nulls_last(), rows.c.kind.desc(), rows.c.id)
        .limit(q.per_page).offset(start)).all()
    return tuple((row.kind[0], row.id, row.rank or 0) for row in result)


def _count(q: BoardQuery, version_id: int) -> int:
    """How many entries the board's filters let through (no rank, no sort key)."""
    rows = _rows(q, version_id).subquery()
    return int(db.session.execute(select(func.count()).select_from(rows)).scalar_one())


def _entries(page: tuple[PageRow, ...], version_id: int,
             known: dict[tuple[str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """Entry dicts for one page in page order: cached ones, the rest in two Core queries."""
    wanted = [(kind, ident) for kind, ident, _ in page]
    missing_s = [ident for kind, ident in wanted if kind == "s" and ("s", ident) not in known]
    missing_r = [ident for kind, ident in wanted if kind == "r" and ("r", ident) not in known]
    found: dict[tuple[str, int], dict[str, Any]] = {}
    if missing_s:
        for row in db.session.execute(
                select(*SUBMISSION_COLUMNS).join(Score, Score.submission_id == Submission.id)
                .join(Team, Team.id == Submission.team_id)
                .where(Submission.id.in_(missing_s), Score.gold_version_id == version_id)):
            found["s", row.id] = entry_of_row(row)
    if missing_r:
        for row in db.session.execute(select(*REPORTED_COLUMNS).where(
                ReportedEntry.id.in_(missing_r))):
            found["r", row.id] = reported_entry(row)
    if len(known) + len(found) > board_cache.MAX_ENTRIES:
        known.clear()
    known.update(found)
    entries = []
    for (kind, ident), (_, _, rank) in zip(wanted, page, strict=True):
        entry = known.get((kind, ident))
        if entry is not None:  # None only when the row vanished since the stamp was read
            entries.append({**entry, "rank": rank or None} if kind == "s" else dict(entry))
    return entries


#: The columns an entry shows, read with Core (no ORM objects on the hot path).
SUBMISSION_COLUMNS = (
    Submission.id, Submission.method_name, Team.name.label("team"), Score.metrics, Score.ci,
    Score.counts, Submission.is_baseline, Submission.created_at, Submission.paper_url,
    Submission.code_url, Submission.model_type, Submission.fine_tuned, Submission.flag_reason,
    Submission.knowledge_cutoff)
REPORTED_COLUMNS = (
    ReportedEntry.id, ReportedEntry.method_name, ReportedEntry.metrics, ReportedEntry.paper_url,
    ReportedEntry.model_type, ReportedEntry.fine_tuned, ReportedEntry.source)


def entry_of_row(row: Any) -> dict[str, Any]:
    """A leaderboard entry from a row of SUBMISSION_COLUMNS (rank filled in by the page)."""
    return {
        "id": row.id, "rank": None, "method_name": row.method_name, "team": row.team,
        "metrics": row.metrics, "ci": row.ci, "counts": row.counts,
        "baseline": row.is_baseline, "reported": False,
        "submitted_at": iso(row.created_at), "paper_url": row.paper_url,
        "code_url": row.code_url, "model_type": row.model_type, "fine_tuned": row.fine_tuned,
        "flag": row.flag_reason, "source": None,
        "knowledge_cutoff": cutoff_text(row.knowledge_cutoff),
    }


def cutoff_text(cutoff: date | None) -> str | None:
    """A declared knowledge cutoff as entries, the API and exports show it (YYYY-MM-DD)."""
    return cutoff.isoformat() if cutoff else None


def iso(moment: datetime | None) -> str | None:
    """A stored (naive UTC) timestamp as ISO 8601 with Z."""
    return moment.isoformat(timespec="seconds") + "Z" if moment else None


def submission_entry(submission: Submission, score: Score, team: Team,
                     rank: int | None) -> dict[str, Any]:
    """A leaderboard entry for a published submission."""
    return {
        "id": submission.id, "rank": rank, "method_name": submission.method_name,
        "team": team.name, "metrics": score.metrics, "ci": score.ci,
        "baseline": submission.is_baseline, "reported": False,
        "submitted_at": iso(submission.created_at), "paper_url": submission.paper_url,
        "code_url": submission.code_url, "model_type": submission.model_type,
        "fine_tuned": submission.fine_tuned, "flag": submission.flag_reason,
        "source": None, "knowledge_cutoff": cutoff_text(submission.knowledge_cutoff),
    }


def reported_entry(entry: Any) -> dict[str, Any]:
    """A leaderboard entry for a number reported in the paper (no CI, no rank)."""
    return {
        "id": None, "rank": None, "method_name": entry.method_name, "team": None,
        "metrics": entry.metrics, "ci": {}, "counts": {}, "baseline": False, "reported": True,
        "submitted_at": None, "paper_url": entry.paper_url, "code_url": None,
        "model_type": entry.model_type, "fine_tuned": entry.fine_tuned, "flag": None,
        "source": entry.source, "knowledge_cutoff": None,
    }


def board_version_ref(q: BoardQuery) -> tuple[int, str]:
    """(id, name) of the gold version a board shows, cached under the every-board stamp."""
    every = board_cache.stamp(q.track, q.split).every

    def read() -> tuple[int, str]:
        version = board_version(q)
        return version.id, version.name
    return board_cache.cache().shared(every, ("version", q.version), read)


def board_version(q: BoardQuery) -> GoldVersion:
    """The gold version a board shows: the named published one, else the active one."""
    if q.version is None:
        return gold_store.active_version()
    version = versions.version_named(q.version)
    if version is None:
        raise UnknownVersion(f"no published gold version named {q.version!r}")
    return version
