"""End-to-end runner tests on tiny random models and a synthetic release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")
from click.testing import CliRunner, Result  # noqa: E402

from baselines.cli import main  # noqa: E402

SETTINGS = ("unmodified", "query-modified", "finetuned")
EXPECTED_FIELDS = {
    "temp": {"id", "question", "date", "date_type", "pred_answer"},
    "geo": {"id", "question", "location", "pred_answer"},
    "present": {"id", "pred_answer"},
    "curprev": {"id", "which", "pred_answer"},
}


def invoke(*args: Any) -> Result:
    """Run the CLI in-process and fail with its output if it fails."""
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def read(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL output."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def dpr_args(dpr_models: dict[str, Path], corpus: Path) -> list[Any]:
    """Model and corpus options of the dpr runner."""
    return ["--question-encoder", dpr_models["question_encoder"], "--ctx-encoder",
            dpr_models["ctx_encoder"], "--reader", dpr_models["reader"], "--corpus", corpus,
            "--top-k", 5, "--read-k", 3]


def expected_count(track: str) -> int:
    """Items of each track in the synthetic release's test split."""
    return {"temp": 9, "geo": 5, "present": 2, "curprev": 5}[track]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_dpr_end_to_end(tmp_path: Path, release_dir: Path, dpr_models: dict[str, Path],
                        corpus: Path, track: str, setting: str) -> None:
    out = tmp_path / "pred.jsonl"
    invoke("run", "dpr", "--track", track, "--setting", setting, "--data", release_dir,
           "-o", out, "--batch-size", 2, "--index", "numpy", *dpr_args(dpr_models, corpus))
    records = read(out)
    assert len(records) == expected_count(track)
    assert all(set(r) == EXPECTED_FIELDS[track] for r in records)
    assert all(isinstance(r["pred_answer"], str) for r in records)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["runner"] == "dpr" and meta["setting"] == setting
    assert meta["fingerprints"]["corpus"]["sha256"]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_bart_end_to_end(tmp_path: Path, release_dir: Path, bart_models: dict[str, Path],
                         track: str, setting: str) -> None:
    out = tmp_path / "pred.jsonl"
    invoke("run", "bart", "--track", track, "--setting", setting, "--data", release_dir,
           "-o", out, "--batch-size", 4, "--model", bart_models["model"])
    records = read(out)
    assert len(records) == expected_count(track)
    assert all(set(r) == EXPECTED_FIELDS[track] for r in records)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["setting"] == setting and meta["fingerprints"]["model"]["files"]
