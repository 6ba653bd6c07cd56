#!/usr/bin/env python
"""Benchmark: how much of the gold a worker keeps is shared (texts and answer sets).

A web worker keeps the active gold version for its lifetime, read from the database's
canonical JSON by `gold_store.deserialize`, and each dev and test split's normalized answer
sets for scoring. Both are built so that equal values are one object: a question's
contexts repeat its text, answers and context values, and its contexts often share their
normalized answer sets. This script measures that sharing on the real release:

* texts: the string fields of every example (question, context names and values, answers,
  any answers, partitions) after `deserialize`, how many differ and how many string objects
  hold them; the memory of those objects, and what one object per field would take;
* answer sets: the normalized answer sets of every dev and test split (answers, and any
  answers), how many differ and how many set objects hold them (equal sets are one object
  within a split), and their memory;
* the traced memory of `deserialize` itself (kept, and the peak while it runs).

A measurement, not a test: it asserts nothing. The exactness of these structures (the read
gold equals the release, the sets are the normalized answers) is in the tests
(tests/server/test_storage.py, tests/benchmark/test_bm_gold_answers.py).

Usage: SITUATEDQA_DATA=/path/to/release python scripts/bench_gold_memory.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark import GoldSet, import_release
from benchmark.tracks import HIDDEN_SPLIT
from situatedqa_server.services import gold_store

MiB = 2**20


def texts_of(gold: GoldSet) -> Iterator[str]:
    """Every string field of every example of a gold set."""
    for split in gold.splits.values():
        for example in split.examples:
            yield example.question
            yield from example.context
            yield from example.context.values()
            yield from example.answers
            yield from example.any_answers
            yield from example.partitions


def sharing(values: Iterable[Any]) -> dict[str, int]:
    """Values, distinct values, objects holding them, and the bytes of those objects
    (sys.getsizeof) beside the bytes one object per value would take."""
    seen: dict[int, Any] = {}
    count = 0
    distinct: set[Any] = set()
    unshared = 0
    for value in values:
        count += 1
        distinct.add(value)
        seen.setdefault(id(value), value)
        unshared += sys.getsizeof(value)
    return {"values": count, "distinct": len(distinct), "objects": len(seen),
            "bytes": sum(sys.getsizeof(v) for v in seen.values()), "bytes_unshared": unshared}


def answer_sets(gold: GoldSet) -> Iterator[frozenset[str]]:
    """The normalized answer sets a worker scores with (dev and test splits)."""
    for (_, split_name), split in gold.splits.items():
        if split_name in ("dev", HIDDEN_SPLIT):
            yield from split.normalized_answers
            yield from split.normalized_any_answers


def main() -> int:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=os.environ.get("SITUATEDQA_DATA"),
                        help="The release folder (default: $SITUATEDQA_DATA).")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    if args.data is None:
        parser.error("give --data or set SITUATEDQA_DATA")
    _, data = gold_store.serialize(import_release(args.data))
    tracemalloc.start()
    read = gold_store.deserialize(data)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    figures = {"stored_bytes": len(data), "deserialize_kept_bytes": kept,
               "deserialize_peak_bytes": peak, "texts": sharing(texts_of(read)),
               "answer_sets": sharing(answer_sets(read))}
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"stored gold: {len(data) / MiB:.1f} MiB of canonical JSON; deserialize keeps "
          f"{kept / MiB:.1f} MiB (peak {peak / MiB:.1f} MiB, tracemalloc)")
    for name in ("texts", "answer_sets"):
        f = figures[name]
        print(f"{name}: {f['values']:,} values, {f['distinct']:,} distinct, {f['objects']:,} "
              f"objects; {f['bytes'] / MiB:.1f} MiB (one object per value: "
              f"{f['bytes_unshared'] / MiB:.1f} MiB)")
    return 0


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        sys.exit(main())
