"""Leaderboard pages and their CSV export; the home page."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, render_template, request, url_for

from benchmark import SPLITS, TRACK_INFO, metric_card
from benchmark.equivalence import LENIENT_RULES, lenient_family
from benchmark.tracks import PROVENANCE_METRICS, is_window

from . import insight
from .models import ModelType
from .services import gold_store
from .services.board import BoardFilter, parse_board_query
from .services.leaderboards import Board, load_board

bp = Blueprint("leaderboards", __name__, url_prefix="/leaderboards")
QUERY_KEYS = ("split", "sort", "order", "hide_baselines", "model_type", "fine_tuned", "page",
              "per_page", "version")


def index() -> str:
    """The home page: every track with its leaderboards and data downloads."""
    return render_template("index.html", tracks=list(TRACK_INFO.values()), splits=SPLITS)


def board_from_request(track: str) -> Board:
    """The leaderboard page the query string asks for (404 on an unknown name)."""
    query = parse_board_query(track, request.args, current_app.config["LEADERBOARD_PAGE_SIZE"])
    return load_board(query)


@bp.get("/<track>")
def show(track: str) -> str:
    """A ranked leaderboard with CIs, sortable, filterable, one page at a time."""
    board = board_from_request(track)
    info = TRACK_INFO[track]
    return render_template("leaderboards/show.html", board=board, info=info,
                           label=info.label, splits=SPLITS, model_types=list(ModelType),
                           args=board_args(), sort_url=sort_url, notes=paper_notes(board),
                           columns=visible_columns(board), rules=optional_rules(track),
                           provenance=PROVENANCE_METRICS,
                           windows=[c for c in board.columns if is_window(c)],
                           filtered=BoardFilter.of(board.query).active)


def visible_columns(board: Board) -> list[str]:
    """The table's columns: the paper's, then the optional ones picked or sorted by.

    Columns left out are not rendered at all (not rendered hidden): a page of 50 rows with
    every optional column costs many times the cells.
    """
    return picked_columns(board.query.track, board.columns,
                          {*shown_columns(), board.query.sort or ""})


def picked_columns(track: str, columns: list[str], wanted: set[str]) -> list[str]:
    """Of a board's columns, the paper's and the optional ones wanted (the lenient metrics,
    the error figures, the horizon and the provenance figures are off by default)."""
    optional = {*TRACK_INFO[track].optional_metrics, *PROVENANCE_METRICS}
    return [c for c in columns if (c not in optional and not is_window(c)) or c in wanted]


def optional_rules(track: str) -> dict[str, str]:
    """What each optional column of a track holds (its tooltip), by column: the answers a
    lenient column accepts, the definition of an error figure or of the horizon."""
    info = TRACK_INFO[track]
    rules = {column: LENIENT_RULES[lenient_family(column) or ""]
             for column in info.lenient_metrics}
    rules.update((column, metric_card.definition(track, column))
                 for column in (*info.error_metrics, *info.horizon_metrics,
                                *PROVENANCE_METRICS))
    return rules


def paper_notes(board: Board) -> dict[str, Any]:
    """The footnote on a leaderboard page's paper rows."""
    q = board.query
    return paper_notes_for(q.track, q.split, board.entries, board.primary)


@bp.app_template_global()
def paper_notes_for(track: str, split: str, entries: list[dict[str, Any]],
                    primary: str) -> dict[str, Any]:
    """The footnote on paper rows: partition sizes that differ (the paper's partition sizes
    are declared with the track), and rows without a rank."""
    paper = [e for e in entries if e["reported"]]
    if not paper:
        return {"paper": False}
    info = TRACK_INFO[track]
    sizes = info.paper_partition_sizes.get(split, {})
    masks = gold_store.get_split(track, split).partition_masks if sizes else {}
    counts = [{"label": info.label(f"em_{name}"), "paper": size,
               "release": int(masks[name].sum())}
              for name, size in sizes.items() if name in masks]
    unranked = sum(1 for e in paper if e["metrics"].get(primary) is None)
    return {"paper": True, "counts": counts, "unranked": unranked,
            "primary": info.label(primary)}


def board_args() -> dict[str, Any]:
    """The leaderboard parameters of the query string (others are dropped from links).

    `show` (the lenient columns picked, repeated) is kept as a list.
    """
    args: dict[str, Any] = {k: v for k, v in request.args.items() if k in QUERY_KEYS}
    if shown_columns():
        args["show"] = shown_columns()
    return args


@bp.app_template_global()
def shown_columns() -> list[str]:
    """The lenient columns picked in the column picker (off by default)."""
    return request.args.getlist("show")


def sort_url(column: str) -> str:
    """The current page's URL sorted by column (toggling the order when already sorted)."""
    args: dict[str, Any] = board_args()
    same = args.get("sort") == column
    args.update(sort=column, order="asc" if same and args.get("order") != "asc" else "desc")
    args.pop("page", None)
    return url_for("leaderboards.show", track=(request.view_args or {})["track"], **args)


@bp.get("/<track>.csv")
def export_csv(track: str) -> Response:
    """The leaderboard as CSV: the one file with every column, CI and rank group (the same
    as the insight section's download)."""
    return insight.export_csv(track)


@bp.app_template_filter("counted")
def counted(number: int, singular: str, plural: str) -> str:
    """A count with its noun in the right number: '1 entry', '2000 entries'."""
    return f"{number} {singular if number == 1 else plural}"
