"""Leaderboard insight: plots, rank groups, paired comparisons, diagnostics and exports."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    render_template,
    request,
    url_for,
)
from sqlalchemy import select

from benchmark import TRACK_INFO

from .extensions import db
from .models import GoldVersion, Score, Submission
from .services import diagnostics, exports, plots, ranking, scoring
from .services.gold_store import GoldUnavailable
from .services.leaderboards import (
    BadBoardQuery,
    Board,
    BoardQuery,
    board_version,
    column_label,
    load_board,
    parse_board_query,
)
from .submissions import viewable_submission

bp = Blueprint("insight", __name__, url_prefix="/insight")
EXAMPLES_PER_PAGE = 50
DEFAULT_TOP = 5
SUBMISSION_PLOTS = {"scores": None, "years": "temp", "groups": "geo"}
BOARD_PLOTS = ("top", "sota")


def scored(submission_id: int) -> tuple[Submission, Score]:
    """A submission the visitor may see and its score on the active gold (404 otherwise)."""
    submission = viewable_submission(submission_id)
    score = scoring.score_for(submission)
    if score is None:
        abort(404, "this submission has no score against the active gold version")
    return submission, score


def submission_spec(submission: Submission, score: Score, kind: str) -> plots.PlotSpec:
    """The plot of one kind for a submission; 404 for a kind its track does not have."""
    if SUBMISSION_PLOTS.get(kind, "") not in (None, submission.track):
        abort(404)
    if kind == "years":
        return plots.temp_plot(submission, score, diagnostics.scored_gold(score))
    if kind == "groups":
        return plots.geo_plot(submission, score)
    return plots.submission_plot(submission, score)


def board_spec(track: str, kind: str) -> plots.PlotSpec:
    """A leaderboard plot for the split and version of the query string."""
    if kind not in BOARD_PLOTS:
        abort(404)
    query = board_query(track, per_page=1)
    version = board_version(query)
    if kind == "sota":
        return plots.sota_plot(track, query.split, version.id)
    top = min(max(1, request.args.get("top", DEFAULT_TOP, type=int) or DEFAULT_TOP),
              plots.MAX_TOP)
    return plots.top_plot(track, query.split, version.id, top)


def board_query(track: str, per_page: int) -> BoardQuery:
    """The board the query string names: 404 for an unknown track, 400 for bad parameters."""
    try:
        return parse_board_query(track, request.args, per_page)
    except BadBoardQuery as exc:
        abort(404 if track not in TRACK_INFO else 400, str(exc))


def image(spec: plots.PlotSpec, fmt: str) -> Response:
    """A PNG or SVG answer with the plot's key as ETag (304 when the client has it)."""
    if fmt not in plots.FORMATS:
        abort(404)
    if spec.key in request.if_none_match:
        return Response(status=304, headers={"ETag": f'"{spec.key}"'})
    response = Response(plots.render(spec, fmt), mimetype=plots.FORMATS[fmt])
    response.set_etag(spec.key)
    # Revalidate every time: the ETag changes as soon as the data behind the plot does.
    response.cache_control.no_cache = True
    return response


@bp.get("/submissions/<int:submission_id>/plots/<kind>.<fmt>")
def submission_plot(submission_id: int, kind: str, fmt: str) -> Response:
    """A submission's plot: scores per partition, EM by year (temp), by location (geo)."""
    submission, score = scored(submission_id)
    try:
        return image(submission_spec(submission, score, kind), fmt)
    except GoldUnavailable as exc:
        abort(503, str(exc))


@bp.get("/leaderboards/<track>/plots/<kind>.<fmt>")
def board_plot(track: str, kind: str, fmt: str) -> Response:
    """A leaderboard's plot: the top N across partitions, or the state of the art over time."""
    try:
        return image(board_spec(track, kind), fmt)
    except GoldUnavailable as exc:
        abort(503, str(exc))


@bp.get("/compare")
def compare() -> tuple[str, int] | str:
    """Paired differences of two visible submissions; on dev, the examples where they differ."""
    a_id, b_id = request.args.get("a", type=int), request.args.get("b", type=int)
    if a_id is None or b_id is None:
        return render_template("insight/compare.html", result=None, a=None, b=None)
    (a, score_a), (b, score_b) = scored(a_id), scored(b_id)
    try:
        result = diagnostics.compare_scores(a, score_a, b, score_b,
                                            current_app.config["BOOTSTRAP_RESAMPLES"])
    except diagnostics.NotComparable as exc:
        return render_template("insight/compare.html", result=None, a=a, b=b,
                               problem=str(exc)), 400
    page, examples = paginate(result.examples)
    return render_template("insight/compare.html", result=result, a=a, b=b,
                           examples=examples, page=page, label=column_label)


@bp.get("/submissions/<int:submission_id>/diagnostics")
def submission_diagnostics(submission_id: int) -> str:
    """Error analysis: EM and the other-context rate per partition; per example off test."""
    submission, score = scored(submission_id)
    report = diagnostics.diagnose(submission, score)
    rows = report.examples
    if request.args.get("only") == "other_context":
        rows = [r for r in rows if r.get("other_context")]
    page, examples = paginate(rows)
    return render_template("insight/diagnostics.html", submission=submission, score=score,
                           report=report, examples=examples, page=page, total=len(rows),
                           only=request.args.get("only", ""))


def paginate(rows: list[dict[str, Any]]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The page of rows the query string asks for, and the pager's numbers."""
    pages = max(1, -(-len(rows) // EXAMPLES_PER_PAGE))
    number = min(max(1, request.args.get("page", 1, type=int) or 1), pages)
    start = (number - 1) * EXAMPLES_PER_PAGE
    return {"number": number, "pages": pages}, rows[start:start + EXAMPLES_PER_PAGE]


def export_payload(track: str) -> dict[str, Any]:
    """A leaderboard (up to 1000 entries a page) with every column, CI and rank group."""
    try:
        board = load_board(board_query(track, per_page=1000))
    except BadBoardQuery as exc:
        abort(404, str(exc))
    return exports.board_payload(board, groups_of(board), board.version)


@bp.get("/leaderboards/<track>.json")
def export_json(track: str) -> dict[str, Any]:
    """A leaderboard as JSON with CIs and rank groups."""
    try:
        return export_payload(track)
    except GoldUnavailable as exc:
        abort(503, str(exc))


@bp.get("/leaderboards/<track>.csv")
def export_csv(track: str) -> Response:
    """A leaderboard as CSV: every metric with its CI bounds, and the rank group."""
    try:
        payload = export_payload(track)
    except GoldUnavailable as exc:
        abort(503, str(exc))
    filename = f"situatedqa-{payload['track']}-{payload['split']}.csv"
    return Response(exports.payload_csv(payload), mimetype="text/csv",
                    headers={"Content-Disposition": f"attachment; filename={filename}"})


@bp.get("/submissions/<int:submission_id>/pwc.json")
def papers_with_code(submission_id: int) -> dict[str, Any]:
    """A Papers-with-Code-style results row for a submission."""
    submission, score = scored(submission_id)
    url = url_for("submissions.detail", submission_id=submission.id, _external=True)
    return exports.pwc_row(submission, score, url)


@bp.get("/submissions/<int:submission_id>/model-index.yaml")
def model_index(submission_id: int) -> Response:
    """A Hugging Face model-index YAML block, ready to paste into a model card."""
    submission, score = scored(submission_id)
    return Response(exports.model_index(submission, score), mimetype="text/plain")


@bp.app_template_global()
def groups_of(board: Board) -> dict[int, str]:
    """Rank-group labels of a leaderboard page's scored entries, by submission id."""
    version_id = db.session.scalar(select(GoldVersion.id).where(
        GoldVersion.name == board.version))
    ids = [e["id"] for e in board.entries if e["id"]]
    if version_id is None or not ids:
        return {}
    return ranking.rank_groups(board.query.track, board.query.split, version_id, ids)


@bp.app_template_global()
def submission_figures(submission: Submission, score: Score) -> list[dict[str, Any]]:
    """The figures a submission page shows: title, alt text and image URLs."""
    figures = []
    for kind, track in SUBMISSION_PLOTS.items():
        if track not in (None, submission.track):
            continue
        spec = submission_spec(submission, score, kind)
        figures.append(figure(spec, "insight.submission_plot", submission_id=submission.id,
                              kind=kind))
    return figures


@bp.app_template_global()
def board_figures(board: Board) -> list[dict[str, Any]]:
    """The figures a leaderboard page shows: the top entries and the state of the art.

    An empty board shows one sentence instead of empty charts, and the state of the art
    a sentence until entries were published on two different days.
    """
    q = board.query
    args = {"split": q.split, **({"version": q.version} if q.version else {})}
    version = board_version(q)
    top = plots.top_plot(q.track, q.split, version.id, DEFAULT_TOP)
    if top.note:
        return [{"note": top.note}]
    specs = [("top", top), ("sota", plots.sota_plot(q.track, q.split, version.id))]
    return [figure(spec, "insight.board_plot", track=q.track, kind=kind, **args)
            for kind, spec in specs]


def figure(spec: plots.PlotSpec, endpoint: str, **values: Any) -> dict[str, Any]:
    """Title, alt text, the data table, size and PNG/SVG URLs of a plot (or its note)."""
    if spec.note:
        return {"note": spec.note}
    width, height = (round(side * 100) for side in spec.size)
    return {"title": spec.title, "alt": spec.alt, "table": spec.table,
            "width": width, "height": height,
            "png": url_for(endpoint, fmt="png", **values),
            "svg": url_for(endpoint, fmt="svg", **values)}
