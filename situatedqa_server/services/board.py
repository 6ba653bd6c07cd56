"""What a board is: which entries it shows, how it ranks, which columns it offers and which
queries it answers.

Every reader of a board (the leaderboard, the rank groups and the Ladder's walk, the plots,
the version pages' rank changes and drift, snapshots through the leaderboard, the OpenAPI
description) takes its rules from here, so a rule changes in one place.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue, create_model
from sqlalchemy import case, func, null

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO
from benchmark.scoring import source_slug
from benchmark.tracks import FRESH, PROVENANCE_METRICS, is_window
from benchmark.windows import window_name

from ..extensions import db
from ..inputs import YES_WORDS
from ..models import GoldVersion, ModelType, Score, Submission, Visibility
from ..schema_types import NO_CONTROLS, Split, YesNo, parameters, value_problem
from . import board_cache, gold_store, input_releases
from .errors import ServiceError, UnknownTrack

MAX_PER_PAGE = 1000
#: The last page number accepted: a larger one would overflow the database's OFFSET.
MAX_PAGE = 1_000_000
TEXT_COLUMNS = ("method_name", "team", "submitted_at")


# --- which entries, in which order ----------------------------------------------------------


def board_where(track: str, split: str, version_id: int) -> tuple[Any, ...]:
    """The SQL conditions of a board's scores (all in the covering index ix_score_board)."""
    return (Score.gold_version_id == version_id, Score.track == track, Score.split == split)


def listed_where() -> tuple[Any, ...]:
    """Published and not hidden by the organizers, as SQL conditions on Submission: what
    anyone may see of another team (visibility.seen_clause adds the team's own)."""
    return (Submission.visibility == Visibility.PUBLIC.value, Submission.hidden.is_(False))


def shown_where() -> tuple[Any, ...]:
    """The visibility rule of every board, as SQL conditions on Submission: listed, and not
    deleted."""
    return (*listed_where(), Submission.deleted_at.is_(None))


def entries_where(track: str, split: str, version_id: int) -> tuple[Any, ...]:
    """A board's scores of the entries it shows (join Score to Submission)."""
    return (*board_where(track, split, version_id), *shown_where())


def ranking_order(primary: Any = Score.primary_metric) -> Any:
    """The order a board ranks by: the primary metric, best first, unscored entries last."""
    return primary.desc().nulls_last()


def rank_window(primary: Any = Score.primary_metric) -> Any:
    """A board's rank as SQL: rank() over ranking_order, so tied entries share a rank."""
    return func.rank().over(order_by=ranking_order(primary))


def fresh_total(track: str, version_id: int) -> int:
    """How many fresh examples `fresh` covers on a test board today: those of every
    published input release its version still holds. An entry whose `fresh` counts fewer
    was scored before a held-back release's date; it has not answered every release, so the
    board shows it none (fresh_shown)."""
    version = db.session.get(GoldVersion, version_id)
    releases = input_releases.published(track)
    if version is None or not releases:
        return 0
    try:
        split = gold_store.gold_of(version).get(track, HIDDEN_SPLIT)
    except (gold_store.GoldUnavailable, KeyError, ValueError):
        return 0
    return sum(1 for r in releases if r.gold_version_id <= version.id
               for key in r.keys.get(track, []) if key in split.index)


def fresh_shown(counts: Any, total: int) -> Any:
    """SQL condition (or Python truth, given a dict): an entry's `fresh` is over every
    published release (fresh_total)."""
    if isinstance(counts, dict):
        return total > 0 and counts.get(FRESH) == total
    return counts[FRESH].as_integer() == total


def rank_in(column: str, primary: Any, value: Any) -> Any:
    """The rank a board shows when sorted by `column`: the primary metric's, or, sorted by a
    fresh window, the window's among the entries that answered it (none for the others: a
    window ranks only the entries given its examples)."""
    if not is_window(column):
        return rank_window(primary)
    return case((value.is_(None), null()), else_=rank_window(value))


# --- the query ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class BoardFilter:
    """The entry filters of a board (what its table, charts and state of the art share)."""

    hide_baselines: bool = False
    model_type: str | None = None
    fine_tuned: bool | None = None

    @classmethod
    def of(cls, q: BoardQuery) -> BoardFilter:
        """The filters of a board query."""
        return cls(q.hide_baselines, q.model_type, q.fine_tuned)

    @property
    def active(self) -> bool:
        """Whether any filter hides entries."""
        return self != BoardFilter()

    def submission_where(self) -> tuple[Any, ...]:
        """The SQL conditions on Submission that keep the entries the filters let through."""
        clauses: list[Any] = []
        if self.hide_baselines:
            clauses.append(Submission.is_baseline.is_(False))
        if self.model_type:
            clauses.append(Submission.model_type == self.model_type)
        if self.fine_tuned is not None:
            clauses.append(Submission.fine_tuned.is_(self.fine_tuned))
        return tuple(clauses)

    def query_args(self) -> dict[str, str]:
        """The query-string parameters that ask for these filters."""
        args = {"hide_baselines": "1"} if self.hide_baselines else {}
        if self.model_type:
            args["model_type"] = self.model_type
        if self.fine_tuned is not None:
            args["fine_tuned"] = "yes" if self.fine_tuned else "no"
        return args


# --- the columns -------------------------------------------------------------------------------


def columns_of(track: str, split: str, version_id: int | None = None) -> list[str]:
    """The track's metric columns; identification adds F1 per source dataset and ROC AUC.

    QA tracks end with their optional columns (not in the paper: the lenient metrics, the
    error figures, the knowledge horizon), which the page shows only when picked; they
    never rank. A test board whose gold version (by id; None: the active one) has examples
    whose gold was never published ends with the provenance figures (PROVENANCE_METRICS:
    unreleased, released, contamination gap), optional columns as well.
    """
    info = TRACK_INFO[track]
    # The sources and the versions change only with the every-board stamp.
    every = board_cache.stamp(track, split).every
    columns = ([*info.metrics, *info.optional_metrics] if not info.identification else list(
        board_cache.cache().shared(every, ("columns", track, split),
                                   lambda: _columns_of(track, split))))
    if split == HIDDEN_SPLIT and board_cache.cache().shared(
            every, ("provenance", track, split, version_id),
            lambda: _has_unreleased(track, split, version_id)):
        columns += PROVENANCE_METRICS
    if split == HIDDEN_SPLIT:
        columns += window_columns(track, version_id)
    return columns


def window_columns(track: str, version_id: int | None = None) -> list[str]:
    """A test board's fresh windows (benchmark.windows): `fresh` and one per input release
    published today with examples on the track, made by the board's version (by id; None:
    the active one) or an earlier one. Read on every call: a held-back release appears on
    its date, without any other change to the board."""
    try:
        version = (gold_store.active_version() if version_id is None
                   else db.session.get(GoldVersion, version_id))
    except gold_store.GoldUnavailable:
        return []
    if version is None:
        return []
    releases = [r for r in input_releases.published(track)
                if r.gold_version_id <= version.id]
    return [FRESH, *(window_name(r.name) for r in releases)] if releases else []


def described_columns(track: str, split: str) -> list[str]:
    """sortable_columns, or before any gold is imported the columns the track declares
    (identification's per-source columns need the gold): what the OpenAPI description
    states."""
    try:
        return sortable_columns(track, split)
    except gold_store.GoldUnavailable:
        info = TRACK_INFO[track]
        return [*info.metrics, *info.optional_metrics,
                *(PROVENANCE_METRICS if split == HIDDEN_SPLIT else ()), *TEXT_COLUMNS]


def sortable_columns(track: str, split: str) -> list[str]:
    """What a board query may sort by: the split's metric columns (a test board also by the
    provenance figures, whichever version the query names: they are the same on every test
    board), then the text columns. The OpenAPI description states the same lists."""
    columns = columns_of(track, split)
    if split == HIDDEN_SPLIT:
        columns = [*columns, *(c for c in PROVENANCE_METRICS if c not in columns)]
    return [*columns, *TEXT_COLUMNS]


def _has_unreleased(track: str, split: str, version_id: int | None) -> bool:
    """Whether the board's version (None: the active one) has unreleased examples."""
    try:
        version = (gold_store.active_version() if version_id is None
                   else db.session.get(GoldVersion, version_id))
        return version is not None and gold_store.has_unreleased(version, track, split)
    except gold_store.GoldUnavailable:
        return False


def _columns_of(track: str, split: str) -> list[str]:
    """columns_of, read from the gold."""
    columns = list(TRACK_INFO[track].metrics)
    if TRACK_INFO[track].identification:
        sources = gold_store.get_split(track, split).sources
        columns += [f"f1_{source_slug(s)}" for s in sources] + ["auc"]
    return columns


# --- validation --------------------------------------------------------------------------------


class BadBoardQuery(ServiceError):
    """A leaderboard request named an unknown split, column or filter."""

    status = 400
    code = "invalid_query"


class UnknownVersion(BadBoardQuery):
    """A leaderboard request named a gold version that is unknown or not yet published."""

    status = 404
    code = "unknown_version"


class BoardParameters(BaseModel):
    """The documented query of a leaderboard (query_model narrows sort to a track's columns).

    The API checks a query against this model's JSON Schema (query_problems) and the
    OpenAPI description states it, so the two cannot disagree.
    """

    split: Split = Field("test", description="Split.")
    sort: str | None = Field(None, description="Column to sort by (default: the primary "
                                               "metric).")
    order: Literal["asc", "desc"] = Field("desc", description="Sort order.")
    hide_baselines: YesNo | None = Field(None, description="Hide baselines and the paper's "
                                                           "numbers.")
    model_type: ModelType | None = Field(None, description="Only this model type.")
    fine_tuned: Literal["yes", "no"] | None = Field(
        None, description="Only fine-tuned (yes) or not (no) systems.")
    page: int = Field(1, ge=1, le=MAX_PAGE, description="Page number.")
    per_page: int | None = Field(None, ge=1, le=MAX_PER_PAGE, description="Entries per page.")
    version: str | None = Field(None, max_length=80, pattern=NO_CONTROLS, description=(
        "A published gold version's name (absent or empty: the active one); unknown: 404."))


def query_model(track: str) -> type[BaseModel]:
    """The query model of one track's leaderboard: sort is one of its columns."""
    by_split = tuple((split, tuple(described_columns(track, split))) for split in SPLITS)
    return _query_model(track, by_split)


@functools.lru_cache(maxsize=64)
def _query_model(track: str, by_split: tuple[tuple[str, tuple[str, ...]], ...]) -> type[BaseModel]:
    """query_model for given columns, made once (a leaderboard request checks its query)."""
    # The enum holds the columns every split has: a schema cannot make one parameter's
    # values depend on another's, and a column of one split only (an identification source
    # such as f1_tydi) would be valid under the schema where the server refuses it. The
    # others are listed per split in x-columns-by-split, which query_problems checks.
    every = set.intersection(*(set(cs) for _, cs in by_split)) if by_split else set()
    columns: list[JsonValue] = [c for c in by_split[0][1] if c in every] if by_split else []
    columns_by_split: dict[str, JsonValue] = {split: list(cs) for split, cs in by_split}
    per_split = "; ".join(f"{split}: {', '.join(cs)}" for split, cs in by_split)
    sort = Field(None, description=(
        f"Column to sort by (default: the primary metric). The columns depend on the split "
        f"({per_split}); the schema lists those of every split. A column the split lacks: "
        "400."), json_schema_extra={"enum": columns, "x-columns-by-split": columns_by_split})
    name = "BoardQuery_" + track.replace("-", "_")
    model: type[BaseModel] = create_model(name, __base__=BoardParameters,
                                          sort=(str | None, sort))
    return model


def query_problems(track: str, args: Any) -> dict[str, str]:
    """What in a leaderboard query the documented model does not allow, by parameter."""
    problems = {}
    for parameter in parameters(query_model(track), "query"):
        values = args.getlist(parameter["name"])
        if len(values) > 1:
            problems[parameter["name"]] = "give it once"
        elif values and "x-columns-by-split" in parameter:
            # The split's own columns (the schema's enum holds only those of every split).
            split = args.get("split", "test")
            allowed = parameter["x-columns-by-split"].get(split, [])
            if split in SPLITS and values[0] not in allowed:
                problems["sort"] = (f"the {split} split has no such column; choose one of "
                                    f"{', '.join(allowed)}")
        elif values and (problem := value_problem(parameter["schema"], values[0])):
            problems[parameter["name"]] = problem
    return problems


def parse_board_query(track: str, args: Any, per_page_default: int, *,
                      strict: bool = False) -> BoardQuery:
    """A BoardQuery from request arguments (split, sort, order, filters, page, per_page).

    Strict (the API): every value must be one the documented model allows, else 400 naming
    each parameter. Lenient (the pages): a malformed page number or size falls back to its
    default, but a split, column or model type the board lacks is still a 400.
    """
    if track not in TRACK_INFO:
        raise UnknownTrack(f"unknown track {track!r}")
    if strict and (problems := query_problems(track, args)):
        raise BadBoardQuery("some query parameters are invalid", {"fields": problems})
    split = args.get("split", "test")
    if split not in SPLITS:
        raise BadBoardQuery(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    sort = args.get("sort") or None
    if sort is not None and sort not in sortable_columns(track, split):
        raise BadBoardQuery(f"cannot sort by {sort!r}")
    model_type = args.get("model_type") or None
    if model_type is not None and model_type not in {m.value for m in ModelType}:
        raise BadBoardQuery(f"unknown model type {model_type!r}")
    fine_tuned = {"yes": True, "no": False, "": None}.get(args.get("fine_tuned", ""))
    page = args.get("page", 1, type=int) or 1
    if page > MAX_PAGE:
        raise BadBoardQuery(f"the page must be between 1 and {MAX_PAGE}")
    per_page = args.get("per_page", per_page_default, type=int) or per_page_default
    return BoardQuery(
        track=track, split=split, sort=sort, ascending=args.get("order") == "asc",
        hide_baselines=YES_WORDS.get(args.get("hide_baselines", "").lower(), False),
        model_type=model_type, fine_tuned=fine_tuned, page=max(1, page),
        per_page=min(max(1, per_page), MAX_PER_PAGE), version=args.get("version") or None)
