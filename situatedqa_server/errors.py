"""One error shape for the API, plain pages for browsers, and security headers on everything."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, render_template, request
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


def message_of(error: HTTPException) -> str:
    """A message for the user; Werkzeug's generic 413 text says nothing about the cap."""
    if error.code == 413 and not isinstance(error, ApiError):
        from flask import current_app

        limit = current_app.config["MAX_CONTENT_LENGTH"]
        return f"the upload is larger than the server's limit of {limit} bytes"
    return error.description or error.name or "error"


def render_error(error: HTTPException) -> tuple[Any, int]:
    """The one JSON error shape for the API, an HTML page elsewhere."""
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
    """Log the traceback (never request data) and answer with a generic 500."""
    log.exception("unhandled error on %s %s", request.method, request.path)
    return render_error(InternalServerError())


def add_security_headers(response: Response) -> Response:
    """CSP, nosniff, frame options and referrer policy on every response; HSTS on HTTPS."""
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return response


def init_app(app: Flask) -> None:
    """Register the handlers on the app (all paths, so unknown /api/ routes get JSON too)."""
    app.register_error_handler(HTTPException, render_error)
    app.register_error_handler(Exception, handle_unexpected)
    app.after_request(add_security_headers)
