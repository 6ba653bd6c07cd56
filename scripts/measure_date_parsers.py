#!/usr/bin/env python
"""Measure date parsers on every distinct gold answer of the release (issue 15's choice).

Three options, each asked "is this answer a date, and which (at what granularity)?":

* ours: benchmark.equivalence.date_keys (a small grammar of regular expressions);
* dateutil: dateutil.parser.parse, strict (fuzzy=False), parsed twice with different
  defaults so that the fields the text leaves out can be told apart (granularity);
* dateparser: dateparser's DateDataParser (English only), whose period says the granularity.

dateparser is not a dependency of the project: install it anywhere on sys.path to run this
(e.g. `pip install --target DIR dateparser==1.5.0` and PYTHONPATH=DIR); a missing library is
reported and skipped. Prints, per parser, how many answers parse, the cost per answer (CPU
time of the thread), the agreement between parsers, and samples of each disagreement to
check by hand. `--json FILE` writes every answer's three readings.

Usage: SITUATEDQA_DATA=/path/to/release python scripts/measure_date_parsers.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark.equivalence import date_keys

Reading = str | None  # "1945-07-05", "1945-07", "1945", "1939..1945" (range), or None


def gold_answers(release: Path) -> list[str]:
    """Every distinct gold answer string of the release (qa_data answers and any_answer,
    raw_data current and previous answers), sorted."""
    answers: set[str] = set()
    for path in sorted((release / "qa_data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            answers.update(record["answer"], record.get("any_answer") or ())
    for path in sorted((release / "raw_data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            answers.update(record.get("cur_answers") or (), record.get("prev_answers") or ())
    return sorted(answers)


def ours(text: str) -> Reading:
    """The grammar's reading: its one gold key, as a date or a range."""
    keys = date_keys(text, finer=False)
    if not keys:
        return None
    key = next(iter(keys))
    return key[2:].replace("-", "..") if key.startswith("r:") else key[2:]


def dateutil_reader() -> Callable[[str], Reading] | None:
    """dateutil, strict; the granularity from two parses with different defaults."""
    try:
        from dateutil import parser  # type: ignore[import-untyped, unused-ignore]  # optional
    except ImportError:
        return None
    first, second = datetime(1, 1, 1), datetime(2, 2, 2)

    def read(text: str) -> Reading:
        try:
            a = parser.parse(text, default=first, fuzzy=False)
            b = parser.parse(text, default=second, fuzzy=False)
        except (ValueError, OverflowError, TypeError):
            return None
        if a.year != b.year:
            return None  # no year: not a date we could compare
        if a.month != b.month:
            return f"{a.year}"
        if a.day != b.day:
            return f"{a.year}-{a.month:02d}"
        return f"{a.year}-{a.month:02d}-{a.day:02d}"

    return read


def dateparser_reader() -> Callable[[str], Reading] | None:
    """dateparser's DateDataParser (English): its period gives the granularity."""
    try:
        from dateparser.date import DateDataParser  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    parser = DateDataParser(languages=["en"], settings={
        "PREFER_DAY_OF_MONTH": "first", "RETURN_TIME_AS_PERIOD": True,
        "RELATIVE_BASE": datetime(2021, 2, 1)})

    def read(text: str) -> Reading:
        try:
            data = parser.get_date_data(text)
        except (ValueError, OverflowError, TypeError):
            return None
        if data.date_obj is None:
            return None
        d, period = data.date_obj, data.period
        if period == "year":
            return f"{d.year}"
        if period == "month":
            return f"{d.year}-{d.month:02d}"
        return f"{d.year}-{d.month:02d}-{d.day:02d}"

    return read


def timed(read: Callable[[str], Reading], answers: list[str]) -> tuple[list[Reading], float]:
    """Every answer's reading and the CPU time per answer in microseconds."""
    start = time.thread_time()
    readings = [read(a) for a in answers]
    return readings, (time.thread_time() - start) / len(answers) * 1e6


def main() -> int:
    """Run the three parsers and print the comparison."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=os.environ.get("SITUATEDQA_DATA"))
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--json", type=Path, help="Write every answer's readings here.")
    args = parser.parse_args()
    if args.data is None:
        parser.error("pass --data or set SITUATEDQA_DATA")
    answers = gold_answers(args.data)
    readers: dict[str, Callable[[str], Reading] | None] = {
        "ours": ours, "dateutil": dateutil_reader(), "dateparser": dateparser_reader()}
    readings: dict[str, list[Reading]] = {}
    print(f"{len(answers)} distinct gold answers")
    for name, read in readers.items():
        if read is None:
            print(f"{name}: not installed, skipped")
            continue
        readings[name], cost = timed(read, answers)
        parsed = sum(r is not None for r in readings[name])
        print(f"{name:10} parses {parsed:5} ({100 * parsed / len(answers):.1f}%), "
              f"{cost:8.1f} µs CPU per answer")
    rng = random.Random(15)
    names = list(readings)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = [k for k, t in enumerate(answers)
                    if readings[a][k] is not None and readings[b][k] is not None]
            same = sum(readings[a][k] == readings[b][k] for k in both)
            only_a = [k for k in range(len(answers))
                      if readings[a][k] is not None and readings[b][k] is None]
            only_b = [k for k in range(len(answers))
                      if readings[b][k] is not None and readings[a][k] is None]
            differ = [k for k in both if readings[a][k] != readings[b][k]]
            print(f"\n{a} vs {b}: both parse {len(both)}, agree {same}, differ {len(differ)}; "
                  f"only {a} {len(only_a)}, only {b} {len(only_b)}")
            for title, group in (("differ", differ), (f"only {a}", only_a),
                                 (f"only {b}", only_b)):
                sample = rng.sample(group, min(args.samples, len(group)))
                for k in sample:
                    print(f"  {title:16} {answers[k]!r:45} {a}={readings[a][k]} "
                          f"{b}={readings[b][k]}")
    if args.json:
        rows: list[dict[str, Any]] = [
            {"answer": t, **{name: readings[name][k] for name in readings}}
            for k, t in enumerate(answers)]
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    return 0


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        sys.exit(main())
