"""The upload page and the submission pages: scores, per-example browser, publish, delete."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO
from benchmark.tracks import CUTOFF_METRICS, FIGURE_SEPARATOR, PROVENANCE_METRICS, is_window

from .auth import login_required
from .extensions import config_limit, limiter
from .forms import ActionForm, SubmissionForm
from .services import (
    error_figures,
    evaluation,
    ladder,
    quotas,
    scoring,
    team_entries,
    visibility,
)
from .services.duplicates import DuplicateSubmission

bp = Blueprint("submissions", __name__, url_prefix="/submissions")
#: Examples on a page of a per-example table (the examples browser, diagnostics, compare).
EXAMPLES_PER_PAGE = 50
EXAMPLE_FILTERS = ("correct", "correct_any", "partition", "q", "page")


@bp.get("/")
@login_required
def index() -> str:
    """The team's submissions, newest first."""
    rows = team_entries.team_submissions(g.user.team_id)
    return render_template("submissions/index.html", submissions=rows,
                           scores=team_entries.released_primary(rows), tracks=TRACK_INFO)


@bp.route("/new", methods=("GET", "POST"))
@login_required
@limiter.limit(config_limit("UPLOAD_RATE_LIMIT"), methods=["POST"])
def upload() -> Any:
    """Upload a prediction file: validated, scored and stored in this request."""
    form = prefilled(SubmissionForm())
    quota = {t: quotas.usage(g.user.team_id, t) for t in TRACK_INFO}
    if not form.validate_on_submit():
        status = 400 if form.errors else 200
        return render_template("submissions/upload.html", form=form, quota=quota), status
    upload_file = form.file.data
    try:
        submission, _ = scoring.submit(g.user, form.track.data, form.split.data,
                                       upload_file.read(), upload_file.filename or "upload",
                                       form.to_meta())
    except evaluation.InvalidFile as exc:  # the form again, with every problem of the file
        return render_template("submissions/upload.html", form=form, quota=quota,
                               lead=exc.lead, stale=exc.stale, problems=exc.error.problems,
                               truncated=exc.error.truncated), exc.http_status
    except (DuplicateSubmission, quotas.QuotaExceeded) as exc:  # the form again, to retry
        flash(exc.message, "error")
        return render_template("submissions/upload.html", form=form,
                               quota=quota), exc.http_status
    return redirect(url_for("submissions.detail", submission_id=submission.id))


def fresh_windows(metrics: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The fresh windows of a score (benchmark.windows), each with its other figures'
    names (`<window>/<figure>`), in the order stored."""
    windows = [name for name in metrics if is_window(name)]
    return [(window, [name for name in metrics
                      if name.startswith(window + FIGURE_SEPARATOR)]) for window in windows]


def prefilled(form: SubmissionForm) -> SubmissionForm:
    """On GET, the track and split named in the query string (?track=geo&split=test)."""
    if request.method == "GET":
        if request.args.get("track") in TRACK_INFO:
            form.track.data = request.args["track"]
        if request.args.get("split") in SPLITS:
            form.split.data = request.args["split"]
    return form


@bp.get("/<int:submission_id>")
def detail(submission_id: int) -> str:
    """Every metric with its CI, and the metadata."""
    submission = visibility.visible(submission_id, g.user)
    score = scoring.score_for(submission)
    own = visibility.owns(g.user, submission)
    info = TRACK_INFO[submission.track]
    errors = error_figures.breakdown(submission.track, score.metrics, score.ci,
                                     score.counts) if score else []
    return render_template("submissions/detail.html", submission=submission, score=score,
                           info=info, label=info.label, own=own, errors=errors,
                           windows=fresh_windows(score.metrics) if score else [],
                           optional=set(info.error_metrics) | set(info.horizon_metrics),
                           provenance=PROVENANCE_METRICS, cutoff_names=CUTOFF_METRICS,
                           harness=scoring.harness_shown(submission),
                           action=ActionForm(), withheld=ladder.message(submission))


@bp.get("/<int:submission_id>/examples")
@login_required
def examples(submission_id: int) -> str:
    """Per-example browser (dev and train only): question, context, gold, prediction."""
    submission = visibility.changeable(submission_id, g.user)
    if submission.split == HIDDEN_SPLIT:
        abort(404)
    rows = filter_examples(scoring.example_rows(submission), request.args)
    page = max(1, request.args.get("page", 1, type=int) or 1)
    start = (page - 1) * EXAMPLES_PER_PAGE
    return render_template("submissions/examples.html", submission=submission,
                           rows=rows[start:start + EXAMPLES_PER_PAGE], total=len(rows),
                           page=page, pages=max(1, -(-len(rows) // EXAMPLES_PER_PAGE)),
                           args={k: v for k, v in request.args.items() if k in EXAMPLE_FILTERS})


def filter_examples(rows: list[dict[str, Any]], args: Any) -> list[dict[str, Any]]:
    """Rows matching the filters: correct, correct_any (yes/no), partition, text q."""
    for name in ("correct", "correct_any"):
        wanted = args.get(name)
        if wanted in ("yes", "no"):
            rows = [r for r in rows if r.get(name) is (wanted == "yes")]
    if partition := args.get("partition"):
        rows = [r for r in rows if partition in r["partitions"]]
    if text := (args.get("q") or "").strip().lower():
        rows = [r for r in rows if text in r["question"].lower()]
    return rows


@bp.post("/<int:submission_id>/publish")
@login_required
def publish(submission_id: int) -> Response | tuple[str, int]:
    """Show the submission on the public leaderboard (409 if the Ladder withheld it)."""
    try:
        visibility.publish(visibility.changeable(submission_id, g.user), g.user)
    except visibility.NotReleased as exc:  # the submission's page again, saying why
        flash(exc.message, "error")
        return detail(submission_id), exc.http_status
    flash("published on the leaderboard", "info")
    return redirect(url_for("submissions.detail", submission_id=submission_id))


@bp.post("/<int:submission_id>/withdraw")
@login_required
def withdraw(submission_id: int) -> Response:
    """Take the submission off the leaderboard (private again)."""
    visibility.withdraw(visibility.changeable(submission_id, g.user), g.user)
    flash("withdrawn from the leaderboard", "info")
    return redirect(url_for("submissions.detail", submission_id=submission_id))


@bp.post("/<int:submission_id>/delete")
@login_required
def delete(submission_id: int) -> Response:
    """Delete the submission (the quota it used is not given back)."""
    visibility.delete(visibility.changeable(submission_id, g.user), g.user)
    flash("submission deleted; the test quota it used is not given back", "info")
    return redirect(url_for("submissions.index"))
