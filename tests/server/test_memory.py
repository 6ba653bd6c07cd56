"""The idle trim of a web worker's freed memory (situatedqa_server/memory.py)."""

from __future__ import annotations

import platform
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


def test_small_requests_trim_at_most_once_an_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(memory.time, "monotonic", lambda: clock[0])
    trims: list[int] = []
    app = TrimWhenIdle(_ok, trim=lambda: trims.append(1))
    for _ in range(3):
        app(_environ(10), None).close()  # type: ignore[attr-defined]
    assert trims == [1]
    clock[0] += memory.TRIM_INTERVAL_SECONDS
    app(_environ(0), None).close()  # type: ignore[attr-defined]
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
