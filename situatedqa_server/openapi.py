"""The OpenAPI 3 description of /api/v1, built from the code's own constants, and its page.

Each leaderboard is its own path (/api/v1/leaderboards/temp, …) because the columns one can
sort by differ per track: a single templated path could not say which values are valid.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template
from werkzeug.datastructures import MultiDict

from benchmark import SPLITS, TRACK_INFO, TRACKS

from .converters import MAX_ID
from .errors import ApiError
from .models import ModelType
from .services.gold_store import GoldUnavailable
from .services.leaderboards import MAX_PAGE, MAX_PER_PAGE, TEXT_COLUMNS, columns_of

bp = Blueprint("openapi", __name__)
API = "/api/v1"
JSON = "application/json"
PAGE_PARAMETERS = ("split", "sort", "order", "hide_baselines", "model_type", "fine_tuned",
                   "page", "per_page", "version")
YES_NO = ["1", "0", "yes", "no", "true", "false", "on", "off"]
#: Text without the control characters every input refuses (see inputs.CONTROL).
NO_CONTROLS = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$"


def ref(name: str) -> dict[str, str]:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema that also allows null (OpenAPI 3.0 style)."""
    return {**schema, "nullable": True}


def json_body(schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    """A JSON response object."""
    return {"description": description, "content": {JSON: {"schema": schema}}, **extra}


def error(description: str, **headers: dict[str, Any]) -> dict[str, Any]:
    """An error response in the one error shape, with optional documented headers."""
    response = json_body(ref("Error"), description)
    if headers:
        response["headers"] = headers
    return response


RETRY_AFTER = {"description": "Seconds until a request may succeed.",
               "schema": {"type": "integer", "minimum": 0}}
WWW_AUTHENTICATE = {"description": "The Bearer challenge.", "schema": {"type": "string"}}
RESPONSES: dict[str, dict[str, Any]] = {
    "BadRequest": error("The request is malformed; details.fields or details.problems say how."),
    "Unauthorized": error("The bearer token is missing, unknown, revoked or expired "
                          "(codes missing_token, invalid_token, token_revoked, token_expired).",
                          **{"WWW-Authenticate": WWW_AUTHENTICATE}),
    "NotFound": error("No such resource, or not one the caller may see."),
    "TooLarge": error("The upload is larger than the server's limit."),
    "TooMany": error("A quota or rate limit is reached; quota errors give details.resets_at "
                     "(the next UTC midnight, ISO 8601, or null for the total quota).",
                     **{"Retry-After": RETRY_AFTER}),
    "Unavailable": error("The gold has not been imported yet."),
    "Conflict": error("duplicate_submission: your team already has these predictions on this "
                      "track and split (details.submission_id; nothing stored, no quota "
                      "spent); conflict: a request with this Idempotency-Key is still being "
                      "processed; not_released: the Ladder withheld this submission's "
                      "scores, so it cannot be published (details.shown_submission_id)."),
}


def respond(*names: str) -> dict[str, Any]:
    """References to shared error responses by status."""
    status = {"BadRequest": "400", "Unauthorized": "401", "NotFound": "404", "Conflict": "409",
              "TooLarge": "413", "TooMany": "429", "Unavailable": "503"}
    return {status[n]: {"$ref": f"#/components/responses/{n}"} for n in names}


METRICS = {"type": "object", "description": "Metric name to value in percent (null: undefined).",
           "additionalProperties": nullable({"type": "number"})}
CIS = {"type": "object", "description": "Metric name to its 95% bootstrap CI [low, high].",
       "additionalProperties": nullable({"type": "array", "items": {"type": "number"},
                                         "minItems": 2, "maxItems": 2})}
COUNTS = {"type": "object", "description": "Metric name to the number of examples behind it.",
          "additionalProperties": {"type": "integer"}}
SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object", "required": ["error"],
        "description": "The one error shape of every /api/v1 response with status >= 400.",
        "properties": {"error": {
            "type": "object", "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "description": "snake_case, e.g. quota_exceeded."},
                "message": {"type": "string", "description": "A sentence for people."},
                "details": {"description": "Machine-readable context, or null.",
                            "nullable": True},
            }}},
    },
    "Submission": {
        "type": "object",
        "required": ["id", "status", "track", "split", "method_name", "team", "visibility",
                     "hidden", "submitted_at", "primary_metric", "metrics", "ci", "counts",
                     "n"],
        "properties": {
            "id": {"type": "integer"}, "status": {"type": "string", "enum": ["scored"]},
            "track": {"type": "string", "enum": list(TRACKS)},
            "split": {"type": "string", "enum": list(SPLITS)},
            "method_name": {"type": "string"}, "team": {"type": "string"},
            "visibility": {"type": "string", "enum": ["private", "public"]},
            "hidden": {"type": "boolean"}, "flag": nullable({"type": "string"}),
            "submitted_at": {"type": "string", "format": "date-time"},
            "primary_metric": {"type": "string"}, "n": nullable({"type": "integer"}),
            "metrics": METRICS, "ci": CIS, "counts": COUNTS,
            "description": {"type": "string"}, "paper_url": nullable({"type": "string"}),
            "code_url": nullable({"type": "string"}), "model_type": {"type": "string"},
            "fine_tuned": {"type": "boolean"}, "knowledge_date": nullable({"type": "string"}),
            "parameter_count": nullable({"type": "integer"}), "format": {"type": "string"},
            "released": {"type": "boolean", "description": (
                "False when SITUATEDQA_TEST_FEEDBACK=ladder withheld this test submission's "
                "scores: metrics, ci and counts are then those of shown_submission_id.")},
            "shown_submission_id": {"type": "integer", "description": (
                "The submission whose scores are shown: this one unless withheld.")},
            "feedback": nullable({"type": "string", "description": (
                "Why the scores shown are another submission's (null when released).")}),
        },
    },
    "SubmissionList": {"type": "object", "required": ["submissions"], "properties": {
        "submissions": {"type": "array", "items": ref("Submission")}}},
    "Examples": {"type": "object", "required": ["id", "examples"], "properties": {
        "id": {"type": "integer"},
        "examples": {"type": "array", "items": {
            "type": "object", "required": ["key", "question", "correct"],
            "description": "One dev/train example: inputs, gold, prediction, correctness.",
            "properties": {"key": {"type": "string"}, "question": {"type": "string"},
                           "context": {"type": "object"},
                           "partitions": {"type": "array", "items": {"type": "string"}},
                           "correct": {"type": "boolean"},
                           "correct_any": {"type": "boolean"}}}}}},
    "LeaderboardEntry": {
        "type": "object",
        "required": ["id", "rank", "method_name", "metrics", "ci", "baseline", "reported"],
        "properties": {
            "id": nullable({"type": "integer"}), "rank": nullable({"type": "integer"}),
            "method_name": {"type": "string"}, "team": nullable({"type": "string"}),
            "metrics": METRICS, "ci": CIS, "baseline": {"type": "boolean"},
            "reported": {"type": "boolean", "description": "A number from the paper."},
            "submitted_at": nullable({"type": "string", "format": "date-time"}),
            "paper_url": nullable({"type": "string"}), "code_url": nullable({"type": "string"}),
            "model_type": {"type": "string"}, "fine_tuned": {"type": "boolean"},
            "flag": nullable({"type": "string"}), "source": nullable({"type": "string"}),
        },
    },
    "Leaderboard": {
        "type": "object",
        "required": ["track", "split", "primary_metric", "columns", "sort", "order", "page",
                     "per_page", "total", "entries"],
        "properties": {
            "track": {"type": "string", "enum": list(TRACKS)},
            "split": {"type": "string", "enum": list(SPLITS)},
            "primary_metric": {"type": "string"}, "gold_version": {"type": "string"},
            "columns": {"type": "array", "items": {"type": "string"}},
            "sort": {"type": "string"}, "order": {"type": "string", "enum": ["asc", "desc"]},
            "page": {"type": "integer"}, "per_page": {"type": "integer"},
            "total": {"type": "integer"},
            "entries": {"type": "array", "items": ref("LeaderboardEntry")},
        },
    },
    "Tracks": {"type": "object", "required": ["tracks"], "properties": {"tracks": {
        "type": "array", "items": {
            "type": "object",
            "required": ["name", "title", "metrics", "primary_metric", "description"],
            "properties": {"name": {"type": "string"}, "title": {"type": "string"},
                           "metrics": {"type": "array", "items": {"type": "string"}},
                           "primary_metric": {"type": "string"},
                           "description": {"type": "string"}}}}}},
    "Quota": {"type": "object", "required": ["resets_at", "tracks"], "properties": {
        "resets_at": {"type": "string", "format": "date-time",
                      "description": "The next UTC midnight."},
        "tracks": {"type": "object", "additionalProperties": {
            "type": "object",
            "required": ["used_today", "daily_limit", "used_total", "total_limit", "remaining"],
            "properties": {name: {"type": "integer"} for name in (
                "used_today", "daily_limit", "used_total", "total_limit", "remaining")}}}}},
}

SUBMISSION_ID = {"name": "submission_id", "in": "path", "required": True,
                 "description": "A submission's id.",
                 "schema": {"type": "integer", "format": "int32", "minimum": 1,
                            "maximum": MAX_ID}}
BEARER: list[dict[str, list[str]]] = [{"bearerAuth": []}]
UPLOAD_FORM = {
    "type": "object", "required": ["track", "split", "file", "method_name"],
    "properties": {
        "track": {"type": "string", "enum": list(TRACKS)},
        "split": {"type": "string", "enum": list(SPLITS)},
        "file": {"type": "string", "format": "binary",
                 "description": "Predictions: JSONL, JSON or CSV, optionally gzip-compressed."},
        "method_name": {"type": "string", "maxLength": 200, "pattern": r"\S"},
        "description": {"type": "string", "maxLength": 5000},
        "paper_url": {"type": "string", "maxLength": 500,
                      "pattern": r"^https?://[A-Za-z0-9.-]+(/[!-~]*)?$"},
        "code_url": {"type": "string", "maxLength": 500,
                     "pattern": r"^https?://[A-Za-z0-9.-]+(/[!-~]*)?$"},
        "model_type": {"type": "string", "enum": [m.value for m in ModelType]},
        "fine_tuned": {"type": "string", "enum": YES_NO},
        "knowledge_date": {"type": "string",
                           "pattern": r"^[0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?$"},
        "parameter_count": {"type": "string", "pattern": r"^[0-9]{1,12}[kKmMbBtT]?$",
                            "description": "e.g. 770M, 11B or 1500000."},
        "public": {"type": "string", "enum": YES_NO,
                   "description": "Publish on the leaderboard at once."},
    },
}


def operation(summary: str, description: str, responses: dict[str, Any],
              **extra: Any) -> dict[str, Any]:
    """An operation object with its summary, description and responses."""
    return {"summary": summary, "description": description, "responses": responses, **extra}


def submission_paths() -> dict[str, Any]:
    """The submission routes: upload, list, read, per-example rows, publish, withdraw, delete."""
    one = {"200": json_body(ref("Submission"), "The submission with its scores.")}
    return {
        f"{API}/submissions": {
            "post": operation(
                "Upload a prediction file",
                "Validated and scored in the request: 201 with the scores, or 400 with "
                "every problem (nothing stored, no test quota spent).",
                {"201": json_body(ref("Submission"), "Stored and scored."),
                 **respond("BadRequest", "Unauthorized", "Conflict", "TooLarge", "TooMany",
                           "Unavailable")},
                operationId="createSubmission", security=BEARER,
                requestBody={"required": True, "content": {
                    "multipart/form-data": {"schema": UPLOAD_FORM}}}),
            "get": operation(
                "Your team's submissions", "Newest first, each with its scores.",
                {"200": json_body(ref("SubmissionList"), "The submissions."),
                 **respond("Unauthorized")}, operationId="listSubmissions", security=BEARER),
        },
        f"{API}/submissions/{{submission_id}}": {
            "get": operation(
                "One submission", "Your team's, or any published one (no token needed).",
                {**one, **respond("Unauthorized", "NotFound")}, operationId="getSubmission",
                parameters=[SUBMISSION_ID], security=[{"bearerAuth": []}, {}]),
            "delete": operation(
                "Delete a submission", "Soft delete; the test quota it used is not given back.",
                {"204": {"description": "Deleted."}, **respond("Unauthorized", "NotFound")},
                operationId="deleteSubmission", parameters=[SUBMISSION_ID], security=BEARER),
        },
        f"{API}/submissions/{{submission_id}}/examples": {"get": operation(
            "Per-example rows (dev and train only)",
            "Question, context, gold, prediction and correctness; 404 hidden_split on test.",
            {"200": json_body(ref("Examples"), "One row per example."),
             **respond("Unauthorized", "NotFound", "Unavailable")},
            operationId="getExamples", parameters=[SUBMISSION_ID], security=BEARER)},
        f"{API}/submissions/{{submission_id}}/publish": {"post": operation(
            "Publish on the leaderboard",
            "Idempotent; 409 not_released for a submission the Ladder withheld.",
            {**one, **respond("Unauthorized", "NotFound", "Conflict")},
            operationId="publishSubmission",
            parameters=[SUBMISSION_ID], security=BEARER)},
        f"{API}/submissions/{{submission_id}}/withdraw": {"post": operation(
            "Withdraw from the leaderboard", "Private again; idempotent.",
            {**one, **respond("Unauthorized", "NotFound")}, operationId="withdrawSubmission",
            parameters=[SUBMISSION_ID], security=BEARER)},
    }


def split_columns(track: str) -> dict[str, list[str]]:
    """The metric columns of each split of a track (identification: per source dataset)."""
    try:
        return {split: columns_of(track, split) for split in SPLITS}
    except GoldUnavailable:
        return {split: list(TRACK_INFO[track].metrics) for split in SPLITS}


def board_parameters(track: str) -> list[dict[str, Any]]:
    """The query parameters of a track's leaderboard (the columns depend on track and split)."""
    by_split = split_columns(track)
    columns = sorted({c for cs in by_split.values() for c in cs})
    per_split = "; ".join(f"{split}: {', '.join(cs)}" for split, cs in by_split.items())

    def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": False, "schema": schema,
                "description": description}

    return [
        query("split", {"type": "string", "enum": list(SPLITS), "default": "test"}, "Split."),
        {**query("sort", {"type": "string", "enum": [*columns, *TEXT_COLUMNS]},
                 f"Column to sort by (default: the primary metric). The metric columns "
                 f"depend on the split ({per_split}); every split also has "
                 f"{', '.join(TEXT_COLUMNS)}. A column the split lacks: 400."),
         "x-columns-by-split": {split: [*cs, *TEXT_COLUMNS] for split, cs in by_split.items()}},
        query("order", {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
              "Sort order."),
        query("hide_baselines", {"type": "string", "enum": YES_NO},
              "Hide baselines and the paper's numbers."),
        query("model_type", {"type": "string", "enum": [m.value for m in ModelType]},
              "Only this model type."),
        query("fine_tuned", {"type": "string", "enum": ["yes", "no"]},
              "Only fine-tuned (yes) or not (no) systems."),
        query("page", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1},
              "Page number."),
        query("per_page", {"type": "integer", "minimum": 1, "maximum": MAX_PER_PAGE},
              "Entries per page."),
        query("version", {"type": "string", "maxLength": 80, "pattern": NO_CONTROLS},
              "A published gold version's name (absent or empty: the active one); "
              "unknown: 404."),
    ]


def value_problem(schema: dict[str, Any], value: str) -> str | None:
    """Why a query value does not fit its documented schema, or None when it does."""
    if "enum" in schema and value not in schema["enum"]:
        return f"choose one of {', '.join(map(str, schema['enum']))}"
    if schema["type"] == "integer":
        if not (value.isascii() and value.isdigit()):
            return "must be a whole number"
        if not schema.get("minimum", 0) <= int(value) <= schema.get("maximum", MAX_ID):
            return f"must be between {schema.get('minimum', 0)} and {schema['maximum']}"
    if len(value) > schema.get("maxLength", len(value)):
        return f"must have at most {schema['maxLength']} characters"
    return None


def check_board_query(track: str, args: MultiDict[str, str]) -> None:
    """400 for a leaderboard query value the description does not allow (unknown track: 404
    later). Pages stay lenient; the API answers exactly what it documents."""
    if track not in TRACK_INFO:
        return
    problems = {}
    for parameter in board_parameters(track):
        values = args.getlist(parameter["name"])
        if len(values) > 1:
            problems[parameter["name"]] = "give it once"
        elif values and (problem := value_problem(parameter["schema"], values[0])):
            problems[parameter["name"]] = problem
        elif values and "x-columns-by-split" in parameter:
            split = args.get("split", "test")
            allowed = parameter["x-columns-by-split"].get(split, [])
            if split in SPLITS and values[0] not in allowed:
                problems["sort"] = (f"the {split} split has no such column; choose one of "
                                    f"{', '.join(allowed)}")
    if problems:
        raise ApiError(400, "invalid_query", "some query parameters are invalid",
                       {"fields": problems})


def leaderboard_paths() -> dict[str, Any]:
    """One path per track's leaderboard, each with its own sortable columns."""
    return {f"{API}/leaderboards/{track}": {"get": operation(
        f"Leaderboard: {TRACK_INFO[track].title}",
        "Ranked by the primary metric, with 95% CIs; the paper's numbers have no rank.",
        {"200": json_body(ref("Leaderboard"), "One page of entries."),
         **respond("BadRequest", "NotFound", "Unavailable")},
        operationId=f"leaderboard_{track.replace('-', '_')}",
        parameters=board_parameters(track))} for track in TRACKS}


def spec() -> dict[str, Any]:
    """The OpenAPI 3.0 document of every /api/v1 route."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "SituatedQA evaluation server API", "version": "1.0.0",
                 "description": "Upload predictions, read scores and leaderboards. Every "
                                "error has the shape {\"error\": {\"code\", \"message\", "
                                "\"details\"}}. Authenticate with `Authorization: Bearer "
                                "<token>` (tokens are made on the account page)."},
        "paths": {
            **submission_paths(), **leaderboard_paths(),
            f"{API}/tracks": {"get": operation(
                "Tracks", "Every track: title, metrics and the primary metric.",
                {"200": json_body(ref("Tracks"), "The tracks.")}, operationId="listTracks")},
            f"{API}/quota": {"get": operation(
                "Your team's test quota", "Per track: used today and in total, and limits.",
                {"200": json_body(ref("Quota"), "The quota."), **respond("Unauthorized")},
                operationId="getQuota", security=BEARER)},
            f"{API}/openapi.json": {"get": operation(
                "This document", "The OpenAPI 3 description of /api/v1.",
                {"200": json_body({"type": "object"}, "The OpenAPI document.")},
                operationId="getOpenApi")},
        },
        "components": {
            "schemas": SCHEMAS, "responses": RESPONSES,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
    }


@bp.get(f"{API}/openapi.json")
def openapi_json() -> dict[str, Any]:
    """The OpenAPI 3 description of /api/v1."""
    return spec()


@bp.get("/docs/api")
def api_docs() -> str:
    """The API reference, rendered on the server from the same document (no script)."""
    document = spec()
    return render_template("insight/api_docs.html", spec=document,
                           schemas=document["components"]["schemas"],
                           responses=document["components"]["responses"])
