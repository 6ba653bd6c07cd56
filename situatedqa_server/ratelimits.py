"""Rate limits that survive their storage: open for uploads, closed for passwords.

Flask-Limiter keeps its counters in RATELIMIT_STORAGE_URI (Redis on a deployment). When that
storage cannot be reached, Flask-Limiter raises in its check before the view and again when
it writes the X-RateLimit-* headers after the view, i.e. after an upload's commit: the
client got a 500 for a stored upload. Here instead:

* a route fails **open** (the request goes on unlimited) unless it is marked `fail_closed`;
  uploads are scored in the request and need no broker, so they keep working;
* a route marked `fail_closed` (login, registration, password change: where the limit is
  what stops password guessing) answers 503 with Retry-After;
* the headers are written by this module, and a storage error there leaves them out;
* every storage failure is logged (its class only) and counted per process
  (`storage_failures`, shown on the admin jobs page).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter, RateLimitExceeded

from .services.errors import ServiceError

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

#: Seconds a client is told to wait when a fail-closed route cannot check its limit.
RETRY_AFTER_SECONDS = 30
#: Connection and socket timeouts of a Redis storage, in seconds: a storage that hangs
#: must not hold a request (redis-py waits forever by default).
REDIS_TIMEOUT_SECONDS = 1.0
#: The attribute a view carries when it fails closed (see fail_closed).
FAIL_CLOSED = "rate_limit_fails_closed"


class RateLimitUnavailable(ServiceError):
    """A fail-closed route whose rate limit cannot be checked: its storage is unreachable."""

    status = 503
    code = "rate_limit_unavailable"

    def __init__(self) -> None:
        super().__init__(
            "this action is rate-limited, and the server cannot check its limit right now; "
            f"try again in {RETRY_AFTER_SECONDS} seconds",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


def fail_closed(view: F) -> F:
    """Mark a view to answer 503, not to go on unlimited, when its limit cannot be checked
    (put it under @limiter.limit: the limiter's wrapper copies the mark)."""
    setattr(view, FAIL_CLOSED, True)
    return view


class ResilientLimiter(Limiter):
    """Flask-Limiter, failing open or closed per route when its storage is down.

    Made with headers_enabled=False: its own header writer raises on a storage error, so
    this class writes them (inject_headers) when RATELIMIT_HEADERS_ENABLED is set.
    """

    def __init__(self, key_func: Callable[[], str]) -> None:
        super().__init__(key_func=key_func, headers_enabled=False)

    def init_app(self, app: Flask) -> None:
        """Bind to the app; headers are written here (after_request) instead."""
        if str(app.config.get("RATELIMIT_STORAGE_URI") or "").startswith(("redis", "rediss")):
            options = dict(app.config.get("RATELIMIT_STORAGE_OPTIONS") or {})
            options.setdefault("socket_timeout", REDIS_TIMEOUT_SECONDS)
            options.setdefault("socket_connect_timeout", REDIS_TIMEOUT_SECONDS)
            app.config["RATELIMIT_STORAGE_OPTIONS"] = options
        super().init_app(app)
        app.extensions["ratelimit_failures"] = FailureCount()
        if app.config.get("RATELIMIT_HEADERS_ENABLED"):
            app.after_request(self.inject_headers)

    def _check_request_limit(self, callable_name: str | None = None,
                             in_middleware: bool = True) -> None:
        """Flask-Limiter's check; a storage error fails the route open or closed."""
        try:
            super()._check_request_limit(callable_name, in_middleware)
        except RateLimitExceeded:
            raise
        except Exception as error:  # the storage's own errors (redis, memcached, ...)
            storage_failed("check", error)
            # No limit of this request is known: no header is written for it.
            self.context.view_rate_limit = None
            self.context.view_rate_limits = []
            view = current_app.view_functions.get(request.endpoint or "")
            if getattr(view, FAIL_CLOSED, False):
                raise RateLimitUnavailable() from None

    def inject_headers(self, response: Response) -> Response:
        """X-RateLimit-Limit, -Remaining, -Reset (and Retry-After on a 429) of the request's
        tightest limit; left out when the storage cannot say (never an error)."""
        limit = self.current_limit
        if limit is None:
            return response
        try:
            reset_at = limit.reset_at
            remaining = limit.remaining
        except Exception as error:  # the storage's own errors, after the view (a commit)
            storage_failed("headers", error)
            return response
        response.headers["X-RateLimit-Limit"] = str(limit.limit.amount)
        response.headers["X-RateLimit-Remaining"] = str(remaining)
        response.headers["X-RateLimit-Reset"] = str(reset_at)
        if response.status_code == 429 and "Retry-After" not in response.headers:
            response.headers["Retry-After"] = str(max(0, int(reset_at - time.time())))
        return response


class FailureCount:
    """Storage failures of this process, by where they happened (check, headers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {"check": 0, "headers": 0}
        #: When the last one happened (naive UTC, as the database stores times).
        self.last: datetime | None = None

    def add(self, where: str) -> int:
        """Count one failure; the new total."""
        with self._lock:
            self.counts[where] = self.counts.get(where, 0) + 1
            self.last = datetime.now(UTC).replace(tzinfo=None)
            return sum(self.counts.values())


def storage_failed(where: str, error: Exception) -> None:
    """Log (the class only: a message may quote the storage URL) and count a failure."""
    failures: FailureCount = current_app.extensions["ratelimit_failures"]
    total = failures.add(where)
    log.warning("rate-limit storage unreachable in the %s of %s %s (%s); %s (failure %d of "
                "this process)", where, request.method, request.path, type(error).__qualname__,
                "refused: the route fails closed" if where == "check" and getattr(
                    current_app.view_functions.get(request.endpoint or ""), FAIL_CLOSED,
                    False) else "went on without the limit", total)


def failures_of(app: Flask) -> FailureCount:
    """The app's count of rate-limit storage failures (this process)."""
    found: FailureCount = app.extensions["ratelimit_failures"]
    return found
