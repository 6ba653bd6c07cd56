"""One handler for every error: the JSON shape under /api, the site's error page elsewhere.

Service errors (services/errors.ServiceError) carry their status, code and a message safe
to show; Werkzeug's HTTP errors (404, 405, 413, CSRF) and unexpected exceptions (a 500,
logged without their messages) go through the same `respond`. Security headers are added to
every response here too.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from flask import Flask, Response, current_app, g, render_template, request, session
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed

from benchmark import UnknownTrackError

from .services.errors import ServiceError, UnknownTrack

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'self'"
)


#: What a page says, in the site's words, for the statuses a visitor meets, and where to go.
PAGE_WORDS: dict[int, tuple[str, str]] = {
    400: ("That request could not be used", "Check what you sent and try again."),
    401: ("Please log in", "Log in, or send an API token, to do this."),
    403: ("Not allowed", "Your account cannot do this. Organizers can; ask them."),
    404: ("Page not found", "There is no page at this address: it may have moved, or the "
                            "submission, track or version may not exist or not be public."),
    405: ("Not available this way", "This address exists, but not for this kind of request "
                                    "(for example a form sent to a page that only shows)."),
    409: ("That conflicts with what is there", "Nothing was changed."),
    413: ("Too large", "The upload is larger than the server accepts."),
    429: ("Too many requests", "Wait a moment, then try again."),
    500: ("Something went wrong on our side", "The error was logged. Try again in a "
                                              "moment; if it keeps happening, tell the "
                                              "organizers what you were doing."),
    503: ("Not available right now", "The server is not ready for this yet; try again later."),
}


def error_code_of(error: HTTPException) -> str:
    """A snake_case code for an HTTP error, e.g. not_found, request_entity_too_large."""
    if isinstance(error, CSRFError):
        return "csrf_failed"
    return (error.name or "error").lower().replace(" ", "_").replace("-", "_")


def wants_json() -> bool:
    """The API always answers in JSON; pages answer in HTML, but a download of data
    (`.jsonl`, `.json`) asked for as JSON (the client, the harness tasks) gets its error
    in JSON too."""
    if request.path.startswith("/api/"):
        return True
    return (request.path.endswith((".jsonl", ".json"))
            and request.accept_mimetypes.best_match(["text/html", "application/json"])
            == "application/json")


def session_lost() -> bool:
    """True when a page form was posted without a live login (logged out in another tab)."""
    return not wants_json() and "user_id" not in session


def message_of(error: HTTPException) -> str:
    """A message for the user; Werkzeug's generic 413 text says nothing about the cap."""
    if error.code == 413:
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        return f"the upload is larger than the server's limit of {limit} bytes"
    if error.description == type(error).description and error.code in PAGE_WORDS:
        return PAGE_WORDS[error.code][1]  # the site's words, not Werkzeug's stock sentence
    return error.description or error.name or "error"


def render_error(error: HTTPException) -> tuple[Any, int]:
    """Werkzeug's HTTP errors (404, 405, 413, CSRF, …) in the one shape (see respond).

    A page form posted after its session ended is answered by auth's handler for CSRFError.
    """
    status = error.code or 500
    headers: dict[str, str] = {}
    if status == 429:
        retry = getattr(error, "retry_after", None)
        if retry:
            headers["Retry-After"] = str(int(retry))
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        headers["Allow"] = ", ".join(error.valid_methods)
    return respond(status, error_code_of(error), message_of(error), None, headers)


def render_service_error(error: ServiceError) -> tuple[Any, int]:
    """A service's error, with the status, code and message it carries (see respond)."""
    return respond(error.http_status, error.error_code, error.message, error.details,
                   error.headers)


def render_unknown_track(error: UnknownTrackError) -> tuple[Any, int]:
    """The library's unknown track or split, reaching a view: the server's one UnknownTrack
    (404 not_found), so that a name the benchmark lacks is answered alike wherever it is
    read."""
    return render_service_error(UnknownTrack(str(error)))


def respond(status: int, code: str, message: str, details: Any,
            headers: dict[str, str]) -> tuple[Any, int]:
    """The one JSON error shape under /api/, the site's error page elsewhere."""
    payload = {"error": {"code": code, "message": message, "details": details}}
    if wants_json():
        return payload, status, headers  # type: ignore[return-value]
    title, advice = PAGE_WORDS.get(status, PAGE_WORDS[500 if status >= 500 else 400])
    if advice == message:
        advice = ""
    page = render_template("error.html", status=status, error=payload["error"], title=title,
                           advice=advice)
    return page, status, headers  # type: ignore[return-value]


def handle_unexpected(error: Exception) -> tuple[Any, int]:
    """Log the exception classes and traceback (never messages or request data); a 500.

    An exception's message may quote request data (SQLAlchemy's quotes the statement's
    parameters), so only the class names of the chain and the stack are written.
    """
    chain: list[str] = []
    cause = error.__cause__ or error.__context__
    while cause is not None and len(chain) < 5:
        chain.append(type(cause).__qualname__)
        cause = cause.__cause__ or cause.__context__
    log.error("unhandled %s%s on %s %s (message withheld)\n%s", type(error).__qualname__,
              f" caused by {' <- '.join(chain)}" if chain else "", request.method,
              request.path, "".join(traceback.format_tb(error.__traceback__)))
    return render_error(InternalServerError())


def is_private() -> bool:
    """A response for a logged-in visitor or a token holder: no cache may keep it."""
    if request.endpoint == "static":
        return False
    return g.get("user") is not None or "Authorization" in request.headers


def add_security_headers(response: Response) -> Response:
    """CSP, nosniff, frame options and referrer policy on every response; HSTS on HTTPS."""
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    if is_private():
        response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    """Register the handlers on the app (all paths, so unknown /api/ routes get JSON too)."""
    app.register_error_handler(HTTPException, render_error)
    app.register_error_handler(ServiceError, render_service_error)
    app.register_error_handler(UnknownTrackError, render_unknown_track)
    app.register_error_handler(Exception, handle_unexpected)
    app.after_request(add_security_headers)
