"""WTForms for every form; the API validates its multipart fields with the same classes."""

from __future__ import annotations

import unicodedata
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from flask import request, session
from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import (
    BooleanField,
    DateField,
    EmailField,
    Field,
    PasswordField,
    SelectField,
    StringField,
    TextAreaField,
)
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional, ValidationError

from benchmark import SPLITS, TRACK_INFO

from . import rules
from .inputs import YES_WORDS, clean_name, name_problem
from .models import ModelType
from .services import input_releases
from .services.scoring import SubmissionMeta


class ChoiceField(SelectField):
    """A choice whose error names the valid values (WTForms says only 'Not a valid choice')."""

    def pre_validate(self, form: FlaskForm) -> None:
        """Refuse a value outside the choices, listing them."""
        values = [str(choice[0]) for choice in self.iter_choices()]
        if self.data not in values:
            raise ValidationError(f"choose one of: {', '.join(values)}")


class YesNoField(ChoiceField):
    """A yes/no choice that also takes true/false and 1/0 from API clients."""

    def __init__(self, label: str, **kwargs: Any) -> None:
        super().__init__(label, choices=[SelectChoice("no", "No"), SelectChoice("yes", "Yes")],
                         default="no", **kwargs)

    def process_formdata(self, valuelist: list[str]) -> None:
        """Normalise the submitted word to yes/no; anything else is invalid."""
        if valuelist:
            word = valuelist[0].strip().lower()
            known = YES_WORDS.get(word)
            self.data = word if known is None else "yes" if known else "no"

    @property
    def checked(self) -> bool:
        """The choice as a bool."""
        return self.data == "yes"


def web_url(_form: FlaskForm, field: Field) -> None:
    """Only absolute http(s) links: autoescaping does not stop javascript: URLs."""
    if not field.data:
        return
    parts = urlsplit(field.data.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValidationError("must be an http:// or https:// address")


def parse_parameter_count(text: str | None) -> int | None:
    """'770M', '11B' or '1500000' as a number of parameters (1 to 1000T); None when empty."""
    if not text or not text.strip():
        return None
    match = rules.PARAMETER_SHAPE.fullmatch(text)
    if match is None:
        raise ValueError("give a number such as 770M, 11B or 1500000")
    number, unit = match.groups()
    # Exact arithmetic: a float would overflow (or round) on long digit strings.
    whole, _, fraction = number.partition(".")
    scale = rules.PARAMETER_SCALE[unit.lower()]
    count: int = (int(whole + fraction) * scale) // 10 ** len(fraction)
    if not rules.MIN_PARAMETERS <= count <= rules.MAX_PARAMETERS:
        raise ValueError("must be between 1 and 1000T (10^15) parameters")
    return count


def parse_knowledge_date(text: str | None) -> str | None:
    """A real calendar date as YYYY, YYYY-MM or YYYY-MM-DD; None when empty."""
    if not text or not text.strip():
        return None
    text = text.strip()
    if rules.DATE_SHAPE.fullmatch(text) is None:
        raise ValueError("use YYYY, YYYY-MM or YYYY-MM-DD")
    # The rule the API description states (rules.KNOWLEDGE_DATE: exactly the calendar's).
    if rules.KNOWLEDGE_DATE.fullmatch(text) is None:
        raise ValueError(f"{text} is not a date in the calendar")
    return text


def parse_knowledge_cutoff(text: str | None, today: date) -> date | None:
    """The day a model's knowledge stops, YYYY-MM-DD, not after `today`; None when empty.

    A cutoff in the future would put answers the model could not have read on the wrong
    side of it (benchmark.cutoff)."""
    if not text or not text.strip():
        return None
    text = text.strip()
    if rules.KNOWLEDGE_CUTOFF.fullmatch(text) is None:
        raise ValueError(f"knowledge_cutoff: {text[:40]!r} is not a date YYYY-MM-DD in the "
                         "calendar (the day the model's knowledge stops)")
    cutoff = date.fromisoformat(text)
    if cutoff > today:
        raise ValueError(f"knowledge_cutoff: {text} is after today ({today.isoformat()}); "
                         "a knowledge cutoff is a past date")
    return cutoff


def valid_knowledge_cutoff(_form: FlaskForm, field: Field) -> None:
    """Validator for the knowledge-cutoff field: a real day, today or earlier."""
    try:
        parse_knowledge_cutoff(field.data, input_releases.today())
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def valid_knowledge_date(_form: FlaskForm, field: Field) -> None:
    """Validator for the knowledge-date field: a real date, not just its shape."""
    try:
        parse_knowledge_date(field.data)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


def nfc(text: str | None) -> str | None:
    """Filter: text in NFC, so equal-looking names are equal (validators see every character)."""
    return unicodedata.normalize("NFC", text) if isinstance(text, str) else text


def shown_name(_form: FlaskForm, field: Field) -> None:
    """Validator: no invisible, direction-changing or control characters in a shown name."""
    if field.data and (problem := name_problem(field.data)):
        raise ValidationError(problem)


def valid_parameter_count(_form: FlaskForm, field: Field) -> None:
    """Validator for the parameter-count field."""
    try:
        parse_parameter_count(field.data)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class DraftForm(FlaskForm):
    """A page form that, shown afresh, is refilled with what was typed before a login lapsed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        draft = session.get("draft") if request.method == "GET" else None
        if isinstance(draft, dict) and draft.get("path") == request.path and "data" not in kwargs:
            session.pop("draft")
            kwargs["data"] = draft.get("fields") or {}
        super().__init__(*args, **kwargs)


class SubmissionForm(DraftForm):
    """An upload with its metadata (page form, and the API's multipart fields)."""

    track = ChoiceField("Track", choices=lambda: [SelectChoice(t, f"{t}: {info.title}")
                                                  for t, info in TRACK_INFO.items()])
    split = ChoiceField("Split", choices=[SelectChoice(s, s) for s in SPLITS], default="dev")
    file = FileField("Prediction file", validators=[FileRequired("choose a file")])
    method_name = StringField("Method name", filters=[nfc],
                              validators=[DataRequired(), Length(max=200), shown_name])
    description = TextAreaField("Description", validators=[Optional(), Length(max=5000)])
    paper_url = StringField("Paper URL", validators=[Optional(), Length(max=500), web_url])
    code_url = StringField("Code URL", validators=[Optional(), Length(max=500), web_url])
    model_type = ChoiceField("Model type", default=ModelType.OTHER.value,
                             choices=[SelectChoice(m.value, m.value) for m in ModelType])
    fine_tuned = YesNoField("Fine-tuned on SituatedQA")
    knowledge_date = StringField("Knowledge source date (YYYY, YYYY-MM or YYYY-MM-DD)",
                                 validators=[Optional(), valid_knowledge_date])
    knowledge_cutoff = StringField("Knowledge cutoff (YYYY-MM-DD: the day the model's "
                                   "knowledge stops)",
                                   validators=[Optional(), valid_knowledge_cutoff])
    parameter_count = StringField("Parameter count (e.g. 770M, 11B)",
                             validators=[Optional(), Length(max=rules.MAX_PARAMETER_TEXT),
                                         valid_parameter_count])
    public = YesNoField("Publish on the leaderboard now")
    harness_filter = StringField("Harness filter (an lm-eval samples file with several)",
                                 validators=[Optional(), Length(max=100)])

    def to_meta(self) -> SubmissionMeta:
        """The validated metadata."""
        return SubmissionMeta(
            method_name=clean_name(self.method_name.data),
            description=(self.description.data or "").strip(),
            paper_url=(self.paper_url.data or "").strip() or None,
            code_url=(self.code_url.data or "").strip() or None,
            model_type=self.model_type.data, fine_tuned=self.fine_tuned.checked,
            knowledge_date=parse_knowledge_date(self.knowledge_date.data),
            knowledge_cutoff=parse_knowledge_cutoff(self.knowledge_cutoff.data,
                                                    input_releases.today()),
            parameter_count=parse_parameter_count(self.parameter_count.data),
            harness_filter=(self.harness_filter.data or "").strip() or None,
            public=self.public.checked)


class RegisterForm(FlaskForm):
    """A new account in a new team."""

    username = StringField("User name", filters=[nfc],
                           validators=[DataRequired(), Length(max=40), shown_name])
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password (at least 15 characters)",
                             validators=[DataRequired(), Length(max=256)])
    team = StringField("Team name (default: your user name)", filters=[nfc],
                       validators=[Optional(), Length(max=80), shown_name])


class LoginForm(FlaskForm):
    """User name and password."""

    username = StringField("User name", filters=[nfc],
                           validators=[DataRequired(), Length(max=40)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=256)])


class PasswordForm(FlaskForm):
    """The current password and a new one; every other session ends on change."""

    current_password = PasswordField("Current password",
                                     validators=[DataRequired(), Length(max=256)])
    new_password = PasswordField("New password (at least 15 characters)",
                                 validators=[DataRequired(), Length(max=256)])


class TokenForm(FlaskForm):
    """A name for a new API token."""

    name = StringField("Token name", validators=[DataRequired(), Length(max=80)])


class ReasonForm(FlaskForm):
    """An organizer action that needs a reason."""

    reason = StringField("Reason", validators=[DataRequired(), Length(max=1000)])


class ActionForm(FlaskForm):
    """A button that changes state: only the CSRF token."""


class BaselineUploadForm(FlaskForm):
    """A baseline run made elsewhere (a GPU machine): its output and the runner's sidecar."""

    file = FileField("Runner output (.jsonl or .jsonl.gz)",
                     validators=[FileRequired("choose the runner's output file")])
    sidecar = FileField("Its sidecar (.meta.json)",
                        validators=[FileRequired("choose the .meta.json written next to it")])
    confirm_differences = BooleanField(
        "Publish it even if it differs from the paper's or the reference setup (the entry "
        "then says how, on its page and on the board)")


#: Several answers on one line are separated by this (as on the annotation pages).
ANSWER_SEPARATOR = "|"


class DisputeForm(FlaskForm):
    """A researcher's dispute of an example's gold: the example, an answer, its evidence."""

    track = StringField("Track", validators=[DataRequired(), Length(max=16)])
    split = StringField("Split", validators=[DataRequired(), Length(max=8)])
    key = StringField("Example key", validators=[DataRequired(), Length(max=200)])
    answers = StringField(f"Proposed answer (several: separate with {ANSWER_SEPARATOR})",
                          validators=[Optional(), Length(max=5000)])
    evidence = StringField("Evidence URL", validators=[Optional(), Length(max=500)])
    comment = TextAreaField("Comment (optional)", validators=[Optional(), Length(max=2000)])


class DecisionForm(FlaskForm):
    """An organizer's decision on a dispute: accept with answers, or reject with a reason."""

    decision = SelectField("Decision", choices=[
        SelectChoice("accept", "Accept: the gold becomes these answers"),
        SelectChoice("reject", "Reject: the author sees the reason")], default="accept")
    answers = StringField(f"Answers to accept (several: separate with {ANSWER_SEPARATOR})",
                          validators=[Optional(), Length(max=5000)])
    reason = StringField("One-line reason for a rejection (the author sees it)",
                         validators=[Optional(), Length(max=200)])


class BuildForm(FlaskForm):
    """A gold version built from the accepted disputes."""

    name = StringField("Version name", validators=[DataRequired(), Length(max=80)])
    as_of = DateField("As of (default: today)", validators=[Optional()])
    note = StringField("Changelog note", validators=[Optional(), Length(max=2000)])
