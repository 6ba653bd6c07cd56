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
        """The status of this instance (ApiError sets its own; others their class's)."""
        return self.status

    @property
    def error_code(self) -> str:
        """The code of this instance (ApiError sets its own; others their class's)."""
        return self.code
