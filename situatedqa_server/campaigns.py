"""Annotation campaigns: organizer pages (start, follow, adjudicate, build) and the
annotators' task pages.

Rights are checked on every route: organizer pages are admin_required (404 for anyone
else); a task page is its annotator's alone (services.campaigns.own_annotation: 404 for
anyone else, the other annotator included), and never shows the other annotator's
response.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, g, redirect, render_template, url_for
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import DateField, IntegerField, RadioField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, NumberRange, Optional

from benchmark import TRACK_INFO
from benchmark.agreement import AMBIGUOUS, ANSWER, NO_SINGLE_ANSWER

from .auth import admin_required, login_required
from .models import Annotation, CampaignKind, User
from .services import accounts, campaigns
from .services.campaigns import TaskNotFound
from .services.errors import STALE_FORM, InvalidRequest

bp = Blueprint("campaigns", __name__)

OUTCOMES = [SelectChoice(ANSWER, "Answer"), SelectChoice(NO_SINGLE_ANSWER, "No single answer"),
            SelectChoice(AMBIGUOUS, "Question is ambiguous")]
#: Several answers on one line are separated by this (Enter submits the form).
ANSWER_SEPARATOR = "|"


class CampaignForm(FlaskForm):
    """A new campaign: what to annotate, as of when, and by whom."""

    name = StringField("Name", validators=[DataRequired(), Length(max=80)])
    kind = SelectField("Kind", choices=[
        SelectChoice(CampaignKind.REFRESH.value, "Refresh: today's answers"),
        SelectChoice(CampaignKind.CONTEXTS.value, "New temporal contexts (dates)"),
        SelectChoice(CampaignKind.LOCATIONS.value, "New locations")])
    track = StringField("Track", default="present", validators=[DataRequired(),
                                                                  Length(max=16)])
    split = SelectField("Split", choices=[SelectChoice("test", "test"),
                                          SelectChoice("dev", "dev")])
    as_of = DateField("Answers as of", validators=[DataRequired()])
    annotators = StringField("Annotators (user names, comma-separated)",
                             validators=[DataRequired(), Length(max=2000)])
    limit = IntegerField("At most this many tasks", default=100,
                         validators=[DataRequired(), NumberRange(1, campaigns.MAX_TASKS)])
    ids = StringField("Question ids (new contexts, locations; comma-separated)",
                      validators=[Optional(), Length(max=4000)])
    values = StringField("New dates (YYYY or YYYY-MM-DD) or locations, comma-separated",
                         validators=[Optional(), Length(max=4000)])
    note = StringField("Changelog note", validators=[Optional(), Length(max=2000)])


class RoleForm(FlaskForm):
    """Give or take the annotator role."""

    username = StringField("User name", validators=[DataRequired(), Length(max=40)])
    grant = SelectField("Role", choices=[SelectChoice("grant", "make annotator"),
                                         SelectChoice("revoke", "no longer annotator")])


class AnswerForm(FlaskForm):
    """One response: outcome, answers, evidence, and the date it took effect."""

    outcome = RadioField("Outcome", choices=OUTCOMES, default=ANSWER)
    answers = StringField(f"Answer (several: separate with {ANSWER_SEPARATOR})",
                          validators=[Optional(), Length(max=5000)])
    evidence = StringField("Evidence URL", validators=[Optional(), Length(max=500)])
    effective = StringField("In effect since (YYYY, YYYY-MM or YYYY-MM-DD, if known)",
                            validators=[Optional(), Length(max=10)])


class VersionForm(FlaskForm):
    """The gold version a campaign builds."""

    name = StringField("Version name", validators=[DataRequired(), Length(max=80)])
    as_of = DateField("As of (default: the campaign's)", validators=[Optional()])
    note = StringField("Changelog note (default: the campaign's)",
                       validators=[Optional(), Length(max=2000)])


def _items(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _response(form: AnswerForm) -> campaigns.Answer:
    """The form's response, validated by the service (AnnotationError: 400)."""
    if not form.validate_on_submit():
        raise InvalidRequest("; ".join(str(e) for errors in form.errors.values()
                                       for e in errors), {"fields": form.errors})
    answers = (form.answers.data or "").split(ANSWER_SEPARATOR)
    return campaigns.validate(form.outcome.data or "", answers, form.evidence.data,
                              form.effective.data)


# --- organizers -----------------------------------------------------------------------------


@bp.get("/admin/campaigns")
@admin_required
def index(form: CampaignForm | None = None, status: int = 200) -> tuple[str, int]:
    """Every campaign with its progress; start one; the annotators and their role."""
    rows = [(c, campaigns.progress(c)) for c in campaigns.all_campaigns()]
    return render_template("campaigns/index.html", rows=rows, form=form or CampaignForm(),
                           role=RoleForm(), annotators=campaigns.annotators(),
                           tracks=[t for t, info in TRACK_INFO.items()
                                   if not info.identification]), status


@bp.post("/admin/campaigns")
@admin_required
def create() -> Any:
    """Start a campaign (a bad one: 400, nothing stored)."""
    form = CampaignForm()
    if not form.validate_on_submit():
        return index(form, 400)
    try:
        ids = [int(i) for i in _items(form.ids.data)]
    except ValueError:
        form.ids.errors = ["question ids are integers"]
        return index(form, 400)
    campaign = campaigns.create_campaign(
        form.name.data or "", form.kind.data or "", (form.track.data or "").strip(),
        form.split.data or "test", form.as_of.data, _items(form.annotators.data), g.user,
        limit=form.limit.data or 0, ids=ids, values=_items(form.values.data),
        note=form.note.data or "")
    flash(f"started campaign {campaign.name!r}: {len(campaign.tasks)} tasks", "info")
    return redirect(url_for("campaigns.show", campaign_id=campaign.id))


@bp.post("/admin/annotators")
@admin_required
def role() -> Response:
    """Give or take the annotator role."""
    form = RoleForm()
    if not form.validate_on_submit():
        raise InvalidRequest(STALE_FORM, {"fields": form.errors})
    user = accounts.user_named(form.username.data)
    campaigns.set_annotator(user, form.grant.data == "grant", g.user)
    flash(f"{user.username} is {'an' if user.is_annotator else 'no longer an'} annotator",
          "info")
    return redirect(url_for("campaigns.index"))


@bp.get("/admin/campaigns/<int:campaign_id>")
@admin_required
def show(campaign_id: int) -> str:
    """Progress, time per task, agreement per pair, the adjudication queue, the build."""
    campaign = campaigns.campaign_by_id(campaign_id)
    return render_template("campaigns/show.html", campaign=campaign,
                           stats=campaigns.progress(campaign), queue=campaigns.queue(campaign),
                           build=VersionForm(), date_rule=campaigns.date_rule(campaign),
                           dates={t.id: campaigns.answer_date(campaign, t)
                                  for t in campaign.tasks})


@bp.get("/admin/campaigns/<int:campaign_id>/update.jsonl")
@admin_required
def update_file(campaign_id: int) -> Response:
    """The campaign's update file so far."""
    campaign = campaigns.campaign_by_id(campaign_id)
    return Response(campaigns.update_text(campaign), mimetype="application/jsonl",
                    headers={"Content-Disposition":
                             f'attachment; filename="campaign-{campaign.id}.jsonl"'})


@bp.get("/admin/campaigns/<int:campaign_id>/tasks/<int:task_id>")
@admin_required
def adjudication(campaign_id: int, task_id: int) -> str:
    """Both annotators' responses with their evidence, and the organizer's decision."""
    campaign = campaigns.campaign_by_id(campaign_id)
    task = campaigns.task_of(campaign, task_id)
    return render_template("campaigns/adjudicate.html", campaign=campaign, task=task,
                           form=AnswerForm(), answer_date=campaigns.answer_date(campaign, task))


@bp.post("/admin/campaigns/<int:campaign_id>/tasks/<int:task_id>")
@admin_required
def adjudicate(campaign_id: int, task_id: int) -> Response:
    """Decide a disagreeing task; then the next one in the queue."""
    campaign = campaigns.campaign_by_id(campaign_id)
    task = campaigns.task_of(campaign, task_id)
    campaigns.adjudicate(task, _response(AnswerForm()), g.user)
    waiting = campaigns.queue(campaign)
    if waiting:
        return redirect(url_for("campaigns.adjudication", campaign_id=campaign.id,
                                task_id=waiting[0].id))
    flash("the adjudication queue is empty", "info")
    return redirect(url_for("campaigns.show", campaign_id=campaign.id))


@bp.post("/admin/campaigns/<int:campaign_id>/build")
@admin_required
def build(campaign_id: int) -> Response:
    """Build the campaign's gold version (activate it on the versions page)."""
    campaign = campaigns.campaign_by_id(campaign_id)
    form = VersionForm()
    if not form.validate_on_submit():
        raise InvalidRequest("give the version a name", {"fields": form.errors})
    version = campaigns.build(campaign, form.name.data or "", form.as_of.data,
                              form.note.data or "", g.user)
    flash(f"built {version.name!r} from campaign {campaign.name!r}; activate it to rescore "
          "every submission", "info")
    return redirect(url_for("versions.admin"))


# --- annotators -----------------------------------------------------------------------------


def _annotator() -> User:
    """The logged-in annotator; 404 for anyone else."""
    user: User | None = g.user
    if user is None or not user.is_annotator:
        raise TaskNotFound("no such page")
    return user


@bp.get("/annotate/")
@login_required
def tasks() -> str:
    """The annotator's own tasks, open ones first, with their progress."""
    user = _annotator()
    rows = campaigns.my_annotations(user)
    done = sum(a.submitted_at is not None for a in rows)
    return render_template("campaigns/tasks.html", rows=rows, done=done,
                           next_task=campaigns.next_open(user))


@bp.get("/annotate/<int:annotation_id>")
@login_required
def task(annotation_id: int) -> str:
    """One task: the question as of the date, the last known answer, the form."""
    annotation = campaigns.own_annotation(annotation_id, _annotator())
    campaigns.start(annotation)
    mine = campaigns.my_annotations(annotation.annotator)
    return render_template("campaigns/task.html", annotation=annotation,
                           task=annotation.task, campaign=annotation.task.campaign,
                           answer_date=campaigns.answer_date(annotation.task.campaign,
                                                             annotation.task),
                           form=AnswerForm(), done=sum(a.submitted_at is not None for a in mine),
                           total=len(mine))


@bp.post("/annotate/<int:annotation_id>")
@login_required
def answer(annotation_id: int) -> Response:
    """Store the response (once) and go to the next open task."""
    annotation = campaigns.own_annotation(annotation_id, _annotator())
    campaigns.submit(annotation, _response(AnswerForm()))
    following: Annotation | None = campaigns.next_open(g.user)
    if following is None:
        flash("all your tasks are done: thank you", "info")
        return redirect(url_for("campaigns.tasks"))
    return redirect(url_for("campaigns.task", annotation_id=following.id))

