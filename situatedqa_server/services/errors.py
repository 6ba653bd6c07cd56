"""The one base class of the services' errors: an HTTP status, a code and a safe message.

A service raises a subclass; one handler (situatedqa_server/errors.py) renders every one of
them, as the API's JSON error shape under /api and as the site's error page elsewhere, so no
view catches a service error only to translate it. The message and details are shown to
the user: they must never hold hidden gold or another team's data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class ServiceError(Exception):
    """A request the server cannot carry out, and what to tell the user."""

    #: The HTTP status the error is answered with (a class's default; see __init__).
    status: ClassVar[int] = 400
    #: A stable, machine-readable snake_case code for the API's `error.code`.
    code: ClassVar[str] = "bad_request"

    def __init__(self, message: str, details: Any = None, *,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.headers: dict[str, str] = dict(headers or {})

    @property
    def http_status(self) -> int:
        """The status of this instance (TokenError sets its own; others their class's)."""
        return self.status

    @property
    def error_code(self) -> str:
        """The code of this instance (TokenError sets its own; others their class's)."""
        return self.code


class NotFound(ServiceError):
    """Something a request names does not exist (or may not be seen by its sender)."""

    status = 404
    code = "not_found"


class UnknownTrack(NotFound):
    """A request named a track the benchmark does not have: one error, one status, wherever
    a track is named (a board, a campaign, a page, a form field). Its code is the API's
    "not_found", which boards have always answered an unknown track with."""


def known_track(track: str) -> str:
    """The track, if the benchmark has it; else UnknownTrack naming the tracks there are."""
    from benchmark import TRACK_INFO  # the registry; imported here to keep this module a leaf

    if track not in TRACK_INFO:
        raise UnknownTrack(f"unknown track {track!r}; choose one of {', '.join(TRACK_INFO)}")
    return track


class InvalidRequest(ServiceError):
    """A form or request whose fields are missing or invalid (details: the fields)."""

    code = "invalid_request"


class UnknownField(InvalidRequest):
    """A request named a field the endpoint does not take."""

    code = "unknown_field"


class InvalidQuery(ServiceError):
    """A query string the endpoint cannot use (details: the parameters)."""

    code = "invalid_query"


class InvalidJson(ServiceError):
    """A JSON body that cannot be read within the server's bounds."""

    code = "invalid_json"


class MissingToken(ServiceError):
    """An API request that needs a token came without one."""

    status = 401
    code = "missing_token"


class UriTooLong(ServiceError):
    """A request line longer than the server reads."""

    status = 414
    code = "uri_too_long"


#: What a page form that failed its checks (a missing field, an expired CSRF token) is told.
STALE_FORM = "the form was incomplete or has expired: reload the page and try again"
