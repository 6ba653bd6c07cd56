"""The OpenAPI 3.1 description of /api/v1, generated from typed models, and its page.

Request and response bodies and query parameters are pydantic models, declared once here;
pydantic writes their JSON Schema (2020-12, the dialect of OpenAPI 3.1). Each leaderboard
is its own path (/api/v1/leaderboards/temp, …) because the columns one can sort by differ
per track: its query model is the board module's (services/board.py query_model), made from
the track declarations, so a metric added to a track appears here without an edit.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from flask import Blueprint, render_template
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from benchmark import TRACK_INFO, TRACKS

from . import rules
from .converters import MAX_ID
from .models import ModelType
from .schema_types import SCHEMAS, Split, Track, YesNo, parameters, plain
from .services.board import query_model

bp = Blueprint("openapi", __name__)
API = "/api/v1"
JSON = "application/json"
YAML = "application/yaml"
URL_PATTERN = r"^https?://[A-Za-z0-9.-]+(/[!-~]*)?$"


Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Metrics = Annotated[dict[str, float | None], Field(
    description="Metric name to value in percent (null: undefined).")]
Intervals = Annotated[dict[str, Annotated[list[float], Field(min_length=2, max_length=2)] | None],
                      Field(description="Metric name to its 95% CI [low, high]: a bootstrap, or "
                            "a score interval where a share is 0% or 100% (/metrics/).")]
Counts = Annotated[dict[str, int], Field(
    description="Metric name to the number of examples behind it.")]


# --- bodies -----------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    """The code, message and details of an error."""

    model_config = ConfigDict(extra="forbid")
    code: str = Field(description="snake_case, e.g. quota_exceeded.")
    message: str = Field(description="A sentence for people.")
    details: Any = Field(description="Machine-readable context, or null.")


class Error(BaseModel):
    """The one error shape of every /api/v1 response with status >= 400."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorDetail


class Horizon(BaseModel):
    """The knowledge horizon (not in the paper): the latest year up to which the answers
    track the gold, the change point of EM by the year an answer took effect."""

    model_config = ConfigDict(extra="forbid")
    year: int | None = Field(description="The change point; null when not determined.")
    ci: Annotated[list[int], Field(min_length=2, max_length=2)] | None = Field(
        description="Its 95% bootstrap CI in years [low, high].")
    identified: Annotated[list[int], Field(min_length=2, max_length=2)] | None = Field(
        description="The years the data cannot tell apart from `year`.")
    determined: bool
    reason: str | None = Field(description="Why it is not determined (null when it is).")
    p_value: float | None = Field(description="The drop's p-value (null without resamples).")
    n: int = Field(description="The examples behind it: answers that replaced an earlier one.")
    bins: list[Annotated[list[int], Field(min_length=3, max_length=3)]] = Field(
        description="The curve: [year the answer took effect, examples, right] per year.")


class Submission(BaseModel):
    """A submission with its scores (those of shown_submission_id when withheld)."""

    model_config = ConfigDict(extra="forbid")
    id: int
    status: Literal["scored"]
    track: Track
    split: Split
    method_name: str
    team: str
    visibility: Literal["private", "public"]
    hidden: bool
    flag: str | None
    submitted_at: Timestamp
    primary_metric: str
    released: bool = Field(description=(
        "False when SITUATEDQA_TEST_FEEDBACK=ladder withheld this test submission's scores: "
        "metrics, ci and counts are then those of shown_submission_id."))
    shown_submission_id: int = Field(description=(
        "The submission whose scores are shown: this one unless withheld."))
    feedback: str | None = Field(description=(
        "Why the scores shown are another submission's (null when released)."))
    n: int | None
    metrics: Metrics
    ci: Intervals
    counts: Counts
    horizon: Horizon | None = Field(None, description=(
        "The knowledge horizon of a score on a dated track (temp); its year is also the "
        "`horizon` metric. Absent elsewhere."))
    description: str
    paper_url: str | None
    code_url: str | None
    model_type: str
    fine_tuned: bool
    knowledge_date: str | None
    knowledge_cutoff: str | None = Field(description=(
        "The day the model's knowledge stops, as declared (YYYY-MM-DD), else null: the "
        "`*_cutoff` figures read the examples whose answer took effect after it."))
    parameter_count: int | None
    format: str
    scorer: str = Field(description="The scorer's fingerprint (benchmark.harness).")
    harness: dict[str, Any] | None = Field(description=(
        "The run a harness file records (harness, version, task, model, filter), else null."))


class SubmissionList(BaseModel):
    """A team's submissions, newest first."""

    submissions: list[Submission]


class ExampleRow(BaseModel):
    """One dev/train example: inputs, gold, prediction and correctness."""

    key: str
    question: str
    context: dict[str, Any]
    partitions: list[str]
    prediction: Any
    gold: Any = Field(description="The answers (QA) or the label (identification).")
    correct: bool
    correct_any: bool | None = Field(None, description="QA: matches any annotated answer.")
    correct_equiv: bool | None = Field(None, description=(
        "QA, where lenient scoring applies: matches an equivalent answer."))
    f1: float | None = Field(None, description="QA, where lenient scoring applies: token F1.")
    score: float | None = Field(None, description="Identification: the submitted score.")
    origin: Literal["release", "added", "changed"] | None = Field(None, description=(
        "Where the example comes from: the public release, or added or changed by a gold "
        "version since."))


class Examples(BaseModel):
    """Per-example rows of a submission."""

    id: int
    examples: list[ExampleRow]


class LeaderboardEntry(BaseModel):
    """A ranked submission, or a number from the paper (no id, rank or CI)."""

    model_config = ConfigDict(extra="forbid")
    id: int | None
    rank: int | None
    method_name: str
    team: str | None
    metrics: Metrics
    ci: Intervals
    counts: Counts = Field(description=(
        "The examples behind each figure (a fresh window's among them); {} on paper rows."))
    baseline: bool
    reported: bool = Field(description="A number from the paper.")
    submitted_at: Timestamp | None
    paper_url: str | None
    code_url: str | None
    model_type: str
    fine_tuned: bool
    flag: str | None
    source: str | None
    knowledge_cutoff: str | None = Field(description=(
        "The submission's declared knowledge cutoff (YYYY-MM-DD), else null (paper rows)."))


class Leaderboard(BaseModel):
    """One page of a leaderboard."""

    model_config = ConfigDict(extra="forbid")
    track: Track
    split: Split
    primary_metric: str
    gold_version: str | None
    columns: list[str]
    sort: str
    order: Literal["asc", "desc"]
    page: int
    per_page: int
    total: int
    entries: list[LeaderboardEntry]


class TrackSummary(BaseModel):
    """A track's title, metrics and primary metric."""

    model_config = ConfigDict(extra="forbid")
    name: Track
    title: str
    metrics: list[str]
    primary_metric: str
    description: str


class Tracks(BaseModel):
    """Every track."""

    tracks: list[TrackSummary]


class TrackQuota(BaseModel):
    """A team's test quota on one track."""

    model_config = ConfigDict(extra="forbid")
    used_today: int
    daily_limit: int
    used_total: int
    total_limit: int
    remaining: int


class Quota(BaseModel):
    """A team's test quota on every track."""

    model_config = ConfigDict(extra="forbid")
    resets_at: Timestamp = Field(description="The next UTC midnight.")
    tracks: dict[str, TrackQuota]


class Upload(BaseModel):
    """The upload form (multipart/form-data); an unknown field is refused (400)."""

    model_config = ConfigDict(extra="forbid")
    track: Track
    split: Split
    file: bytes = Field(description="Predictions: JSONL, JSON or CSV, optionally gzip-compressed.")
    method_name: str = Field(max_length=200, pattern=r"\S")
    description: str | None = Field(None, max_length=5000)
    paper_url: str | None = Field(None, max_length=500, pattern=URL_PATTERN)
    code_url: str | None = Field(None, max_length=500, pattern=URL_PATTERN)
    model_type: ModelType | None = None
    fine_tuned: YesNo | None = None
    # Both patterns are the form's own rules (rules.py), not a copy of their shape.
    knowledge_date: str | None = Field(None, pattern=rules.KNOWLEDGE_DATE_PATTERN, description=(
        "A date in the calendar: YYYY, YYYY-MM or YYYY-MM-DD (year 0001 or later)."))
    knowledge_cutoff: str | None = Field(
        None, pattern=rules.KNOWLEDGE_CUTOFF_PATTERN, json_schema_extra={"format": "date"},
        description=("The day the model's knowledge stops (its training data's cutoff), "
                     "YYYY-MM-DD, today or earlier: a later date is refused (400). Not "
                     "knowledge_date, the date of a retrieval corpus."))
    parameter_count: str | None = Field(
        None, max_length=rules.MAX_PARAMETER_TEXT, pattern=rules.PARAMETER_COUNT_PATTERN,
        description=f"{rules.MIN_PARAMETERS} to {rules.MAX_PARAMETERS} parameters, e.g. 770M, "
                    "11B or 1500000 (the server also reads decimals such as 1.5B).")
    public: YesNo | None = Field(None, description="Publish on the leaderboard at once.")
    harness_filter: str | None = Field(None, max_length=100, description=(
        "The filter to read of an lm-eval samples file whose task has several."))


class DisputeBody(BaseModel):
    """A dispute of an example's gold (multipart/form-data or a urlencoded form, the fields
    of the page's form); an unknown field is refused (400)."""

    model_config = ConfigDict(extra="forbid")
    track: str = Field(max_length=16, pattern=r"\S", description="A QA track, e.g. temp.")
    split: str = Field(max_length=8, pattern=r"\S", description="train, dev or test.")
    key: str = Field(max_length=200, pattern=r"\S",
                     description="The example's key (test: as in the blank file).")
    answers: str = Field(max_length=5000, pattern=r"[^|\s]",
                         description="The proposed answer; several separated by |.")
    evidence: str = Field(max_length=500, pattern=URL_PATTERN,
                          description="An http:// or https:// address.")
    comment: str | None = Field(None, max_length=2000)


class Dispute(BaseModel):
    """A dispute as its author sees it: the outcome, never the answers an organizer chose."""

    model_config = ConfigDict(extra="forbid")
    id: int
    track: str
    split: str
    key: str
    proposed_answers: list[str]
    evidence_url: str
    comment: str
    status: Literal["open", "accepted", "rejected"]
    reason: str | None = Field(description="A rejection's one-line reason.")
    created_at: Timestamp
    decided_at: Timestamp | None
    gold_version: str | None = Field(description="The published gold version an accepted "
                                                 "dispute went into (null until then).")


class DisputeList(BaseModel):
    """The caller's own disputes, newest first."""

    model_config = ConfigDict(extra="forbid")
    disputes: list[Dispute]


class DisputePath(BaseModel):
    """The path of a dispute."""

    dispute_id: int = Field(ge=1, le=MAX_ID, description="A dispute's id.")


class SubmissionPath(BaseModel):
    """The path of a submission's routes."""

    submission_id: int = Field(ge=1, le=MAX_ID, description="A submission's id.")


# --- operations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One documented route: its models, errors and words."""

    method: str
    path: str
    operation_id: str
    summary: str
    description: str
    response: type[BaseModel] | None
    status: str = "200"
    errors: Sequence[int] = ()
    auth: Literal["required", "optional", "none"] = "required"
    body: type[BaseModel] | None = None
    path_model: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: Each error status's shared response: its name and meaning (every one has the Error shape).
ERRORS: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "The request is malformed; details.fields or details.problems say how."),
    401: ("Unauthorized", "The bearer token is missing, unknown, revoked or expired (codes "
                          "missing_token, invalid_token, token_revoked, token_expired)."),
    404: ("NotFound", "No such resource, or not one the caller may see."),
    409: ("Conflict", "duplicate_submission: your team already has these predictions on this "
                      "track and split (details.submission_id; nothing stored, no quota "
                      "spent); conflict: a request with this Idempotency-Key is still being "
                      "processed; not_released: the Ladder withheld this submission's scores, "
                      "so it cannot be published (details.shown_submission_id)."),
    413: ("TooLarge", "The upload is larger than the server's limit."),
    429: ("TooMany", "A quota or rate limit is reached; quota errors give details.resets_at "
                     "(the next UTC midnight, ISO 8601, or null for the total quota)."),
    503: ("Unavailable", "The gold has not been imported yet."),
}
ERROR_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "The Bearer challenge.",
                               "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds until a request may succeed.",
                          "schema": {"type": "integer", "minimum": 0}}},
}
ONE = f"{API}/submissions/{{submission_id}}"
#: The form bodies (multipart/form-data): described as sent, for validation.
BODIES: frozenset[type[BaseModel]] = frozenset({Upload, DisputeBody})


def operations() -> list[Operation]:
    """Every /api/v1 route."""
    one = SubmissionPath
    return [
        Operation("post", f"{API}/submissions", "createSubmission", "Upload a prediction file",
                  "Validated and scored in the request: 201 with the scores, or 400 with every "
                  "problem (nothing stored, no test quota spent).", Submission, status="201",
                  errors=(400, 401, 409, 413, 429, 503), body=Upload),
        Operation("get", f"{API}/submissions", "listSubmissions", "Your team's submissions",
                  "Newest first, each with its scores.", SubmissionList, errors=(401,)),
        Operation("get", ONE, "getSubmission", "One submission",
                  "Your team's, or any published one (no token needed).", Submission,
                  errors=(401, 404), auth="optional", path_model=one),
        Operation("delete", ONE, "deleteSubmission", "Delete a submission",
                  "Soft delete; the test quota it used is not given back.", None, status="204",
                  errors=(401, 404), path_model=one),
        Operation("get", f"{ONE}/examples", "getExamples", "Per-example rows (dev and train "
                  "only)", "Question, context, gold, prediction and correctness; 404 "
                  "hidden_split on test.", Examples, errors=(401, 404, 503),
                  path_model=one),
        Operation("get", f"{ONE}/eval_results.yaml", "getEvalResults",
                  "Results for a Hub model repository",
                  "The Hugging Face Hub's `.eval_results/*.yaml` entries: one per paper "
                  "metric, `dataset.revision` the gold version, `notes` the partition, n "
                  "and the 95% CI. 404 for a submission the Ladder withheld or that has no "
                  "score on the active gold.", None, errors=(401, 404), auth="optional",
                  path_model=one, extra={"content": {YAML: {"schema": {"type": "array"}}}}),
        Operation("get", f"{ONE}/every_eval_ever.json", "getEveryEvalEver",
                  "An Every Eval Ever record",
                  "Schema 0.3.0: one result per paper metric, its 95% CI in "
                  "`score_details.uncertainty.confidence_interval`.", None,
                  errors=(401, 404), auth="optional", path_model=one,
                  extra={"content": {JSON: {"schema": {"type": "object"}}}}),
        Operation("get", f"{ONE}/model-index.yaml", "getModelIndex",
                  "A model-card model-index block (legacy)",
                  "The README `model-index` YAML that the Hub reads as its legacy format.",
                  None, errors=(401, 404), auth="optional", path_model=one,
                  extra={"content": {YAML: {"schema": {"type": "object"}}}}),
        Operation("post", f"{ONE}/publish", "publishSubmission", "Publish on the leaderboard",
                  "Idempotent; 409 not_released for a submission the Ladder withheld.",
                  Submission, errors=(401, 404, 409), path_model=one),
        Operation("post", f"{ONE}/withdraw", "withdrawSubmission",
                  "Withdraw from the leaderboard", "Private again; idempotent.", Submission,
                  errors=(401, 404), path_model=one),
        *(Operation("get", f"{API}/leaderboards/{track}",
                    f"leaderboard_{track.replace('-', '_')}",
                    f"Leaderboard: {TRACK_INFO[track].title}",
                    "Ranked by the primary metric, with 95% CIs; the paper's numbers have no "
                    "rank.", Leaderboard, errors=(400, 404, 503), auth="none",
                    query=query_model(track)) for track in TRACKS),
        Operation("get", f"{API}/tracks", "listTracks", "Tracks",
                  "Every track: title, metrics and the primary metric.", Tracks, auth="none"),
        Operation("get", f"{API}/quota", "getQuota", "Your team's test quota",
                  "Per track: used today and in total, and limits.", Quota, errors=(401,)),
        Operation("post", f"{API}/disputes", "createDispute", "Dispute an example's gold",
                  "A proposed answer with evidence; an organizer accepts or rejects it. The "
                  "reply never depends on the gold (test gold is never shown). 404 "
                  "unknown_example, 409 already_disputed (once per example and gold version), "
                  "429 past SITUATEDQA_DISPUTE_RATE_LIMIT.", Dispute, status="201",
                  errors=(400, 401, 404, 409, 429, 503), body=DisputeBody),
        Operation("get", f"{API}/disputes", "listDisputes", "Your disputes",
                  "Newest first, each with its outcome.", DisputeList, errors=(401,)),
        Operation("get", f"{API}/disputes/{{dispute_id}}", "getDispute", "One of your disputes",
                  "Anyone else's: 404.", Dispute, errors=(401, 404), path_model=DisputePath),
        Operation("get", f"{API}/openapi.json", "getOpenApi", "This document",
                  "The OpenAPI 3.1 description of /api/v1.", None, auth="none",
                  extra={"content": {JSON: {"schema": {"type": "object"}}}}),
    ]


def response_of(operation: Operation) -> dict[str, Any]:
    """The success response of an operation."""
    words = {"200": "OK.", "201": "Stored (an upload: and scored).", "204": "Done; no body."}
    response: dict[str, Any] = {"description": words[operation.status], **operation.extra}
    if operation.response is not None:
        response["content"] = {JSON: {"schema": {
            "$ref": SCHEMAS.format(model=operation.response.__name__)}}}
    return response


def operation_object(operation: Operation) -> dict[str, Any]:
    """The OpenAPI operation object."""
    found: dict[str, Any] = {
        "summary": operation.summary, "description": operation.description,
        "operationId": operation.operation_id,
        "responses": {operation.status: response_of(operation), **{
            str(status): {"$ref": f"#/components/responses/{ERRORS[status][0]}"}
            for status in operation.errors}}}
    params = [*(parameters(operation.path_model, "path") if operation.path_model else []),
              *(parameters(operation.query, "query") if operation.query else [])]
    if params:
        found["parameters"] = params
    if operation.body is not None:
        found["requestBody"] = {"required": True, "content": {"multipart/form-data": {
            "schema": {"$ref": SCHEMAS.format(model=operation.body.__name__)}}}}
    if operation.auth != "none":
        found["security"] = [{"bearerAuth": []}, *([{}] if operation.auth == "optional" else [])]
    return found


def components(ops: Sequence[Operation]) -> dict[str, Any]:
    """Schemas of every body (pydantic's JSON Schema), error responses, the bearer scheme."""
    return _components(frozenset(m for op in ops for m in (op.response, op.body)
                                 if m is not None) | {Error})


@functools.lru_cache(maxsize=4)
def _components(models: frozenset[type[BaseModel]]) -> dict[str, Any]:
    """components for these models, made once (callers must not change them)."""
    _, schema = models_json_schema(
        [(model, "serialization" if model not in BODIES else "validation")
         for model in sorted(models, key=lambda m: m.__name__)], ref_template=SCHEMAS)
    responses = {}
    for status, (name, description) in ERRORS.items():
        responses[name] = {"description": description, "content": {
            JSON: {"schema": {"$ref": SCHEMAS.format(model="Error")}}}}
        if status in ERROR_HEADERS:
            responses[name]["headers"] = ERROR_HEADERS[status]
    defs = schema["$defs"]
    for body in BODIES & models:
        form = defs[body.__name__]
        form["properties"] = {name: plain(prop, defs) for name, prop in form["properties"].items()}
    return {"schemas": defs, "responses": responses,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}}


def spec() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every /api/v1 route."""
    ops = operations()
    paths: dict[str, dict[str, Any]] = {}
    for operation in ops:
        paths.setdefault(operation.path, {})[operation.method] = operation_object(operation)
    return {
        "openapi": "3.1.0",
        "info": {"title": "SituatedQA evaluation server API", "version": "1.0.0",
                 "description": "Upload predictions, read scores and leaderboards. Every "
                                "error has the shape {\"error\": {\"code\", \"message\", "
                                "\"details\"}}. Authenticate with `Authorization: Bearer "
                                "<token>` (tokens are made on the account page). "
                                "What every metric means, with partition sizes and the "
                                "confidence intervals' method: /metrics/ on this server."},
        "paths": paths,
        "components": components(ops),
    }


@bp.get(f"{API}/openapi.json")
def openapi_json() -> dict[str, Any]:
    """The OpenAPI 3.1 description of /api/v1."""
    return spec()


@bp.get("/docs/api")
def api_docs() -> str:
    """The API reference, rendered on the server from the same document (no script)."""
    document = spec()
    responses = document["components"]["responses"]
    return render_template("insight/api_docs.html", spec=document,
                           schemas=document["components"]["schemas"], responses=responses)
