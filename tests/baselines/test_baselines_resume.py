"""Resumable output: an interrupted run, resumed, equals an uninterrupted run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")

from baselines_helpers import dpr_args, invoke

from baselines.output import ResumableWriter, pending_batches, read_done_keys


def runner_args(runner: str, bart_models: dict[str, Path], dpr_models: dict[str, Path],
                corpus: Path) -> list[Any]:
    """Options of each runner for the synthetic release."""
    if runner == "bart":
        return ["--track", "temp", "--setting", "query-modified", "--model", bart_models["model"]]
    if runner == "dpr":
        return ["--track", "geo", "--index", "flat", *dpr_args(dpr_models, corpus)]
    return ["--track", "temp-id"]


@pytest.mark.parametrize("runner", ["bart", "dpr", "id-random", "id-tfidf"])
def test_interrupted_then_resumed_equals_uninterrupted(
        tmp_path: Path, release_dir: Path, bart_models: dict[str, Path],
        dpr_models: dict[str, Path], corpus: Path, runner: str) -> None:
    args = runner_args(runner, bart_models, dpr_models, corpus)
    full = tmp_path / "full.jsonl"
    invoke("run", runner, "--data", release_dir, "-o", full, "--batch-size", 2, *args)
    part = tmp_path / "part.jsonl"
    invoke("run", runner, "--data", release_dir, "-o", part, "--batch-size", 2, "--limit", 3,
           *args)
    assert len(part.read_text().splitlines()) == 3
    # a kill in the middle of a write leaves a torn last line
    with part.open("a") as handle:
        handle.write('{"id": 12')
    result = invoke("run", runner, "--data", release_dir, "-o", part, "--batch-size", 2, *args)
    assert "3 already there" in result.stdout
    assert part.read_text() == full.read_text()


def test_writer_skips_done_keys(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"

    def key(record: dict[str, Any]) -> tuple[Any, ...]:
        return (record["id"],)

    with ResumableWriter(path, key) as writer:
        writer.write_batch([{"id": 1}, {"id": 2}])
    with ResumableWriter(path, key) as writer:
        assert writer.resumed == 2 and writer.is_done((1,))
        writer.write_batch([{"id": 2}, {"id": 3}])
    assert read_done_keys(path, key) == {(1,), (2,), (3,)}
    assert len(path.read_text().splitlines()) == 3


def test_pending_batches_are_aligned_to_the_full_list() -> None:
    done = {0, 1, 2}
    assert pending_batches(list(range(7)), 2, lambda i: i in done) == [[2, 3], [4, 5], [6]]
