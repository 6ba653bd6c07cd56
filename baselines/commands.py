"""Helpers shared by the ``run`` and ``finetune`` commands (option checks, seeding, threads).

They live here so that ``baselines.cli`` and ``baselines.finetune_cli`` both import them and
neither imports the other (no import cycle).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import click
import numpy as np

from baselines.finetune import MARKER
from baselines.release import DATA_ENV


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and (if installed) torch so runs are repeatable."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch  # optional: the TF-IDF runners run without torch

        torch.manual_seed(seed)
    except ImportError:
        pass


#: The variables BLAS and OpenMP libraries read when they load (OpenMP's pool: scikit-learn's
#: and torch's; OpenBLAS: numpy's and scipy's; MKL and Accelerate where installed).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def default_threads() -> int:
    """Half the CPUs this process may use, at least one: a shared machine keeps room for the
    server and the others' work. Oversubscribed BLAS threads are what makes a run slow: on a
    busy 2-core machine id-tfidf took 58 s with the libraries' own pools, 7.7 s with one."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, available // 2)


def set_threads(threads: int) -> None:
    """Cap every thread pool of the run: torch's intra-op threads, and each BLAS and OpenMP
    pool, those already loaded (threadpoolctl) and those loaded later (their variables)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:  # comes with scikit-learn; without it only the variables apply
        pass
    else:
        threadpool_limits(limits=threads)
    try:
        import torch  # optional, as above

        torch.set_num_threads(threads)
    except ImportError:
        pass


def require_data(data: Path | None) -> Path:
    """Return the release folder or fail with a message naming --data and the env variable."""
    if data is None:
        raise click.BadParameter(f"no release folder: pass --data DIR or set ${DATA_ENV}",
                                 param_hint="--data")
    if not data.is_dir():
        raise click.BadParameter(f"release folder does not exist: {data}", param_hint="--data")
    return data


def require_dir(value: Path | None, name: str, runner: str) -> Path:
    """Return a checkpoint folder option or fail naming the option and the path."""
    if value is None:
        raise click.BadParameter(f"the {runner} runner needs {name} DIR", param_hint=name)
    if not value.is_dir():
        raise click.BadParameter(f"checkpoint folder not found: {value}", param_hint=name)
    if not (value / "config.json").is_file():
        raise click.BadParameter(f"{value} has no config.json (not a saved model folder)",
                                 param_hint=name)
    return value


def finetune_record(checkpoint: Path) -> dict[str, Any] | None:
    """The finetune.json written by `finetune` next to a checkpoint, if any."""
    marker = checkpoint / MARKER
    if checkpoint.is_dir() and marker.is_file():
        found: dict[str, Any] = json.loads(marker.read_text(encoding="utf-8"))
        return found
    return None
