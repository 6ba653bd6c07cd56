"""Giving a web worker's freed memory back to the system once its large uploads are done.

glibc keeps the pages of freed heap blocks for reuse: after a few ~1 MB uploads (request
body, decoded records, the checks' byte arrays) a worker held 8-16 MiB more than it needs at
rest (in process: 187 MiB warm, 203 after 40 official-format uploads, 194 after
malloc_trim). Trimming costs ~0.6 ms, done after the response is sent, only when the
worker has no other request in flight, and at most once a second: the pages it returns are
faulted in again by the next upload (~2.3 ms), so trimming after every upload cost a client
uploading back to back ~2.9 ms of worker CPU an upload. (A fixed
mmap threshold gave the memory back too, but made every upload fault in fresh pages: 46 ms
of worker CPU an upload instead of 31.) Each worker also caps glibc's malloc arenas at two
(limit_arenas, from gunicorn's post_fork), so its threads reuse each other's freed buffers,
and freezes what it loaded at start out of the garbage collector's walks (freeze_long_lived).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.wsgi import ClosingIterator

#: Requests with a body from this size up leave a trim pending until the worker trims.
LARGE_BODY = 256 * 1024
#: A worker trims when idle at most this often.
TRIM_INTERVAL_SECONDS = 1.0

WSGIApp = Callable[[dict[str, Any], Any], Iterable[bytes]]


#: malloc arenas a web worker's threads share. glibc's default (8 a core) gives each of the
#: worker's threads its own, whose freed upload buffers none of the others reuse: with two,
#: a worker under 8 concurrent 1 MB uploads ended at 192-195 MiB instead of 198-206.
MALLOC_ARENAS = 2
#: mallopt's parameter number for the arena limit (glibc's malloc.h).
_M_ARENA_MAX = -8


def freeze_long_lived() -> int:
    """Move every object alive now out of the cyclic collector's reach; how many were moved.

    Called once a worker has loaded the gold and its scoring caches (about 300,000 objects
    that live as long as the worker): every full collection walked them all, 146 ms once
    every ~100 uploads, the slowest upload of a client uploading back to back. It costs the
    worker's start one such collection (~0.15 s), before its first request. Frozen
    objects are still freed by reference counting when dropped (a replaced gold version's
    caches hold no cycles); only cycles among them would wait for the worker's restart.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


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


Schedule = Callable[[float, Callable[[], None]], None]


def _timer(delay: float, callback: Callable[[], None]) -> None:
    """Run callback once after delay seconds, on a daemon thread."""
    timer = threading.Timer(delay, callback)
    timer.daemon = True
    timer.start()


class TrimWhenIdle:
    """WSGI middleware: malloc_trim when the last request in flight ends, at most once a
    TRIM_INTERVAL_SECONDS.

    A large request that ends inside the interval of the last trim leaves a trim pending,
    run by a timer when the interval is over (if no request is in flight then; else by the
    last of them to end). Trimming after every upload cost a client uploading back to back
    ~2.9 ms of worker CPU an upload: the trim, and the next upload faulting the returned
    pages in again.
    """

    def __init__(self, app: WSGIApp, trim: Callable[[], None] | None = None,
                 schedule: Schedule = _timer,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.trim = trim if trim is not None else _malloc_trim()
        self.schedule = schedule
        self.clock = clock
        self.in_flight = 0
        self.last_trim = -TRIM_INTERVAL_SECONDS
        #: A large request ended since the last trim.
        self.pending = False
        self.timer_set = False
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
        with self._lock:
            self.in_flight -= 1
            self.pending |= large
            wait = self._wait_locked()
        self._act(wait)

    def _wait_locked(self) -> float | None:
        """0.0 to trim now, seconds to set the timer for, or None (hold the lock)."""
        if self.in_flight:
            return None
        now = self.clock()
        wait = self.last_trim + TRIM_INTERVAL_SECONDS - now
        if wait <= 0:
            self.last_trim, self.pending = now, False
            return 0.0
        if self.pending and not self.timer_set:
            self.timer_set = True
            return wait
        return None

    def _on_timer(self) -> None:
        with self._lock:
            self.timer_set = False
            wait = self._wait_locked()
        self._act(wait)

    def _act(self, wait: float | None) -> None:
        """Carry out _wait_locked's answer, outside the lock."""
        if wait == 0.0:
            if self.trim is not None:
                self.trim()
        elif wait is not None:
            self.schedule(wait, self._on_timer)
