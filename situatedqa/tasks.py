"""The Inspect tasks `situatedqa/temp` … `situatedqa/geo_id` (options: -T split=test,
-T shots=5, -T data=DIR, -T inputs=FILE, -T release=all|NAME,… -T server=URL; see
benchmark.harness.inspect_tasks)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

from benchmark.harness.inspect_tasks import situatedqa_task

#: Inspect prefixes a task's name with its package ("situatedqa/") when the package lies in
#: site-packages; from a checkout (an editable install) the prefix is written here.
PREFIX = "" if {"site-packages", "dist-packages"} & set(Path(__file__).parts) else "situatedqa/"


@task(name=f"{PREFIX}temp")
def temp(split: str = "dev", shots: int = 0, data: str | None = None,
         inputs: str | None = None, release: str | None = None,
         server: str | None = None) -> Task:
    """Temporal QA: "… as of DATE"."""
    return situatedqa_task("temp", split, shots, data, inputs, release, server)


@task(name=f"{PREFIX}geo")
def geo(split: str = "dev", shots: int = 0, data: str | None = None,
        inputs: str | None = None, release: str | None = None,
        server: str | None = None) -> Task:
    """Geographical QA: "… in LOCATION"."""
    return situatedqa_task("geo", split, shots, data, inputs, release, server)


@task(name=f"{PREFIX}present")
def present(split: str = "dev", shots: int = 0, data: str | None = None,
            inputs: str | None = None, release: str | None = None,
            server: str | None = None) -> Task:
    """Present-day answers."""
    return situatedqa_task("present", split, shots, data, inputs, release, server)


@task(name=f"{PREFIX}curprev")
def curprev(split: str = "dev", shots: int = 0, data: str | None = None,
            inputs: str | None = None, release: str | None = None,
            server: str | None = None) -> Task:
    """Current or previous answer."""
    return situatedqa_task("curprev", split, shots, data, inputs, release, server)


@task(name=f"{PREFIX}temp_id")
def temp_id(split: str = "dev", shots: int = 0, data: str | None = None,
            inputs: str | None = None, release: str | None = None,
            server: str | None = None) -> Task:
    """Temporal context dependence (yes/no)."""
    return situatedqa_task("temp-id", split, shots, data, inputs, release, server)


@task(name=f"{PREFIX}geo_id")
def geo_id(split: str = "dev", shots: int = 0, data: str | None = None,
           inputs: str | None = None, release: str | None = None,
           server: str | None = None) -> Task:
    """Geographical context dependence (yes/no)."""
    return situatedqa_task("geo-id", split, shots, data, inputs, release, server)
