"""Leaderboard insight: plots, rank groups, paired comparisons, diagnostics and exports."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    g,
    render_template,
    request,
    url_for,
)

from benchmark import HIDDEN_SPLIT, TRACK_INFO

from .converters import MAX_ID
from .models import Score, Submission, utcnow
from .services import (
    diagnostics,
    evaluation,
    exports,
    hub_results,
    plots,
    ranking,
    released,
    scoring,
    versions,
    visibility,
)
from .services.board import BoardFilter, BoardQuery, parse_board_query
from .services.leaderboards import Board, board_version, load_board
from .submissions import EXAMPLES_PER_PAGE

bp = Blueprint("insight", __name__, url_prefix="/insight")
DEFAULT_TOP = 5
#: The kinds of a track's plots (TrackInfo.plots) drawn for each of its submissions.
SUBMISSION_PLOT_KINDS = ("years", "groups")
BOARD_PLOTS = ("top", "sota")
PICKER_LIMIT = 500


def scored(submission_id: int) -> tuple[Submission, Score]:
    """A submission the visitor may see and its score on the active gold (404 otherwise).

    A submission whose scores the Ladder withheld has no plots, diagnostics or exports.
    """
    return released.released_score(submission_id, g.user)


def submission_plots(track: str) -> list[str]:
    """The plots of a submission on a track: its scores, then the track's own."""
    return ["scores", *(kind for kind in TRACK_INFO[track].plots
                        if kind in SUBMISSION_PLOT_KINDS)]


def submission_spec(submission: Submission, score: Score, kind: str) -> plots.PlotSpec:
    """The plot of one kind for a submission; 404 for a kind its track does not have."""
    if kind not in submission_plots(submission.track):
        abort(404)
    if kind == "years":
        return plots.years_plot(submission, score, diagnostics.scored_gold(score))
    if kind == "groups":
        return plots.groups_plot(submission, score)
    return plots.submission_plot(submission, score)


def board_spec(track: str, kind: str) -> plots.PlotSpec:
    """A leaderboard plot for the split and version of the query string."""
    if kind not in BOARD_PLOTS:
        abort(404)
    query = board_query(track, per_page=1)
    version = board_version(query)
    filters = BoardFilter.of(query)
    if kind == "sota":
        return plots.sota_plot(track, query.split, version.id, filters)
    top = min(max(1, request.args.get("top", DEFAULT_TOP, type=int) or DEFAULT_TOP),
              plots.MAX_TOP)
    return plots.top_plot(track, query.split, version.id, top, filters)


def board_query(track: str, per_page: int) -> BoardQuery:
    """The board the query string names: 404 for an unknown track, 400 for bad parameters."""
    return parse_board_query(track, request.args, per_page)


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
    """A submission's plot: scores per partition, and its track's own (EM by year, per
    group)."""
    submission, score = scored(submission_id)
    return image(submission_spec(submission, score, kind), fmt)


@bp.get("/leaderboards/<track>/plots/<kind>.<fmt>")
def board_plot(track: str, kind: str, fmt: str) -> Response:
    """A leaderboard's plot: the top N across partitions, or the state of the art over time."""
    return image(board_spec(track, kind), fmt)


@bp.get("/compare")
def compare() -> tuple[str, int]:
    """Paired differences of two visible submissions; off test, predictions beside the gold."""
    (a, score_a), (b, score_b), problem = picked_pair()
    if problem is not None:
        return compare_page(a, b, problem=problem.message), problem.http_status
    if a is None or b is None or score_a is None or score_b is None:
        return compare_page(a, b), 200
    try:
        result = diagnostics.compare_scores(a, score_a, b, score_b,
                                            evaluation.settings().resamples)
    except diagnostics.NotComparable as exc:  # the compare page again, saying why
        return compare_page(a, b, problem=exc.message), exc.http_status
    filters = compare_filters()
    rows = diagnostics.filter_compared(result.examples, filters["partition"],
                                       filters["show"] == "differ")
    page, examples = paginate(rows)
    return compare_page(a, b, result=result, examples=examples, page=page, total=len(rows),
                        filters=filters, partitions=partitions_of(result.examples),
                        predictions=shown_predictions(a, b, examples)), 200


Picked = tuple[Submission, Score] | tuple[None, None]


def picked_pair() -> tuple[Picked, Picked, diagnostics.PickError | None]:
    """A and B from the query string; a bad one is left empty and explained."""
    pair: list[Picked] = []
    problem = None
    for name in ("a", "b"):
        try:
            pair.append(diagnostics.pick(name, request.args.get(name, ""), g.user, MAX_ID)
                        or (None, None))
        except diagnostics.PickError as exc:
            pair.append((None, None))
            problem = problem or exc
    return pair[0], pair[1], problem


def compare_filters() -> dict[str, str]:
    """The example filters of the compare page: partition ('' = all) and show differ|all."""
    show = request.args.get("show", "differ")
    return {"partition": request.args.get("partition", ""),
            "show": show if show in ("differ", "all") else "differ"}


def partitions_of(rows: list[dict[str, Any]]) -> list[str]:
    """The partitions the compared examples belong to, sorted."""
    return sorted({p for r in rows for p in r["partitions"]})


def shown_predictions(a: Submission, b: Submission,
                      examples: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """Predictions of A and B by key for the shown examples; None where they are not shown.

    Off the test split only, and only for the visitor's own team, organizers and baselines:
    the predictions of other teams stay theirs (their rows show right or wrong).
    """
    keys = {e["key"] for e in examples}
    shown: dict[str, dict[str, Any] | None] = {}
    for label, submission in (("a", a), ("b", b)):
        mine = visibility.owns(g.user, submission)
        if submission.split == HIDDEN_SPLIT or not (mine or submission.is_baseline):
            shown[label] = None
            continue
        shown[label] = {r["key"]: r["prediction"] for r in scoring.example_rows(submission)
                        if r["key"] in keys}
    return shown


def compare_page(a: Submission | None, b: Submission | None, **context: Any) -> str:
    """The compare page: the picker (own and public submissions on A's board) and results."""
    return render_template("insight/compare.html", a=a, b=b,
                           info=TRACK_INFO[a.track] if a is not None else None,
                           choices=compare_choices(a), **context)


def compare_choices(a: Submission | None) -> list[dict[str, Any]]:
    """Picker options: the visitor's team's submissions and the public ones, by board.

    With A chosen, only A's board (track and split); at most PICKER_LIMIT, best first.
    """
    rows = diagnostics.compare_candidates(g.user, a, PICKER_LIMIT)
    return [{"id": s.id, "board": f"{s.track} / {s.split}",
             "text": f"#{s.id} {s.method_name[:70]} ({team[:30]})"
                     + (f" · {value:.1f}" if value is not None else "")
                     + ("" if s.is_public else " · private")}
            for s, value, team in rows]


@bp.get("/submissions/<int:submission_id>/diagnostics")
def submission_diagnostics(submission_id: int) -> str:
    """Error analysis: EM and the other-context rate per partition; per example off test."""
    submission, score = scored(submission_id)
    report = diagnostics.diagnose(submission, score)
    rows = report.examples
    if request.args.get("only") == "any_not_one":
        rows = [r for r in rows if r.get("any_not_one")]
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
    board = load_board(board_query(track, per_page=1000))
    return exports.board_payload(board, groups_of(board), board.version)


@bp.get("/leaderboards/<track>.json")
def export_json(track: str) -> dict[str, Any]:
    """A leaderboard as JSON with CIs and rank groups."""
    return export_payload(track)


@bp.get("/leaderboards/<track>.csv")
def export_csv(track: str) -> Response:
    """A leaderboard as CSV: every metric with its CI bounds, and the rank group."""
    payload = export_payload(track)
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


@bp.get("/submissions/<int:submission_id>/eval_results.yaml")
def eval_results(submission_id: int) -> Response:
    """The Hub's `.eval_results` YAML of a submission: one entry per paper metric."""
    run = hub_results.run_for(submission_id, g.user)
    return Response(hub_results.eval_results_yaml(run), mimetype="application/yaml")


@bp.get("/submissions/<int:submission_id>/every_eval_ever.json")
def every_eval_ever(submission_id: int) -> dict[str, Any]:
    """An Every Eval Ever record of a submission, with each paper metric's CI."""
    return hub_results.every_eval_ever(hub_results.run_for(submission_id, g.user), utcnow())


@bp.app_template_global()
def significance_level() -> float:
    """The level of the paired tests that separate rank groups and compared metrics."""
    return ranking.ALPHA


@bp.app_template_global()
def groups_of(board: Board) -> dict[int, str]:
    """Rank-group labels of a leaderboard page's scored entries, by submission id."""
    version_id = board.version_id or versions.version_id_named(board.version)
    ids = [e["id"] for e in board.entries if e["id"]]
    if version_id is None or not ids:
        return {}
    return ranking.rank_groups(board.query.track, board.query.split, version_id, ids)


@bp.app_template_global()
def submission_figures(submission: Submission, score: Score) -> list[dict[str, Any]]:
    """The figures a submission page shows: title, alt text and image URLs."""
    figures = []
    for kind in submission_plots(submission.track):
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
    filters = BoardFilter.of(q)
    args = {"split": q.split, **({"version": q.version} if q.version else {}),
            **filters.query_args()}
    version_id = board.version_id or board_version(q).id
    top = plots.top_plot(q.track, q.split, version_id, DEFAULT_TOP, filters)
    if top.note:
        return [{"note": top.note}]
    specs = [("top", top), ("sota", plots.sota_plot(q.track, q.split, version_id, filters))]
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
