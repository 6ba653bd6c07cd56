"""Shared helpers of the baselines tests (CLI invocation, reading outputs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from baselines.cli import main

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
