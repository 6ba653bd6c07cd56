"""`--threads` caps every pool of a run (torch, BLAS, OpenMP), with a default for the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.cli import main
from baselines.commands import default_threads

ROOT = Path(__file__).resolve().parents[2]
#: What a run does before its libraries work: the CLI's set_threads, then scikit-learn loads
#: its OpenMP pool; every pool threadpoolctl sees is reported.
PROBE = """
import json
from baselines.commands import set_threads
set_threads(1)
import numpy, sklearn.linear_model, threadpoolctl
print(json.dumps([[i["internal_api"], i["num_threads"]] for i in threadpoolctl.threadpool_info()]))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: every pool has one")
def test_threads_cap_blas_and_openmp_pools(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    found = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env={
        **environment, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
        check=True)
    pools = json.loads(found.stdout)
    assert {api for api, _ in pools} >= {"openblas", "openmp"}, pools
    assert all(threads == 1 for _, threads in pools), pools


def test_default_threads_suit_the_machine() -> None:
    assert default_threads() == max(1, len(os.sched_getaffinity(0)) // 2)
    text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "BLAS" in text and "OpenMP" in text
    assert f"{default_threads()} here" in " ".join(text.split())
