"""Giving a web worker's freed memory back to the system once its large uploads are done.

glibc keeps the pages of freed heap blocks for reuse: after a few ~1 MB uploads (request
body, decoded records, the checks' byte arrays) a worker held 8-16 MiB more than it needs at
rest (in process: 187 MiB warm, 203 after 40 official-format uploads, 194 after
malloc_trim). Trimming costs ~0.6 ms, done after the response is sent and only when the
worker has no other request in flight, so a busy worker does not pay it per upload. (A fixed
mmap threshold gave the memory back too, but made every upload fault in fresh pages: 46 ms
of worker CPU an upload instead of 31.) Each worker also caps glibc's malloc arenas at two
(limit_arenas, from gunicorn's post_fork), so its threads reuse each other's freed buffers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.wsgi import ClosingIterator

#: Requests with a body from this size up trim when they end with the worker idle.
LARGE_BODY = 256 * 1024
#: Other requests (pages built from many rows) trim when idle at most this often.
TRIM_INTERVAL_SECONDS = 1.0

WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


#: malloc arenas a web worker's threads share. glibc's default (8 a core) gives each of the
#: worker's threads its own, whose freed upload buffers none of the others reuse: with two,
#: a worker under 8 concurrent 1 MB uploads ended at 192-195 MiB instead of 198-206.
MALLOC_ARENAS = 2
#: mallopt's parameter number for the arena limit (glibc's malloc.h).
_M_ARENA_MAX = -8


def _libc() -> ctypes.CDLL | None:
    """The C library, or None where ctypes cannot find it."""
    name = ctypes.util.find_library("c")
    return None if name is None else ctypes.CDLL(name)


def limit_arenas(count: int = MALLOC_ARENAS, libc: Any = None) -> bool:
    """Cap glibc's malloc arenas (call before the worker starts its threads); True if set.

    Where the C library has no mallopt (musl, macOS), nothing changes.
    """
    libc = libc if libc is not None else _libc()
    mallopt = getattr(libc, "mallopt", None)
    return bool(mallopt is not None and mallopt(_M_ARENA_MAX, count) == 1)


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's malloc_trim(0), or None where the C library has none (musl, macOS)."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    return lambda: None if trim(0) else None  # ctypes releases the GIL during the call


class TrimWhenIdle:
    """WSGI middleware: malloc_trim when the last request in flight ends (after a large one,
    or at most once a TRIM_INTERVAL_SECONDS after others)."""

    def __init__(self, app: WSGIApp, trim: Callable[[], None] | None = None) -> None:
        self.app = app
        self.trim = trim if trim is not None else _malloc_trim()
        self.in_flight = 0
        self.last_trim = 0.0
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """Serve the request; count it in flight until its response is closed."""
        large = int(environ.get("CONTENT_LENGTH") or 0) >= LARGE_BODY
        with self._lock:
            self.in_flight += 1
        try:
            body = self.app(environ, start_response)
        except BaseException:
            self._leave(large)
            raise
        return ClosingIterator(body, lambda: self._leave(large))

    def _leave(self, large: bool) -> None:
        now = time.monotonic()
        with self._lock:
            self.in_flight -= 1
            due = self.in_flight == 0 and (
                large or now - self.last_trim >= TRIM_INTERVAL_SECONDS)
            if due:
                self.last_trim = now
        if due and self.trim is not None:
            self.trim()
