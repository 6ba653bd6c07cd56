"""The idle trim of a web worker's freed memory (situatedqa_server/memory.py)."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from situatedqa_server import memory
from situatedqa_server.memory import LARGE_BODY, TrimWhenIdle


def _environ(length: int) -> dict[str, Any]:
    return {"CONTENT_LENGTH": str(length)}


def _ok(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    return [b"ok"]


class _Time:
    """A clock and the timers set on it: advance() moves the clock, running each timer when
    it is due (as a worker's timer thread would)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> None:
        self.timers.append((self.now + delay, callback))

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while due := [timer for timer in self.timers if timer[0] <= end]:
            timer = min(due, key=lambda t: t[0])
            self.timers.remove(timer)
            self.now = timer[0]
            timer[1]()
        self.now = end


def _app(time: _Time, trims: list[float], wrapped: Any = _ok) -> TrimWhenIdle:
    """The middleware on a test clock, recording the time of each trim."""
    return TrimWhenIdle(wrapped, trim=lambda: trims.append(time.now), schedule=time.schedule,
                        clock=time.clock)


def _request(app: TrimWhenIdle, length: int) -> Any:
    """A request that has been answered and whose response is not sent yet."""
    return app(_environ(length), None)


INTERVAL = memory.TRIM_INTERVAL_SECONDS


def test_a_large_request_trims_once_its_response_is_sent() -> None:
    time, trims = _Time(), []
    app = _app(time, trims)
    body = _request(app, LARGE_BODY)
    assert trims == []  # not before the response is closed (sent)
    body.close()
    assert trims == [1000.0]


def test_no_trim_while_another_request_is_in_flight() -> None:
    time, trims = _Time(), []
    app = _app(time, trims)
    first, second = _request(app, LARGE_BODY), _request(app, LARGE_BODY)
    first.close()
    time.advance(5 * INTERVAL)
    assert trims == []  # the other one is still being answered, even long after
    second.close()
    assert trims == [1000.0 + 5 * INTERVAL]


def test_small_requests_trim_at_most_once_an_interval_and_leave_nothing_pending() -> None:
    time, trims = _Time(), []
    app = _app(time, trims)
    for _ in range(3):
        _request(app, 10).close()
    time.advance(10 * INTERVAL)
    assert trims == [1000.0]  # one trim; after small requests nothing is left to trim later
    _request(app, 0).close()
    assert trims == [1000.0, 1000.0 + 10 * INTERVAL]


def test_back_to_back_uploads_trim_once_an_interval_and_the_last_is_not_forgotten() -> None:
    """A client uploading back to back: one trim on the request path, then one when the
    interval since it is over, and no more."""
    time, trims = _Time(), []
    app = _app(time, trims)
    _request(app, LARGE_BODY).close()
    for _ in range(5):
        time.advance(0.03)
        _request(app, LARGE_BODY).close()
    assert trims == [1000.0]  # within the interval: no trim on the request path
    time.advance(10 * INTERVAL)
    assert trims == [1000.0, 1000.0 + INTERVAL]


def test_a_trim_due_while_a_request_is_in_flight_waits_for_its_end() -> None:
    time, trims = _Time(), []
    app = _app(time, trims)
    _request(app, LARGE_BODY).close()
    time.advance(0.1)
    _request(app, LARGE_BODY).close()
    busy = _request(app, 10)
    time.advance(10 * INTERVAL)
    assert trims == [1000.0]
    busy.close()
    assert trims == [1000.0, 1000.0 + 0.1 + 10 * INTERVAL]


def test_a_failing_request_trims_and_leaves_the_worker_idle() -> None:
    def fails_once(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("test.fail"):
            raise RuntimeError("boom")
        return [b"ok"]

    time, trims = _Time(), []
    app = _app(time, trims, fails_once)
    with pytest.raises(RuntimeError, match="boom"):
        app({**_environ(LARGE_BODY), "test.fail": True}, None)
    assert trims == [1000.0]
    time.advance(INTERVAL)
    _request(app, LARGE_BODY).close()  # the failed one is not still counted in flight
    assert trims == [1000.0, 1000.0 + INTERVAL]


#: Runs in a fresh interpreter: frees 64 MiB of heap blocks that the heap's top (still in
#: use) keeps from going back by itself, then prints the resident MiB given back while
#: nothing trims, and after a large request through TrimWhenIdle with its own trim.
_TRIM_PROBE = """
import ctypes, ctypes.util, os
from situatedqa_server.memory import LARGE_BODY, TrimWhenIdle
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
blocks = [libc.malloc(64 * 1024) for _ in range(1024)]
for block in blocks:
    ctypes.memset(block, 1, 64 * 1024)
top = libc.malloc(64 * 1024)
for block in blocks:
    libc.free(block)
freed = resident()
app = TrimWhenIdle(lambda environ, start_response: [b"ok"])
print(freed - resident(), end=" ")
app({"CONTENT_LENGTH": str(LARGE_BODY)}, None).close()
print(freed - resident())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or not Path("/proc/self/statm").exists(),
                    reason="glibc's malloc_trim, resident size from /proc")
def test_a_large_request_gives_freed_heap_memory_back_to_the_system() -> None:
    result = subprocess.run([sys.executable, "-c", _TRIM_PROBE], capture_output=True,
                            text=True, check=True, timeout=60)
    untrimmed, trimmed = map(float, result.stdout.split())
    assert untrimmed < 4  # freeing alone keeps the pages (what the trim is for)
    assert trimmed > 48  # of the 64 MiB freed


#: Runs in a fresh interpreter: optionally limits the arenas, has 8 threads allocate at once,
#: then prints glibc's malloc_stats (one "Arena N:" line per arena) to stderr.
_ARENA_PROBE = """
import ctypes, ctypes.util, sys, threading
from situatedqa_server import memory
if sys.argv[1] == "limit" and not memory.limit_arenas(2):
    sys.exit("limit_arenas refused")
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
together = threading.Barrier(8)
def allocate():
    together.wait()
    for _ in range(200):
        libc.free(libc.malloc(4096))
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
sys.stderr.flush()
libc.malloc_stats()
"""


def _arenas(mode: str) -> int:
    result = subprocess.run([sys.executable, "-c", _ARENA_PROBE, mode], capture_output=True,
                            text=True, check=True, timeout=60)
    return sum(line.startswith("Arena ") for line in result.stderr.splitlines())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's arenas")
def test_limit_arenas_caps_the_arenas_threads_allocate_from() -> None:
    assert _arenas("default") > 2  # eight threads allocating at once get arenas of their own
    assert _arenas("limit") <= 2


def test_limit_arenas_without_mallopt_changes_nothing() -> None:
    assert memory.limit_arenas(2, libc=object()) is False


def test_gunicorn_workers_limit_arenas_after_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    from situatedqa_server import gunicorn_conf

    counts: list[int] = []
    monkeypatch.setattr(memory, "limit_arenas", lambda: counts.append(1) or True)
    gunicorn_conf.post_fork(None, None)
    assert counts == [1]


def test_the_pending_trim_runs_on_a_real_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "TRIM_INTERVAL_SECONDS", 0.05)
    done = threading.Event()
    trims: list[int] = []

    def trim() -> None:
        trims.append(1)
        if len(trims) == 2:
            done.set()

    app = TrimWhenIdle(_ok, trim=trim)
    _request(app, LARGE_BODY).close()
    _request(app, LARGE_BODY).close()
    assert done.wait(timeout=10), "the pending trim never ran"
    assert trims == [1, 1]


def test_freeze_long_lived_moves_live_objects_out_of_collections() -> None:
    kept = [[index] for index in range(1000)]
    try:
        frozen = memory.freeze_long_lived()
        # Frozen objects that die are freed (and leave the count), so only a bound holds.
        assert frozen >= len(kept) and gc.get_freeze_count() >= len(kept)
        collected = {id(item) for item in gc.get_objects()}  # the collector's generations
        assert gc.is_tracked(kept[0]) and not collected & {id(item) for item in kept}
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


def test_gunicorn_workers_freeze_after_loading_the_gold(monkeypatch: pytest.MonkeyPatch) -> None:
    from flask import Flask

    from situatedqa_server import gunicorn_conf
    from situatedqa_server.services import gold_store

    order: list[str] = []
    monkeypatch.setattr(gold_store, "warm_up", lambda: order.append("warm_up"))
    monkeypatch.setattr(memory, "freeze_long_lived", lambda: order.append("freeze") or 0)

    class Worker:
        wsgi = Flask("worker")
        log = None

    gunicorn_conf.post_worker_init(Worker())
    assert order == ["warm_up", "freeze"]
    assert isinstance(Worker.wsgi.wsgi_app, TrimWhenIdle)
