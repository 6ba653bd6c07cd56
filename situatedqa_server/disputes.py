"""Disputes of the gold: an example's page, filing a dispute, the author's own disputes,
and the organizers' joint adjudication queue (campaign tasks and disputes), decisions and
the gold version built from the accepted disputes.

Rights: the example page is public; filing and "My disputes" need a login and show only
the author's own disputes (another account's dispute is a 404); every organizer page is
admin_required (404 for anyone else). Test examples never show gold, and a filing's reply
never depends on it (services/disputes.py).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, g, redirect, render_template, request, url_for
from flask_limiter.util import get_remote_address
from werkzeug.wrappers import Response

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO

from .auth import admin_required, login_required
from .extensions import config_limit, limiter
from .forms import ANSWER_SEPARATOR, BuildForm, DecisionForm, DisputeForm
from .models import Dispute, User
from .services import accounts, disputes, proposed_gold
from .services.errors import ServiceError
from .services.leaderboards import iso

bp = Blueprint("disputes", __name__)


def rate_key() -> str:
    """Disputes are limited per account: the page's login (the view runs after
    login_required) or the API's token; a request with neither counts per address."""
    user: User | None = g.get("user")
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if request.path.startswith("/api/") and scheme.lower() == "bearer" and raw.strip():
        try:
            user = accounts.user_for_token(raw.strip())
        except ServiceError:  # the view refuses the token (401); count the address
            user = None
    return f"dispute:user:{user.id}" if user is not None else get_remote_address()


def dispute_json(dispute: Dispute, published: dict[int, str]) -> dict[str, Any]:
    """A dispute as its author sees it: never the organizer's answers (on test, hidden
    gold), only the outcome and a rejection's reason."""
    return {"id": dispute.id, "track": dispute.track, "split": dispute.split,
            "key": dispute.key, "proposed_answers": list(dispute.proposed_answers),
            "evidence_url": dispute.evidence_url, "comment": dispute.comment,
            "status": dispute.status, "reason": dispute.reason,
            "created_at": iso(dispute.created_at), "decided_at": iso(dispute.decided_at),
            "gold_version": published.get(dispute.gold_version_id or 0)}


def file_from(form: DisputeForm, user: User) -> Dispute:
    """Validate a dispute form (page or API) and file it; the errors name the field."""
    if not form.validate_on_submit():
        raise disputes.DisputeError(_errors(form), {"fields": form.errors})
    proposal = disputes.validate((form.answers.data or "").split(ANSWER_SEPARATOR),
                                 form.evidence.data, form.comment.data)
    return disputes.file(user, (form.track.data or "").strip(),
                         (form.split.data or "").strip(), (form.key.data or "").strip(),
                         proposal)


def _errors(form: Any) -> str:
    """A form's errors, each naming its field."""
    return "; ".join(f"{name}: {error}" for name, errors in form.errors.items()
                     for error in errors)


@bp.get("/data/<track>/<split>/examples/<path:key>")
def example(track: str, split: str, key: str) -> str:
    """An example's question and context; its gold on dev and train; the dispute form."""
    found = disputes.example_of(track, split, key)
    form = DisputeForm(data={"track": track, "split": split, "key": key})
    return render_template("disputes/example.html", example=found, track=track, split=split,
                           hidden=split == HIDDEN_SPLIT, form=form,
                           disputable=disputes.disputable(track), separator=ANSWER_SEPARATOR)


@bp.get("/disputes/")
@login_required
def index() -> str:
    """The user's own disputes with their outcome; a form to dispute an example by key."""
    rows = disputes.mine(g.user)
    return render_template("disputes/index.html", rows=rows, form=DisputeForm(),
                           published=disputes.published_names(rows), splits=SPLITS,
                           tracks=[t for t in TRACK_INFO if disputes.disputable(t)])


@bp.post("/disputes/")
@login_required
@limiter.limit(config_limit("DISPUTE_RATE_LIMIT"), key_func=rate_key)
def create() -> Response:
    """File a dispute (a bad one: its error, nothing stored); the same reply whatever the
    gold of the example is."""
    file_from(DisputeForm(), g.user)
    flash("Your dispute was filed; an organizer will decide it. Its outcome appears here.",
          "info")
    return redirect(url_for("disputes.index"))


# --- organizers -----------------------------------------------------------------------------


@bp.get("/admin/queue")
@admin_required
def queue() -> str:
    """The adjudication queue: campaign tasks the annotators disagree on, open disputes, and
    the accepted disputes waiting for a gold version."""
    waiting = proposed_gold.adjudication_queue()
    return render_template("disputes/queue.html", tasks=waiting.tasks,
                           open_disputes=waiting.disputes, pending=waiting.pending,
                           build=BuildForm())


@bp.get("/admin/disputes/<int:dispute_id>")
@admin_required
def adjudication(dispute_id: int) -> str:
    """A dispute with its evidence, the example and its current gold; the decision form."""
    dispute = disputes.dispute_by_id(dispute_id)
    form = DecisionForm(data={"answers": f" {ANSWER_SEPARATOR} ".join(
        dispute.proposed_answers)})
    return render_template("disputes/adjudicate.html", dispute=dispute, form=form,
                           example=disputes.example_or_none(dispute),
                           current=disputes.current_answers(dispute),
                           hidden=dispute.split == HIDDEN_SPLIT)


@bp.post("/admin/disputes/<int:dispute_id>")
@admin_required
def decide(dispute_id: int) -> Response:
    """Accept or reject a dispute; then the next open one, else the queue."""
    dispute = disputes.dispute_by_id(dispute_id)
    form = DecisionForm()
    if not form.validate_on_submit():
        raise disputes.DisputeError(_errors(form))
    disputes.decide(dispute, form.decision.data == "accept",
                    (form.answers.data or "").split(ANSWER_SEPARATOR), form.reason.data,
                    g.user)
    flash(f"dispute #{dispute.id} {dispute.status}", "info")
    waiting = disputes.queue()
    if waiting:
        return redirect(url_for("disputes.adjudication", dispute_id=waiting[0].id))
    return redirect(url_for("disputes.queue"))


@bp.get("/admin/disputes/update.jsonl")
@admin_required
def update_file() -> Response:
    """The update file of the accepted disputes no version holds yet."""
    return Response(disputes.update_text(disputes.pending()), mimetype="application/jsonl",
                    headers={"Content-Disposition": 'attachment; filename="disputes.jsonl"'})


@bp.post("/admin/disputes/build")
@admin_required
def build() -> Response:
    """Build a gold version from the accepted disputes (activate it on the versions page)."""
    form = BuildForm()
    if not form.validate_on_submit():
        raise disputes.DisputeError(_errors(form))
    version = disputes.build(form.name.data or "", form.as_of.data, form.note.data or "",
                             g.user)
    flash(f"built {version.name!r} from the accepted disputes; activate it to rescore every "
          "submission", "info")
    return redirect(url_for("versions.admin"))
