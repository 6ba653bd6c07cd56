"""The idle trim of a web worker's freed memory (situatedqa_server/memory.py)."""

from __future__ import annotations

import gc
import platform
import threading
from collections.abc import Iterable
from typing import Any

import pytest

from situatedqa_server import memory
from situatedqa_server.memory import LARGE_BODY, TrimWhenIdle


def _environ(length: int) -> dict[str, Any]:
    return {"CONTENT_LENGTH": str(length)}


def _ok(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    return [b"ok"]


def test_a_large_request_trims_when_it_ends_with_none_in_flight() -> None:
    trims: list[int] = []
    app = TrimWhenIdle(_ok, trim=lambda: trims.append(1))
    body = app(_environ(LARGE_BODY), None)
    assert trims == []  # not before the response is closed (sent)
    body.close()  # type: ignore[attr-defined]
    assert trims == [1] and app.in_flight == 0


def test_no_trim_while_another_request_is_in_flight() -> None:
    trims: list[int] = []
    app = TrimWhenIdle(_ok, trim=lambda: trims.append(1))
    first = app(_environ(LARGE_BODY), None)
    second = app(_environ(LARGE_BODY), None)
    first.close()  # type: ignore[attr-defined]
    assert trims == [] and app.in_flight == 1
    second.close()  # type: ignore[attr-defined]
    assert trims == [1] and app.in_flight == 0


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Timers:
    """Scheduled callbacks, run by the test."""

    def __init__(self) -> None:
        self.waiting: list[tuple[float, Any]] = []

    def __call__(self, delay: float, callback: Any) -> None:
        self.waiting.append((delay, callback))

    def fire(self) -> None:
        _, callback = self.waiting.pop(0)
        callback()


def _app(trims: list[int], clock: _Clock, timers: _Timers) -> TrimWhenIdle:
    return TrimWhenIdle(_ok, trim=lambda: trims.append(1), schedule=timers, clock=clock)


def test_small_requests_trim_at_most_once_an_interval() -> None:
    clock, timers, trims = _Clock(), _Timers(), []
    app = _app(trims, clock, timers)
    for _ in range(3):
        app(_environ(10), None).close()  # type: ignore[attr-defined]
    assert trims == [1] and timers.waiting == []  # nothing pending after small requests
    clock.now += memory.TRIM_INTERVAL_SECONDS
    app(_environ(0), None).close()  # type: ignore[attr-defined]
    assert trims == [1, 1]


def test_back_to_back_uploads_trim_once_an_interval_and_the_last_is_not_forgotten() -> None:
    """A client uploading back to back: one trim, then the next is left to a timer."""
    clock, timers, trims = _Clock(), _Timers(), []
    app = _app(trims, clock, timers)
    trimmed_at = clock.now
    app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
    assert trims == [1]
    for _ in range(5):
        clock.now += 0.03
        app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
    assert trims == [1]  # within the interval: no trim on the request path
    assert len(timers.waiting) == 1  # one timer, for what is left of the interval
    delay, _ = timers.waiting[0]  # set by the first of them, 0.03 s after the trim
    assert delay == pytest.approx(memory.TRIM_INTERVAL_SECONDS - 0.03)
    clock.now = trimmed_at + memory.TRIM_INTERVAL_SECONDS
    timers.fire()
    assert trims == [1, 1] and timers.waiting == []


def test_a_timer_finding_a_request_in_flight_leaves_the_trim_to_its_end() -> None:
    clock, timers, trims = _Clock(), _Timers(), []
    app = _app(trims, clock, timers)
    app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
    clock.now += 0.1
    app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
    busy = app(_environ(10), None)
    clock.now += memory.TRIM_INTERVAL_SECONDS
    timers.fire()
    assert trims == [1] and timers.waiting == []
    busy.close()  # type: ignore[attr-defined]
    assert trims == [1, 1]


def test_a_failing_request_leaves_the_count_right() -> None:
    def broken(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        raise RuntimeError("boom")

    trims: list[int] = []
    app = TrimWhenIdle(broken, trim=lambda: trims.append(1))
    with pytest.raises(RuntimeError, match="boom"):
        app(_environ(LARGE_BODY), None)
    assert app.in_flight == 0 and trims == [1]


def test_the_real_trim_is_found_on_glibc() -> None:
    trim = memory._malloc_trim()
    if trim is None:
        pytest.skip("no malloc_trim in this C library")
    trim()  # returns nothing and does not raise


class _FakeLibc:
    def __init__(self, result: int) -> None:
        self.calls: list[tuple[int, int]] = []
        self.result = result

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.result


def test_limit_arenas_sets_glibcs_arena_maximum() -> None:
    libc = _FakeLibc(result=1)
    assert memory.limit_arenas(3, libc=libc) is True
    assert libc.calls == [(-8, 3)]  # M_ARENA_MAX in glibc's malloc.h
    assert memory.limit_arenas(2, libc=_FakeLibc(result=0)) is False


def test_limit_arenas_without_mallopt_changes_nothing() -> None:
    assert memory.limit_arenas(2, libc=object()) is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_limit_arenas_is_accepted_by_this_glibc() -> None:
    assert memory.limit_arenas(memory.MALLOC_ARENAS) is True


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
    app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
    app(_environ(LARGE_BODY), None).close()  # type: ignore[attr-defined]
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
