"""WTForms for every form; the API validates its multipart fields with the same classes."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import EmailField, Field, PasswordField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional, Regexp, ValidationError

from benchmark import SPLITS, TRACK_INFO, TRACKS

from .models import ModelType
from .services.scoring import SubmissionMeta

YES_WORDS = {"yes": True, "true": True, "1": True, "on": True,
             "no": False, "false": False, "0": False, "off": False, "": False}
PARAMETER_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*$")
PARAMETER_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


class YesNoField(SelectField):
    """A yes/no choice that also takes true/false and 1/0 from API clients."""

    def __init__(self, label: str, **kwargs: Any) -> None:
        super().__init__(label, choices=[SelectChoice("no", "No"), SelectChoice("yes", "Yes")],
                         default="no", **kwargs)

    def process_formdata(self, valuelist: list[str]) -> None:
        """Normalise the submitted word to yes/no; anything else is invalid."""
        if valuelist:
            word = valuelist[0].strip().lower()
            self.data = {True: "yes", False: "no"}.get(YES_WORDS.get(word), word)  # type: ignore[call-overload]

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
    """'770M', '11B' or '1500000' as a number of parameters; None when empty."""
    if not text or not text.strip():
        return None
    match = PARAMETER_PATTERN.fullmatch(text)
    if match is None:
        raise ValueError("give a number such as 770M, 11B or 1500000")
    return int(float(match.group(1)) * PARAMETER_SCALE[match.group(2).lower()])


def valid_parameter_count(_form: FlaskForm, field: Field) -> None:
    """Validator for the parameter-count field."""
    try:
        parse_parameter_count(field.data)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class SubmissionForm(FlaskForm):
    """An upload with its metadata (page form, and the API's multipart fields)."""

    track = SelectField("Track", choices=[SelectChoice(t, f"{t}: {TRACK_INFO[t].title}")
                                          for t in TRACKS])
    split = SelectField("Split", choices=[SelectChoice(s, s) for s in SPLITS], default="dev")
    file = FileField("Prediction file", validators=[FileRequired("choose a file")])
    method_name = StringField("Method name", validators=[DataRequired(), Length(max=200)])
    description = TextAreaField("Description", validators=[Optional(), Length(max=5000)])
    paper_url = StringField("Paper URL", validators=[Optional(), Length(max=500), web_url])
    code_url = StringField("Code URL", validators=[Optional(), Length(max=500), web_url])
    model_type = SelectField("Model type", default=ModelType.OTHER.value,
                             choices=[SelectChoice(m.value, m.value) for m in ModelType])
    fine_tuned = YesNoField("Fine-tuned on SituatedQA")
    knowledge_date = StringField("Knowledge source date (YYYY, YYYY-MM or YYYY-MM-DD)",
                                 validators=[Optional(), Regexp(
                                     r"^\d{4}(-\d{2}(-\d{2})?)?$",
                                     message="use YYYY, YYYY-MM or YYYY-MM-DD")])
    parameter_count = StringField("Parameter count (e.g. 770M, 11B)",
                             validators=[Optional(), Length(max=32), valid_parameter_count])
    public = YesNoField("Publish on the leaderboard now")

    def to_meta(self) -> SubmissionMeta:
        """The validated metadata."""
        return SubmissionMeta(
            method_name=self.method_name.data.strip(),
            description=(self.description.data or "").strip(),
            paper_url=(self.paper_url.data or "").strip() or None,
            code_url=(self.code_url.data or "").strip() or None,
            model_type=self.model_type.data, fine_tuned=self.fine_tuned.checked,
            knowledge_date=self.knowledge_date.data or None,
            parameter_count=parse_parameter_count(self.parameter_count.data),
            public=self.public.checked)


class RegisterForm(FlaskForm):
    """A new account in a new team."""

    username = StringField("User name", validators=[DataRequired(), Length(max=40)])
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)])
    password = PasswordField("Password (at least 15 characters)",
                             validators=[DataRequired(), Length(max=256)])
    team = StringField("Team name (default: your user name)",
                       validators=[Optional(), Length(max=80)])


class LoginForm(FlaskForm):
    """User name and password."""

    username = StringField("User name", validators=[DataRequired(), Length(max=40)])
    password = PasswordField("Password", validators=[DataRequired(), Length(max=256)])


class TokenForm(FlaskForm):
    """A name for a new API token."""

    name = StringField("Token name", validators=[DataRequired(), Length(max=80)])


class ReasonForm(FlaskForm):
    """An organizer action that needs a reason."""

    reason = StringField("Reason", validators=[DataRequired(), Length(max=1000)])


class ActionForm(FlaskForm):
    """A button that changes state: only the CSRF token."""
