"""Leaderboard queries: ranked in SQL on the indexed primary metric, one page at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    false,
    func,
    literal,
    null,
    select,
    union_all,
)

from benchmark import ID_TRACKS, METRIC_LABELS, SPLITS, TRACK_INFO
from benchmark.scoring import source_slug

from ..extensions import db
from ..models import GoldVersion, ModelType, ReportedEntry, Score, Submission, Team, Visibility
from . import gold_store, versions

MAX_PER_PAGE = 1000
#: The last page number accepted: a larger one would overflow the database's OFFSET.
MAX_PAGE = 1_000_000
TEXT_COLUMNS = ("method_name", "team", "submitted_at")


@dataclass(frozen=True)
class BoardQuery:
    """Which leaderboard page to show: track, split, order, filters, page."""

    track: str
    split: str
    sort: str | None = None
    ascending: bool = False
    hide_baselines: bool = False
    model_type: str | None = None
    fine_tuned: bool | None = None
    page: int = 1
    per_page: int = 50
    #: A published gold version's name; None for the active version.
    version: str | None = None


@dataclass
class Board:
    """One page of a leaderboard and the columns it shows."""

    query: BoardQuery
    primary: str
    columns: list[str]
    entries: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    version: str = ""

    @property
    def pages(self) -> int:
        """The number of pages."""
        return max(1, -(-self.total // self.query.per_page))


def columns_of(track: str, split: str) -> list[str]:
    """The track's metric columns; identification adds F1 per source dataset and ROC AUC."""
    columns = list(TRACK_INFO[track].metrics)
    if track in ID_TRACKS:
        sources = gold_store.get_split(track, split).sources
        columns += [f"f1_{source_slug(s)}" for s in sources] + ["auc"]
    return columns


def column_label(name: str) -> str:
    """A header for a metric column, e.g. F1 (nq_table) for f1_nq_table."""
    if name in METRIC_LABELS:
        return METRIC_LABELS[name]
    metric, _, source = name.partition("_")
    return f"{METRIC_LABELS.get(metric, metric)} ({source})"


def _sort_expressions(q: BoardQuery, primary: str) -> tuple[ColumnElement[Any], ...]:
    """The sort key of the submission and of the reported rows (same column in the union)."""
    sort = q.sort or primary
    if sort == primary:
        return Score.primary_metric, ReportedEntry.primary_metric
    if sort == "method_name":
        return Submission.method_name, ReportedEntry.method_name
    if sort == "team":
        return Team.name, null()
    if sort == "submitted_at":
        return Submission.created_at, ReportedEntry.created_at
    return Score.metrics[sort].as_float(), ReportedEntry.metrics[sort].as_float()


def _rows(q: BoardQuery, primary: str, version_id: int) -> Select[Any]:
    """Every visible entry with its primary-metric rank and sort key, as one union."""
    submission_sort, reported_sort = _sort_expressions(q, primary)
    rank = func.rank().over(order_by=Score.primary_metric.desc().nulls_last())
    submissions = (
        select(literal("submission").label("kind"), Submission.id.label("id"),
               rank.label("rank"), submission_sort.label("sort_value"),
               Submission.is_baseline.label("baseline"), Submission.model_type.label("model"),
               Submission.fine_tuned.label("fine_tuned"))
        .join(Score, Score.submission_id == Submission.id).join(Team)
        .where(Score.gold_version_id == version_id, Score.track == q.track,
               Score.split == q.split, Submission.visibility == Visibility.PUBLIC.value,
               Submission.hidden.is_(False), Submission.deleted_at.is_(None)))
    reported = (
        select(literal("reported"), ReportedEntry.id, null(), reported_sort, false(),
               ReportedEntry.model_type, ReportedEntry.fine_tuned)
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
    """One page of the leaderboard of a track and split, against the chosen gold version."""
    primary = TRACK_INFO[q.track].primary
    board = Board(q, primary, columns_of(q.track, q.split))
    version = board_version(q)
    board.version, version_id = version.name, version.id
    rows = _rows(q, primary, version_id).subquery()
    order = rows.c.sort_value.asc() if q.ascending else rows.c.sort_value.desc()
    # The total rides along as a window count: one pass over the rows instead of two.
    page = db.session.execute(
        select(rows.c.kind, rows.c.id, rows.c.rank, func.count().over().label("total"))
        .order_by(order.nulls_last(), rows.c.kind.desc(), rows.c.id)
        .limit(q.per_page).offset((q.page - 1) * q.per_page)).all()
    board.total = page[0].total if page else (
        db.session.scalar(select(func.count()).select_from(rows)) or 0)
    board.entries = _entries(page, version_id)
    return board


def _entries(page: list[Any], version_id: int) -> list[dict[str, Any]]:
    """Entry dicts for one page, fetched by id in two queries, in page order."""
    submission_ids = [row.id for row in page if row.kind == "submission"]
    reported_ids = [row.id for row in page if row.kind == "reported"]
    scored = {
        submission.id: (submission, score, team)
        for submission, score, team in db.session.execute(
            select(Submission, Score, Team).join(Score).join(Team).where(
                Submission.id.in_(submission_ids), Score.gold_version_id == version_id))
    }
    reported = {
        entry.id: entry for entry in db.session.scalars(
            select(ReportedEntry).where(ReportedEntry.id.in_(reported_ids)))
    }
    return [
        submission_entry(*scored[row.id], rank=row.rank) if row.kind == "submission"
        else reported_entry(reported[row.id])
        for row in page
    ]


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
        "source": None,
    }


def reported_entry(entry: ReportedEntry) -> dict[str, Any]:
    """A leaderboard entry for a number reported in the paper (no CI, no rank)."""
    return {
        "id": None, "rank": None, "method_name": entry.method_name, "team": None,
        "metrics": entry.metrics, "ci": {}, "baseline": False, "reported": True,
        "submitted_at": None, "paper_url": entry.paper_url, "code_url": None,
        "model_type": entry.model_type, "fine_tuned": entry.fine_tuned, "flag": None,
        "source": entry.source,
    }


class BadBoardQuery(ValueError):
    """A leaderboard request named an unknown track, split, column or filter."""


class UnknownVersion(BadBoardQuery):
    """A leaderboard request named a gold version that is unknown or not yet published."""


def board_version(q: BoardQuery) -> GoldVersion:
    """The gold version a board shows: the named published one, else the active one."""
    if q.version is None:
        return gold_store.active_version()
    version = versions.version_named(q.version)
    if version is None:
        raise UnknownVersion(f"no published gold version named {q.version!r}")
    return version


def parse_board_query(track: str, args: Any, per_page_default: int) -> BoardQuery:
    """A BoardQuery from request arguments (split, sort, order, filters, page, per_page)."""
    if track not in TRACK_INFO:
        raise BadBoardQuery(f"unknown track {track!r}")
    split = args.get("split", "test")
    if split not in SPLITS:
        raise BadBoardQuery(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    sort = args.get("sort") or None
    if sort is not None and sort not in (*columns_of(track, split), *TEXT_COLUMNS):
        raise BadBoardQuery(f"cannot sort by {sort!r}")
    model_type = args.get("model_type") or None
    if model_type is not None and model_type not in {m.value for m in ModelType}:
        raise BadBoardQuery(f"unknown model type {model_type!r}")
    fine_tuned = {"yes": True, "no": False, "": None}.get(args.get("fine_tuned", ""), None)
    page = args.get("page", 1, type=int) or 1
    if page > MAX_PAGE:
        raise BadBoardQuery(f"the page must be between 1 and {MAX_PAGE}")
    per_page = args.get("per_page", per_page_default, type=int) or per_page_default
    return BoardQuery(
        track=track, split=split, sort=sort, ascending=args.get("order") == "asc",
        hide_baselines=args.get("hide_baselines") in ("1", "yes", "true", "on"),
        model_type=model_type, fine_tuned=fine_tuned, page=max(1, page),
        per_page=min(max(1, per_page), MAX_PER_PAGE), version=args.get("version") or None)
