"""End-to-end runner tests on tiny random models and a synthetic release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")

from baselines_helpers import (  # noqa: E402
    EXPECTED_FIELDS, SETTINGS, dpr_args, expected_count, invoke, read)


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
