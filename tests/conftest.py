"""Shared fixtures: the real data release when present, skipping cleanly when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA_DIR = Path(os.environ.get("SITUATEDQA_DATA", Path(__file__).resolve().parents[2] / "shared" / "situatedqa"))


@pytest.fixture(scope="session")
def release_dir() -> Path:
    """The official release folder; tests that need it skip where it is absent."""
    if not (DATA_DIR / "qa_data").is_dir():
        pytest.skip("SituatedQA release not available (set SITUATEDQA_DATA)")
    return DATA_DIR


@pytest.fixture(scope="session")
def release_gold(release_dir: Path):  # type: ignore[no-untyped-def]
    """The canonical gold built from the real release, verified against the manifest."""
    from benchmark import import_release

    return import_release(release_dir)
