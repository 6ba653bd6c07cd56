#!/usr/bin/env python
"""Benchmark: a 2,795-example lm-eval samples file against the same predictions compact.

The temp test split of the release (2,795 examples): one set of predictions (a quarter
right, the rest other answers), written twice: as compact `{"key","prediction"}` JSONL and
as the samples file our lm-eval task writes (documents with their gold and markers, the
prompt, every metric's item: about 30 times larger). Each is parsed (harness_files.parse_file,
what an upload runs) and scored with every CI (2,000 resamples), gold loaded beforehand as a
server worker keeps it; the figure is the ratio samples/compact, target at most 2. An Inspect
.eval archive of the same predictions is timed too. A benchmark, not a test: it asserts
nothing about time. Best of --repeat runs, CPU time of the thread.

Usage: SITUATEDQA_DATA=/path/to/situatedqa python scripts/bench_harness.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "harness"))

from benchmark import import_release, score  # noqa: E402
from benchmark.harness_files import parse_file  # noqa: E402
from benchmark.release import resolve_release_dir  # noqa: E402


def best(repeat: int, run: Callable[[], object]) -> float:
    """Best CPU time of the thread over `repeat` runs, in ms."""
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        run()
        times.append((time.thread_time() - start) * 1000)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    from harness_helpers import eval_archive, inspect_log, samples_file

    gold = import_release(resolve_release_dir(None)).get("temp", "test")
    predictions = {e.key: (e.answers[0] if i % 4 == 0 else e.any_answers[-1])
                   for i, e in enumerate(gold.examples)}
    compact = "".join(json.dumps({"key": k, "prediction": v}) + "\n"
                      for k, v in predictions.items()).encode()
    samples = samples_file(gold, predictions)
    archive = eval_archive(inspect_log(gold, predictions))
    for data in (compact, samples, archive):  # warm the gold's caches, check the numbers
        assert score(gold, parse_file(data, gold), resamples=0).metrics == score(
            gold, parse_file(compact, gold), resamples=0).metrics
    figures = {}
    for name, data in (("compact", compact), ("samples", samples), ("eval", archive)):
        figures[name] = best(args.repeat, lambda d=data: score(gold, parse_file(d, gold)))
        print(f"{name:8} {len(data) / 1e6:6.2f} MB  parse + score {figures[name]:7.2f} ms")
    print(f"samples / compact: {figures['samples'] / figures['compact']:.2f}x (target <= 2)")
    print(f"eval / compact:    {figures['eval'] / figures['compact']:.2f}x")


if __name__ == "__main__":
    main()
