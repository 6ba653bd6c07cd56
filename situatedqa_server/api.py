"""The JSON API under /api/v1: bearer-token uploads, submissions, leaderboards.

Every error, including 404, 405, 413 and 429, has the shape
{"error": {"code": …, "message": …, "details": …}} (see errors.py).
"""

from __future__ import annotations

from typing import Any, Literal, overload

from flask import Blueprint, Response, current_app, request
from flask_wtf import FlaskForm

from benchmark import TRACK_INFO, TRACKS
from benchmark.harness import fingerprint

from .disputes import dispute_json, file_from, rate_key
from .extensions import config_limit, limiter
from .forms import DisputeForm, SubmissionForm
from .models import Score, Submission, User, utcnow
from .services import (
    accounts,
    disputes,
    exports,
    hub_results,
    idempotency,
    ladder,
    quotas,
    scoring,
    team_entries,
    visibility,
)
from .services.board import parse_board_query
from .services.duplicates import DuplicateSubmission
from .services.errors import InvalidRequest, MissingToken, UnknownField
from .services.leaderboards import iso, load_board

bp = Blueprint("api", __name__, url_prefix="/api/v1")


@overload
def token_user(required: Literal[True] = True) -> User: ...
@overload
def token_user(required: bool) -> User | None: ...
def token_user(required: bool = True) -> User | None:
    """The user of the request's bearer token; 401 when required and absent or invalid."""
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        if required:
            raise MissingToken("send an API token as 'Authorization: Bearer …'",
                               headers={"WWW-Authenticate": "Bearer"})
        return None
    return accounts.user_for_token(raw.strip())  # TokenError: 401 with its code


def submission_json(submission: Submission, score: Score | None) -> dict[str, Any]:
    """A submission with its scores in the CLI's shape and its metadata."""
    return {
        "id": submission.id, "status": "scored", "track": submission.track,
        "split": submission.split, "method_name": submission.method_name,
        "team": submission.team.name, "visibility": submission.visibility,
        "hidden": submission.hidden, "flag": submission.flag_reason,
        "submitted_at": iso(submission.created_at),
        "primary_metric": TRACK_INFO[submission.track].primary,
        # Under the Ladder, a withheld submission shows the scores of shown_submission_id.
        "released": submission.is_released, "shown_submission_id": scoring.shown_id(submission),
        "feedback": ladder.message(submission),
        **scoring.score_payload(score),
        "description": submission.description, "paper_url": submission.paper_url,
        "code_url": submission.code_url, "model_type": submission.model_type,
        "fine_tuned": submission.fine_tuned, "knowledge_date": submission.knowledge_date,
        "knowledge_cutoff": (submission.knowledge_cutoff.isoformat()
                             if submission.knowledge_cutoff else None),
        "parameter_count": submission.parameter_count, "format": submission.format,
        "scorer": fingerprint(), "harness": scoring.harness_shown(submission),
    }


@bp.post("/submissions")
@limiter.limit(config_limit("UPLOAD_RATE_LIMIT"))
def create_submission() -> tuple[dict[str, Any], int]:
    """Validate, score and store an upload; 201 with the scores (replayed for a known key)."""
    user = token_user()
    form = SubmissionForm(meta={"csrf": False})
    refuse_unknown_fields(form)
    if not form.validate():
        raise InvalidRequest("some fields are missing or invalid", {"fields": form.errors})
    data, key = form.file.data.read(), idempotency_key()
    digest = idempotency.request_digest(request.form.items(multi=True), data) if key else ""
    if key and (stored := replay(user, key, digest)) is not None:
        return stored
    body: dict[str, Any] = {}

    def before_commit(submission: Submission, score: Score) -> None:
        # Built in the upload's transaction: nothing is read again after the commit, and an
        # Idempotency-Key records this very body.
        body.update(submission_json(submission, score))
        if key:
            idempotency.record(user, key, digest, body)

    try:
        scoring.submit(user, form.track.data, form.split.data, data,
                       form.file.data.filename or "upload", form.to_meta(), before_commit)
    except (idempotency.ConcurrentRequest, DuplicateSubmission):
        # The same request, retried while the first was being stored: its response (else
        # the error itself, rendered by the one handler).
        if key and (stored := replay(user, key, digest)) is not None:
            return stored
        raise
    return body, 201


def refuse_unknown_fields(form: FlaskForm) -> None:
    """400 naming every field the upload does not know (a typo would be dropped unseen)."""
    allowed = list(form._fields)
    unknown = sorted(set(request.form) - set(allowed))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise UnknownField(
            f"unknown field{'s' if len(unknown) > 1 else ''} {names}; the upload's "
                       f"fields are {', '.join(allowed)}; nothing was stored",
                       {"unknown": unknown, "allowed": allowed})


def idempotency_key() -> str | None:
    """The request's Idempotency-Key header, checked (400 when malformed)."""
    key = request.headers.get(idempotency.HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= idempotency.MAX_KEY_LENGTH or not key.isprintable() \
            or not key.isascii():
        raise InvalidRequest(f"{idempotency.HEADER} must be 1 to "
                             f"{idempotency.MAX_KEY_LENGTH} printable ASCII characters")
    return key


def replay(user: User, key: str, digest: str) -> tuple[dict[str, Any], int] | None:
    """The first response to this key, or None; 422 when the key named another request."""
    return idempotency.replay(user, key, digest)  # KeyReused: 422


@bp.get("/submissions")
def list_submissions() -> dict[str, Any]:
    """The token owner's team's submissions, newest first."""
    user = token_user()
    rows = team_entries.team_submissions(user.team_id)
    return {"submissions": [submission_json(s, scoring.score_for(s)) for s in rows]}


@bp.get("/submissions/<int:submission_id>")
def get_submission(submission_id: int) -> dict[str, Any]:
    """One submission: the team's own, or a published one."""
    submission = visibility.visible(submission_id, token_user(required=False))
    return submission_json(submission, scoring.score_for(submission))


@bp.get("/submissions/<int:submission_id>/eval_results.yaml")
def get_eval_results(submission_id: int) -> Response:
    """The Hub's `.eval_results` YAML of a submission the token may see."""
    run = hub_results.run_for(submission_id, token_user(required=False))
    return Response(hub_results.eval_results_yaml(run), mimetype="application/yaml")


@bp.get("/submissions/<int:submission_id>/every_eval_ever.json")
def get_every_eval_ever(submission_id: int) -> dict[str, Any]:
    """An Every Eval Ever record of a submission the token may see."""
    run = hub_results.run_for(submission_id, token_user(required=False))
    return hub_results.every_eval_ever(run, utcnow())


@bp.get("/submissions/<int:submission_id>/model-index.yaml")
def get_model_index(submission_id: int) -> Response:
    """The legacy model-card `model-index` YAML of a submission the token may see."""
    run = hub_results.run_for(submission_id, token_user(required=False))
    return Response(exports.model_index(run.submission, run.score), mimetype="application/yaml")


@bp.get("/submissions/<int:submission_id>/examples")
def get_examples(submission_id: int) -> dict[str, Any]:
    """Per-example rows of a team's own dev or train submission (never test)."""
    submission = visibility.changeable(submission_id, token_user())
    return {"id": submission.id, "examples": scoring.example_rows(submission)}


@bp.post("/submissions/<int:submission_id>/publish")
def publish(submission_id: int) -> dict[str, Any]:
    """Publish a submission on the leaderboard."""
    user = token_user()
    submission = visibility.changeable(submission_id, user)
    visibility.publish(submission, user)  # NotReleased: 409
    return submission_json(submission, scoring.score_for(submission))


@bp.post("/submissions/<int:submission_id>/withdraw")
def withdraw(submission_id: int) -> dict[str, Any]:
    """Make a submission private again."""
    user = token_user()
    submission = visibility.changeable(submission_id, user)
    visibility.withdraw(submission, user)
    return submission_json(submission, scoring.score_for(submission))


@bp.delete("/submissions/<int:submission_id>")
def delete(submission_id: int) -> tuple[str, int]:
    """Soft-delete a submission; its quota is not given back."""
    user = token_user()
    visibility.delete(visibility.changeable(submission_id, user), user)
    return "", 204


@bp.get("/leaderboards/<track>")
def leaderboard(track: str) -> dict[str, Any]:
    """A leaderboard page as JSON (same query parameters as the page)."""
    board = load_board(parse_board_query(track, request.args,
                                          current_app.config["LEADERBOARD_PAGE_SIZE"],
                                          strict=True))
    q = board.query
    return {"track": q.track, "split": q.split, "primary_metric": board.primary,
            "gold_version": board.version, "columns": board.columns,
            "sort": q.sort or board.primary,
            "order": "asc" if q.ascending else "desc", "page": q.page, "per_page": q.per_page,
            "total": board.total, "entries": board.entries}


@bp.get("/tracks")
def tracks() -> dict[str, Any]:
    """Every track: title, metrics and the primary metric."""
    return {"tracks": [{"name": t, "title": TRACK_INFO[t].title,
                        "metrics": list(TRACK_INFO[t].metrics),
                        "primary_metric": TRACK_INFO[t].primary,
                        "description": TRACK_INFO[t].description} for t in TRACKS]}


@bp.get("/quota")
def quota() -> dict[str, Any]:
    """The token owner's team's test quota on every track."""
    user = token_user()
    usage = {t: quotas.usage(user.team_id, t) for t in TRACKS}
    return {"resets_at": quotas.next_reset(), "tracks": {
        t: {"used_today": u.used_today, "daily_limit": u.daily_limit,
            "used_total": u.used_total, "total_limit": u.total_limit,
            "remaining": u.remaining} for t, u in usage.items()}}


@bp.post("/disputes")
@limiter.limit(config_limit("DISPUTE_RATE_LIMIT"), key_func=rate_key)
def create_dispute() -> tuple[dict[str, Any], int]:
    """Dispute an example's gold (the page's form fields); the reply never depends on it."""
    user = token_user()
    form = DisputeForm(meta={"csrf": False})
    refuse_unknown_fields(form)
    dispute = file_from(form, user)
    return dispute_json(dispute, {}), 201


@bp.get("/disputes")
def list_disputes() -> dict[str, Any]:
    """The token owner's own disputes, newest first, with their outcomes."""
    rows = disputes.mine(token_user())
    published = disputes.published_names(rows)
    return {"disputes": [dispute_json(d, published) for d in rows]}


@bp.get("/disputes/<int:dispute_id>")
def get_dispute(dispute_id: int) -> dict[str, Any]:
    """One of the token owner's own disputes (anyone else's: 404)."""
    dispute = disputes.own(dispute_id, token_user())
    return dispute_json(dispute, disputes.published_names([dispute]))
