"""Citable snapshots: organizers freeze a leaderboard; anyone reads it, its JSON, CSV, BibTeX."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, abort, flash, g, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response as BaseResponse
from wtforms import SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length

from benchmark import SPLITS, TRACKS

from .auth import admin_required
from .leaderboards import picked_columns
from .models import Snapshot
from .services import exports
from .services import snapshots as service

bp = Blueprint("snapshots", __name__, url_prefix="/snapshots")


class SnapshotForm(FlaskForm):
    """Which leaderboard to freeze, and how to title it."""

    track = SelectField("Track", choices=list(TRACKS))
    split = SelectField("Split", choices=list(SPLITS), default="test")
    title = StringField("Title", validators=[DataRequired(), Length(max=200)])
    note = TextAreaField("Note", validators=[Length(max=2000)])


def snapshot_or_404(slug: str) -> Snapshot:
    """A snapshot by its slug."""
    snapshot = service.by_slug(slug)
    if snapshot is None:
        abort(404)
    return snapshot


@bp.get("/")
def index() -> str:
    """Every snapshot, newest first (optionally of one track); organizers get the form."""
    track = request.args.get("track")
    chosen = track if track in TRACKS else None
    return render_template("insight/snapshots/index.html", form=SnapshotForm(track=chosen),
                           snapshots=service.newest_first(chosen))


@bp.post("/")
@admin_required
def create() -> BaseResponse | tuple[str, int]:
    """Freeze the current leaderboard of a track and split."""
    form = SnapshotForm()
    if not form.validate_on_submit():
        return render_template("insight/snapshots/index.html", form=form,
                               snapshots=service.newest_first(None)), 400
    snapshot = service.freeze(form.track.data, form.split.data, form.title.data,
                              form.note.data or "", g.user)
    flash(f"snapshot {snapshot.slug} frozen", "info")
    return redirect(url_for("snapshots.show", slug=snapshot.slug))


@bp.get("/<slug>")
def show(slug: str) -> str:
    """A frozen leaderboard with its citation."""
    snapshot = snapshot_or_404(slug)
    url = url_for("snapshots.show", slug=slug, _external=True)
    every = request.args.get("columns") == "all"
    frozen: list[str] = snapshot.payload["columns"]
    columns = frozen if every else picked_columns(snapshot.track, frozen, set())
    return render_template("insight/snapshots/show.html", snapshot=snapshot,
                           payload=snapshot.payload, columns=columns, every=every,
                           hidden=len(frozen) - len(columns),
                           bibtex=service.bibtex(snapshot, url))


@bp.get("/<slug>.json")
def show_json(slug: str) -> dict[str, Any]:
    """The frozen leaderboard as JSON, with its provenance."""
    snapshot = snapshot_or_404(slug)
    return {"slug": snapshot.slug, "title": snapshot.title, "note": snapshot.note,
            "created_at": snapshot.created_at.isoformat(timespec="seconds") + "Z",
            "sha256": snapshot.sha256, "leaderboard": snapshot.payload}


@bp.get("/<slug>.csv")
def show_csv(slug: str) -> Response:
    """The frozen leaderboard as CSV."""
    snapshot = snapshot_or_404(slug)
    return Response(exports.payload_csv(snapshot.payload), mimetype="text/csv", headers={
        "Content-Disposition": f"attachment; filename=situatedqa-{snapshot.slug}.csv"})


@bp.get("/<slug>.bib")
def show_bibtex(slug: str) -> Response:
    """A BibTeX entry citing the snapshot."""
    snapshot = snapshot_or_404(slug)
    url = url_for("snapshots.show", slug=slug, _external=True)
    return Response(service.bibtex(snapshot, url), mimetype="text/plain")
