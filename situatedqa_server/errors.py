"""One error shape for the API, plain pages for browsers, and security headers on everything."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from flask import Flask, Response, current_app, g, render_template, request, session
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException, InternalServerError, MethodNotAllowed

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'self'"
)


class ApiError(HTTPException):
    """An error with a machine-readable code and details, rendered in the one error shape."""

    def __init__(self, status: int, code: str, message: str,
                 details: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(description=message)
        self.code = status
        self.error_code = code
        self.details = details
        self.extra_headers = headers or {}


def error_code_of(error: HTTPException) -> str:
    """A snake_case code for an HTTP error, e.g. not_found, request_entity_too_large."""
    if isinstance(error, ApiError):
        return error.error_code
    if isinstance(error, CSRFError):
        return "csrf_failed"
    return (error.name or "error").lower().replace(" ", "_").replace("-", "_")


def wants_json() -> bool:
    """The API always answers in JSON; pages answer in HTML."""
    return request.path.startswith("/api/")


def session_lost() -> bool:
    """True when a page form was posted without a live login (logged out in another tab)."""
    return not wants_json() and "user_id" not in session


def message_of(error: HTTPException) -> str:
    """A message for the user; Werkzeug's generic 413 text says nothing about the cap."""
    if error.code == 413 and not isinstance(error, ApiError):
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        return f"the upload is larger than the server's limit of {limit} bytes"
    return error.description or error.name or "error"


def render_error(error: HTTPException) -> tuple[Any, int]:
    """The one JSON error shape for the API, an HTML page elsewhere.

    A page form posted after its session ended is answered by auth's handler for CSRFError.
    """
    status = error.code or 500
    payload = {"error": {"code": error_code_of(error), "message": message_of(error),
                         "details": getattr(error, "details", None)}}
    headers = dict(getattr(error, "extra_headers", {}))
    if status == 429 and "Retry-After" not in headers:
        retry = getattr(error, "retry_after", None)
        if retry:
            headers["Retry-After"] = str(int(retry))
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        headers["Allow"] = ", ".join(error.valid_methods)
    if wants_json():
        return payload, status, headers  # type: ignore[return-value]
    page = render_template("error.html", status=status, error=payload["error"])
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
    app.register_error_handler(Exception, handle_unexpected)
    app.after_request(add_security_headers)
