"""Shared fixtures: the real data release when present, skipping cleanly when absent.

A test run writes nothing into the working folder or the home folder: Hypothesis keeps no
example database, and its caches (unicode data, constants), pytest-benchmark's storage and
matplotlib's configuration and font cache go to a temporary folder of the run (not
./.hypothesis, ./.benchmarks, ~/.config/matplotlib or ~/.cache/matplotlib), removed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from benchmark import GoldSet, import_release

#: The release folder: only $SITUATEDQA_DATA names it (a clean machine may have none).
DATA_DIR = Path(os.environ.get("SITUATEDQA_DATA") or "/nonexistent")

# No example database: replaying stored failures would make runs depend on earlier runs.
settings.register_profile("clean-machine", database=None)
settings.load_profile("clean-machine")

#: The run's temporary folder, kept on the pytest config between configure and unconfigure.
_SCRATCH = pytest.StashKey[Path]()
_SET_MPLCONFIGDIR = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Point Hypothesis, pytest-benchmark and matplotlib at a temporary folder of this run.

    They write at configuration, collection or import time, before any fixture
    (tmp_path_factory included) exists, hence a folder of our own under $TMPDIR.
    """
    scratch = Path(tempfile.mkdtemp(prefix="situatedqa-tests-"))
    config.stash[_SCRATCH] = scratch
    set_hypothesis_home_dir(scratch / "hypothesis")
    if hasattr(config.option, "benchmark_storage"):
        config.option.benchmark_storage = f"file://{scratch / 'benchmarks'}"
    if "MPLCONFIGDIR" not in os.environ:  # read once, when matplotlib is first imported
        os.environ["MPLCONFIGDIR"] = str(scratch / "matplotlib")
        config.stash[_SET_MPLCONFIGDIR] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the run's temporary folder."""
    if config.stash.get(_SET_MPLCONFIGDIR, False):
        os.environ.pop("MPLCONFIGDIR", None)
    scratch = config.stash.get(_SCRATCH, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def release_dir() -> Path:
    """The official release folder; tests that need it skip where it is absent."""
    if not (DATA_DIR / "qa_data").is_dir():
        pytest.skip("SituatedQA release not available (set SITUATEDQA_DATA)")
    return DATA_DIR


@pytest.fixture(scope="session")
def release_gold(release_dir: Path) -> GoldSet:
    """The canonical gold built from the real release, verified against the manifest."""
    return import_release(release_dir)
