"""Gold versions: public changelogs, rank changes, drift plots; the organizers' version pages."""

from __future__ import annotations

import io
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
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from werkzeug.wrappers import Response
from wtforms import DateField, StringField
from wtforms.validators import DataRequired, Length, Optional

from benchmark import SPLITS, TRACK_INFO

from . import tasks
from .auth import admin_required
from .extensions import db
from .forms import ActionForm
from .models import GoldVersion, Submission
from .services import gold_store, input_releases, jobs, scoring, version_ranks, versions
from .services.errors import STALE_FORM, InvalidQuery, InvalidRequest, NotFound, known_track

bp = Blueprint("versions", __name__)


class BuildForm(FlaskForm):
    """A new gold version: update file, name, as-of date and a changelog note."""

    update = FileField("Update file (JSONL)", validators=[FileRequired("choose a file")])
    name = StringField("Name", validators=[DataRequired(), Length(max=80)])
    as_of = DateField("As of", validators=[DataRequired()])
    note = StringField("Changelog note", validators=[Optional(), Length(max=2000)])


class ActivateForm(FlaskForm):
    """The activation's confirmation: when the inputs of the added test examples go public."""

    release_inputs_on = StringField(
        "Release the inputs of the added test examples on (YYYY-MM-DD; empty: when the "
        "version is active)", validators=[Optional(), Length(max=40)])


@bp.app_template_global()
def published_gold_versions() -> list[GoldVersion]:
    """Versions a visitor may pick on a leaderboard."""
    return versions.published_versions()


@bp.app_template_global()
def gold_score_history(submission: Submission) -> list[Any]:
    """A submission's released scores under every published version (see score_for)."""
    shown = db.session.get(Submission, scoring.shown_id(submission))
    return versions.score_history(shown) if shown is not None else []


def published_or_404(version_id: int) -> GoldVersion:
    """A published version by id; 404 for unknown or not-yet-activated ones."""
    version = db.session.get(GoldVersion, version_id)
    if version is None or version.id not in {v.id for v in versions.published_versions()}:
        abort(404)
    return version


def named_or_404(name: str | None, default: GoldVersion | None = None) -> GoldVersion:
    """A published version by name from the query string (default when absent)."""
    if not name and default is not None:
        return default
    version = versions.version_named(name or "")
    if version is None:
        raise NotFound(f"no published gold version named {name!r}")
    return version


def drift_params(track: str) -> tuple[str, str]:
    """board_params of a track with a drift plot (its answers move with time); else 404."""
    track, split = board_params(track)
    if "drift" not in TRACK_INFO[track].plots:
        abort(404)
    return track, split


def board_params(track: str) -> tuple[str, str]:
    """Track and split of a history page (404 for an unknown track, 400 for a bad split)."""
    split = request.args.get("split", "test")
    known_track(track)
    if split not in SPLITS:
        raise InvalidQuery(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}",
                           {"fields": {"split": f"choose one of {', '.join(SPLITS)}"}})
    return track, split


# --- public pages --------------------------------------------------------------------------


@bp.get("/versions/")
def index() -> str:
    """Every published gold version, newest first, with its changelog."""
    rows = list(reversed(versions.published_versions()))
    return render_template("versions/index.html", versions=rows, tracks=TRACK_INFO)


@bp.get("/versions/<int:version_id>")
def changelog(version_id: int) -> str:
    """A version's public changelog: counts everywhere, keys and answers off test only."""
    version = published_or_404(version_id)
    public = versions.public_changes(versions.stored_changes(version))
    return render_template("versions/changelog.html", version=version, public=public,
                           about=versions.version_json(version))


@bp.get("/versions/<int:version_id>/changelog.json")
def changelog_json(version_id: int) -> dict[str, Any]:
    """The public changelog as JSON."""
    version = published_or_404(version_id)
    return {**versions.version_json(version),
            **versions.public_changes(versions.stored_changes(version))}


@bp.get("/versions/ranks/<track>")
def rank_changes(track: str) -> str:
    """Rank of every public entry under two versions, with arrows and metric deltas."""
    track, split = board_params(track)
    published = versions.published_versions()
    active = gold_store.active_version()
    older = published[-2] if len(published) > 1 and published[-1].id == active.id else active
    a = named_or_404(request.args.get("from"), older)
    b = named_or_404(request.args.get("to"), active)
    changes = version_ranks.ranks_between(track, split, a, b)
    return render_template("versions/ranks.html", info=TRACK_INFO[track], split=split,
                           splits=SPLITS, a=a, b=b, changes=changes, versions=published)


@bp.get("/versions/drift/<track>")
def drift(track: str) -> str:
    """The top entries' EM under every version, against each version's as-of date."""
    track, split = drift_params(track)
    published, series = version_ranks.drift_series(track, split)
    return render_template("versions/drift.html", info=TRACK_INFO[track], split=split,
                           splits=SPLITS, versions=published, series=series)


@bp.get("/versions/drift/<track>.svg")
def drift_svg(track: str) -> Response:
    """The drift plot as SVG."""
    track, split = drift_params(track)
    published, series = version_ranks.drift_series(track, split)
    return current_app.response_class(
        draw_drift(TRACK_INFO[track].title, split, published, series), mimetype="image/svg+xml")


def draw_drift(title: str, split: str, published: list[GoldVersion],
               series: list[Any]) -> bytes:
    """EM (y) against as-of date (x), one line per entry (Figure API: thread-safe)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 3.8), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    dates = [v.as_of for v in published]
    for submission, values in series:
        points = [(d, y) for d, y in zip(dates, values, strict=True) if y is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=submission.method_name[:40])
    ax.set_title(f"{title} ({split}): EM by gold version", fontsize=10)
    ax.set_xlabel("as-of date of the gold version")
    ax.set_ylabel("EM")
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=7, loc="best")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


# --- organizer pages -----------------------------------------------------------------------


def admin_page(form: BuildForm | None = None, status: int = 200) -> tuple[str, int]:
    """The versions page: every version, its rescore job, build and diff forms."""
    rows = [(v, versions.latest_job(v)) for v in versions.all_versions()]
    return render_template("versions/admin.html", rows=rows, form=form or BuildForm(),
                           action=ActionForm()), status


@bp.get("/admin/versions")
@admin_required
def admin() -> tuple[str, int]:
    """Every version with the progress of its rescore."""
    return admin_page()


@bp.post("/admin/versions")
@admin_required
def build() -> Any:
    """Build a version from the uploaded update file (not activated yet)."""
    form = BuildForm()
    if not form.validate_on_submit():
        return admin_page(form, 400)
    try:
        text = form.update.data.read().decode("utf-8")
        version = versions.build_version(text, form.update.data.filename or "update.jsonl",
                                         form.name.data, form.as_of.data,
                                         form.note.data or "", g.user)
    except UnicodeDecodeError:
        form.update.errors = ["the update file is not UTF-8 text"]
        return admin_page(form, 400)
    except versions.UpdateRejected as exc:  # the form again, with every problem of the file
        form.update.errors = [str(p) for p in exc.problems] or [str(exc)]
        return admin_page(form, 400)
    except versions.VersionError as exc:
        form.name.errors = [exc.message]
        return admin_page(form, exc.http_status)
    flash(f"built {version.name!r}; activate it to rescore every submission", "info")
    return redirect(url_for("versions.admin"))


def activation_page(version: GoldVersion, form: ActivateForm | None = None,
                    status: int = 200) -> tuple[str, int]:
    """The activation's confirmation page (again with the form's errors)."""
    total = versions.submission_total()
    return render_template("versions/activate.html", version=version, total=total,
                           active=gold_store.active_version(), form=form or ActivateForm(),
                           public=versions.public_changes(versions.stored_changes(version)),
                           added=input_releases.added_examples(version)), status


@bp.get("/admin/versions/<int:version_id>/activate")
@admin_required
def confirm_activation(version_id: int) -> tuple[str, int]:
    """The confirmation step before an activation: what changes and what gets rescored."""
    version = db.session.get(GoldVersion, version_id)
    if version is None:
        abort(404)
    return activation_page(version)


@bp.post("/admin/versions/<int:version_id>/activate")
@admin_required
def activate(version_id: int) -> Response | tuple[str, int]:
    """Start rescoring into a version in the background; it switches when done."""
    version = db.session.get(GoldVersion, version_id)
    if version is None:
        abort(404)
    form = ActivateForm()
    if not form.validate_on_submit():
        if form.release_inputs_on.errors:
            return activation_page(version, form, 400)
        raise InvalidRequest(STALE_FORM)
    try:
        held = input_releases.parse_release_date(form.release_inputs_on.data)
    except input_releases.InvalidReleaseDate as exc:  # the page again, the field marked
        form.release_inputs_on.errors = [exc.message]
        return activation_page(version, form, exc.http_status)
    try:
        job = jobs.start_activation(version, g.user, release_inputs_on=held)
    except jobs.JobError as exc:  # back to the versions page, saying why
        flash(exc.message, "error")
        return redirect(url_for("versions.admin"))
    tasks.start(job.id)
    flash(f"rescore job {job.id} started for {version.name!r}: {job.total} submissions in "
          f"{len(job.batches)} batches on the job workers", "info")
    return redirect(url_for("versions.admin"))


@bp.get("/admin/versions/diff")
@admin_required
def diff() -> str:
    """Differences between two versions: counts, and keys off the test split."""
    names = {v.name: v for v in versions.all_versions()}
    a, b = names.get(request.args.get("a", "")), names.get(request.args.get("b", ""))
    if a is None or b is None:
        raise NotFound("choose two gold versions")
    public = versions.public_changes(versions.diff_versions(a, b))
    return render_template("versions/diff.html", a=a, b=b, public=public)


