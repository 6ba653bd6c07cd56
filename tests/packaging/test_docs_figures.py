"""Measured figures live in docs/benchmarks.md alone, which the bench scripts write; every
other doc states the present and points there, so no doc carries a figure of one run."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "docs" / "benchmarks.md"
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p != REPORT)]
#: Sizes in MiB that are settings or bounds derived from them (docs/server.md, Limits), not
#: measurements: the gzip chunk, argon2's memory, the upload and decompressed caps, and the
#: per-thread bound T × (2 × 64 + 32) with its value at 4 threads.
BOUNDS_MIB = {"1", "19", "32", "64", "160", "640"}
#: The release's publication date: a fact of the data, not of a run.
RELEASE_DATE = "2022-08-10"
RUN_BOUND = {
    "a time in milliseconds": re.compile(r"\d+(\.\d+)?( ?[–-] ?\d+(\.\d+)?)? ?ms\b"),
    "a time in fractional seconds": re.compile(r"\b\d+\.\d+( ?[–-] ?\d+(\.\d+)?)? ?s\b"),
    "the machine's load": re.compile(r"\bload (average )?\d|\bloaded machine|\bbusy (cores|VM)"
                                     r"|\b\d+-core VM\b|\bthis machine\b", re.IGNORECASE),
    "a speed ratio": re.compile(r"\d+(\.\d+)?( ?[–-] ?\d+(\.\d+)?)?× (faster|cheaper|the "
                                r"(official|cost|compact|bytes|rows|10,000))"),
    # a date in quotes is an answer string of the data, not the day of a run
    "a date": re.compile(r"(?<!\")\b20\d\d-\d\d-\d\d\b(?!\")"),
}
MIB = re.compile(r"(\d[\d,.]*)(?: ?[–-] ?(\d[\d,.]*))? ?MiB\b")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def is_target(prose: str, start: int) -> bool:
    """A figure right after ≤ or ≥ is a target or a bound, not a measurement."""
    return prose[max(0, start - 2):start].strip() in ("≤", "≥")


def run_bound_figures(text: str) -> list[str]:
    """What in a doc's prose (code spans and blocks set aside) reads as a measured figure."""
    prose = CODE.sub(" ", text).replace(RELEASE_DATE, " ")
    found = [f"{kind}: {m.group(0)!r}" for kind, pattern in RUN_BOUND.items()
             for m in pattern.finditer(prose) if not is_target(prose, m.start())]
    found += [f"a memory figure: {m.group(0)!r}" for m in MIB.finditer(prose)
              if not {m.group(1), m.group(2) or m.group(1)} <= BOUNDS_MIB
              and not is_target(prose, m.start())]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_no_doc_but_the_report_states_a_measured_figure(doc: Path) -> None:
    assert run_bound_figures(doc.read_text()) == [], (
        f"{doc.relative_to(ROOT)}: move measured figures to docs/benchmarks.md (written by "
        f"scripts/bench_*.py --report) and point to its section")


def test_the_patterns_find_figures_of_a_run() -> None:
    text = ("upload p50 22.6–36.9 ms on this loaded machine at load 1.3–1.7; RSS 1,582 MiB "
            "before; 4.5–5.2× faster than the official logic; measured 2026-12-01; "
            "refused in 0.38 s. Caps: 32 MiB, 64 MiB; `p50 12 ms` in code; the release of "
            "2022-08-10; target ≤ 25 ms, ≥ 7× faster than the official logic.")
    assert len(run_bound_figures(text)) == 7


def bench_report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report",
                                                  ROOT / "scripts" / "bench_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_bench_script_replaces_its_own_section_only(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    report_module = bench_report()
    report = tmp_path / "benchmarks.md"
    for script, figure in (("bench_a.py", "first 1"), ("bench_b.py", "other 2"),
                           ("bench_a.py", "first 3")):
        argv = [script, "--repeat", "3", f"--report={report}"]
        monkeypatch.setattr(sys, "argv", argv)
        with report_module.recording(script):
            print(figure)
        assert "--report" not in " ".join(sys.argv)
    text = report.read_text()
    assert text.startswith("# Benchmarks\n")
    assert "first 3" in text and "other 2" in text and "first 1" not in text
    assert text.count("<!-- bench:bench_a -->") == 1
    assert "Command: `python scripts/bench_a.py --repeat 3`" in text
    assert "Machine: " in text and "Load average" in text and "Date: " in text


def test_the_report_is_the_bench_scripts_own() -> None:
    text = REPORT.read_text()
    sections = re.findall(r"<!-- bench:([\w.-]+) -->", text)
    scripts = {name.split(".")[0] for name in sections}
    assert sections and all((ROOT / "scripts" / f"{script}.py").is_file() for script in scripts)
    assert all(f"<!-- /bench:{name} -->" in text for name in sections)
