"""The benchmark report, docs/benchmarks.md: each bench script writes its own section.

Every `scripts/bench_*.py` takes `--report` (docs/benchmarks.md) or `--report=PATH`. With it, what
the script prints is also written into the report as that script's section, between the
markers `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` (NAME: the script, or with
`--report-name=LABEL` the script and the label, `bench_server.full-size`), headed by the
command, the machine, the date and the load average (before and after the run, as the
script measured it). Only
that section is replaced, so the scripts never clobber each other's figures; the report's
header names the machine, date and load of its newest section.

The measured figures of the project live in that file alone (a test checks that the README
and the other docs state none): the docs point to its sections.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import re
import shlex
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPORT = ROOT / "docs" / "benchmarks.md"
TITLE = "# Benchmarks"
INTRO = """\
Measured figures of the project, each section written by the bench script it names, with
`--report` (see `scripts/bench_report.py`): a run replaces its own section and this header,
never another script's section. Compare figures within a section (one run, one machine, one
load), not across sections. Targets and what the figures mean:
docs/server.md (Performance).
"""
SECTION = re.compile(r"<!-- bench:(?P<name>[\w.-]+) -->\n.*?<!-- /bench:(?P=name) -->\n",
                     re.DOTALL)


def cpu_model() -> str:
    """The CPU's model name as Linux reports it, else the platform's processor string."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def memory_gib() -> str:
    """Total memory in GiB, from /proc/meminfo (empty where that does not exist)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f", {int(line.split()[1]) / 1024 ** 2:.0f} GiB"
    return ""


def machine() -> str:
    """One line naming the machine: cores, CPU model, memory, Python."""
    return (f"{os.cpu_count()} CPUs ({cpu_model()}){memory_gib()}, "
            f"Python {platform.python_version()}")


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    with contextlib.suppress(OSError):
        return " / ".join(f"{value:.2f}" for value in os.getloadavg())
    return "unknown"


def header(run: str) -> str:
    return f"{TITLE}\n\n{INTRO}\nNewest section: {run}\n\n"


def write_section(report: Path, name: str, body: str, command: str, run: str) -> None:
    """Replace (or add) the section `name` of the report, keep every other section."""
    old = report.read_text() if report.exists() else ""
    sections = {m.group("name"): m.group(0) for m in SECTION.finditer(old)}
    sections[name] = (f"<!-- bench:{name} -->\n## {name}\n\n"
                      f"Command: `{command}`\n\n{run}\n\n```text\n{body.rstrip()}\n```\n"
                      f"<!-- /bench:{name} -->\n")
    report.write_text(header(run) + "\n".join(sections[key] for key in sorted(sections)))


class _Tee(io.TextIOBase):
    """Writes to the real stdout and keeps a copy for the report."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def recording(script: str, argv: list[str] | None = None) -> Iterator[None]:
    """Run a bench script's main inside this; with `--report` (or `--report=PATH`) among the
    arguments, what it prints is also written as the script's section of the report.

    `--report-name=LABEL` writes the section `SCRIPT.LABEL` instead, so that runs of one script
    at different sizes keep a section each. The options are taken out of sys.argv before the
    script parses its own arguments, so each script needs no more than
    `with recording(__file__): main()`."""
    argv = sys.argv if argv is None else argv
    report: Path | None = None
    name = Path(script).stem
    for arg in list(argv[1:]):
        if arg == "--report" or arg.startswith("--report="):
            argv.remove(arg)
            report = Path(arg.split("=", 1)[1]) if "=" in arg else DEFAULT_REPORT
        elif arg.startswith("--report-name="):
            argv.remove(arg)
            name = f"{name}.{arg.split('=', 1)[1]}"
    if report is None:
        yield
        return
    started, load_before = datetime.now(UTC), load()
    tee = _Tee(sys.stdout)
    ending: SystemExit | None = None
    with contextlib.redirect_stdout(tee):
        try:
            yield
        except SystemExit as exit_:  # click and sys.exit(main()) end this way
            if exit_.code not in (0, None):
                raise
            ending = exit_
    command = " ".join(["python", f"scripts/{Path(script).name}", *map(shlex.quote, argv[1:])])
    run = (f"Machine: {machine()}. Date: {started:%Y-%m-%d %H:%M} UTC. "
           f"Load average (1 / 5 / 15 min): {load_before} before, {load()} after.")
    write_section(report, name, tee.kept.getvalue(), command, run)
    print(f"wrote the {name} section of {report}", file=sys.stderr)
    if ending is not None:
        raise ending
