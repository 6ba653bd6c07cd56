"""Organizer pages: every submission with hide/flag actions, and the audit log."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers import Response

from . import tasks
from .auth import admin_required
from .extensions import db
from .forms import ActionForm, BaselineUploadForm, ReasonForm
from .models import Submission, User
from .ratelimits import failures_of
from .services import audit, baselines, gold_store, jobs, moderation, visibility
from .services.errors import STALE_FORM, InvalidRequest

bp = Blueprint("admin", __name__, url_prefix="/admin")
PAGE_SIZE = 100

#: Organizer actions on a submission; every one needs a reason and goes to the audit log.
ACTIONS: dict[str, Callable[[Submission, User | None, str], None]] = {
    "hide": visibility.hide, "unhide": visibility.unhide,
    "flag": visibility.flag, "unflag": visibility.unflag,
}


@bp.get("/submissions")
@admin_required
def submissions() -> str:
    """All submissions, newest first, with moderation buttons."""
    search = request.args.get("q", "").strip()[:200]
    found = moderation.search_submissions(search, request.args.get("page", 1, type=int) or 1,
                                          PAGE_SIZE)
    return render_template("admin/submissions.html", submissions=found.rows, form=ReasonForm(),
                           page=found.page, pages=found.pages, total=found.total,
                           search=search, actions=ACTIONS)


@bp.post("/submissions/<int:submission_id>/<action>")
@admin_required
def moderate(submission_id: int, action: str) -> Response:
    """Hide, unhide, flag or unflag an entry, with a reason."""
    submission = db.session.get(Submission, submission_id)
    if submission is None or action not in ACTIONS:
        abort(404)
    form = ReasonForm()
    if not form.validate_on_submit():
        flash("give a reason", "error")
        return redirect(url_for("admin.submissions"))
    ACTIONS[action](submission, g.user, form.reason.data.strip())
    flash(f"submission {submission_id}: {action}", "info")
    return redirect(url_for("admin.submissions"))


@bp.get("/audit")
@admin_required
def audit_log() -> str:
    """The audit log, newest first."""
    page = max(1, request.args.get("page", 1, type=int) or 1)
    entries = audit.recent(page, PAGE_SIZE)
    return render_template("admin/audit.html", entries=entries, page=page)


@bp.app_template_filter("utc")
def utc(moment: datetime | None) -> str:
    """A stored (naive UTC) time to the second, with its time zone."""
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "—"


@bp.get("/jobs")
@admin_required
def jobs_page() -> str:
    """Every long job with its state and progress, and the regeneration buttons."""
    rows = jobs.recent_jobs(PAGE_SIZE)
    return render_template("admin/jobs.html", jobs=rows, modes=baselines.JOB_MODES,
                           action=ActionForm(), upload=BaselineUploadForm(),
                           upload_mode=baselines.UPLOAD_MODE,
                           ratelimit_failures=failures_of(current_app))


@bp.post("/jobs/regenerate/<mode>")
@admin_required
def regenerate(mode: str) -> Response:
    """Start a baseline regeneration on the job workers."""
    if mode not in baselines.JOB_MODES:
        abort(404)
    if not ActionForm().validate_on_submit():
        raise InvalidRequest(STALE_FORM)
    params: dict[str, Any] = {"mode": mode}
    if request.form.get("confirm_differences") == "1":
        params["confirmed_by"] = g.user.username
    try:
        job = jobs.start_regeneration(params, g.user, baselines.job_steps(params))
    except (jobs.JobError, baselines.BaselineError) as exc:  # back to the jobs page, saying why
        flash(exc.message, "error")
        return redirect(url_for("admin.jobs_page"))
    tasks.start(job.id)
    flash(f"regeneration job {job.id} started ({mode})", "info")
    return redirect(url_for("admin.jobs_page"))


@bp.post("/jobs/regenerate-from-file")
@admin_required
def regenerate_from_file() -> Response:
    """Replace one baseline entry by a run uploaded with its sidecar (a GPU machine's run)."""
    form = BaselineUploadForm()
    if not form.validate_on_submit():
        for errors in form.errors.values():
            for error in errors:
                flash(str(error), "error")
        return redirect(url_for("admin.jobs_page"))
    output, sidecar = form.file.data, form.sidecar.data
    try:
        file = baselines.uploaded_file(output.read(), output.filename or "upload.jsonl",
                                       sidecar.read(), sidecar.filename or "upload.meta.json")
        confirmed_by = g.user.username if form.confirm_differences.data else None
        baselines.check_confirmed([file], confirmed_by)  # told now, not by a failed job
        params = {**baselines.upload_params(file), "confirmed_by": confirmed_by}
        job = jobs.start_regeneration(params, g.user, baselines.job_steps(params))
    except (jobs.JobError, baselines.BaselineError, gold_store.GoldUnavailable) as exc:
        db.session.rollback()  # back to the jobs page, saying why
        flash(exc.message, "error")
        return redirect(url_for("admin.jobs_page"))
    tasks.start(job.id)
    flash(f"regeneration job {job.id} started: {file.key} from an uploaded run", "info")
    return redirect(url_for("admin.jobs_page"))
