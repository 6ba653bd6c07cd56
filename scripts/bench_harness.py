#!/usr/bin/env python
"""Benchmark: a 2,795-example lm-eval samples file against the same predictions compact.

The temp test split of the release (2,795 examples): one set of predictions (a quarter
right, the rest other answers), written as compact `{"key","prediction"}` JSONL and as the
samples file our lm-eval task writes (documents with their gold and markers, the prompt,
every metric's item: about 33 times larger), zero-shot and 5-shot (each line's `arguments`
then holds five train examples before the question, as lm-eval logs a --num_fewshot 5 run).
Each is parsed (harness_files.parse_file, what an upload runs) and scored with every CI
(2,000 resamples), gold loaded beforehand as a server worker keeps it; the figure is the
ratio samples/compact, target at most 2. An Inspect .eval archive of the same predictions is
timed too. Beside the figures, what bounds them below: msgspec's pass over the samples
file's lines alone (decode_lines into a Struct of no fields: every byte of the file checked
as JSON, no value built), which any reader that refuses what the exact reader refuses pays;
and the checks of the documents alone (each decoded, indented and hashed, as the doc_hash is
checked).

A benchmark, not a test: it asserts nothing about time. Best of --repeat runs (the files
timed in turn, so a busy machine slows each alike), CPU time of the thread.

Usage: SITUATEDQA_DATA=/path/to/situatedqa python scripts/bench_harness.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "harness"))

from benchmark import import_release, score  # noqa: E402
from benchmark.harness.docs import document  # noqa: E402
from benchmark.harness_files import parse_file  # noqa: E402
from benchmark.release import resolve_release_dir  # noqa: E402


class _Nothing(msgspec.Struct):
    """A line decoded for nothing: msgspec checks its JSON and builds no value."""


class _Doc(msgspec.Struct):
    """A line's document, as the file's bytes."""

    doc: msgspec.Raw


def check_documents(documents: list[bytes]) -> None:
    """What the upload does with each document: decoded, indented, hashed."""
    decode, indent = msgspec.json.Decoder().decode, msgspec.json.format
    for raw in documents:
        decode(raw)
        hashlib.sha256(indent(raw, indent=2)).hexdigest()


def best(repeat: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best CPU time of the thread over `repeat` rounds of every run, in ms."""
    times: dict[str, float] = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.thread_time()
            run()
            times[name] = min(times[name], (time.thread_time() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    from harness_helpers import eval_archive, inspect_log, samples_file

    release = import_release(resolve_release_dir(None))
    gold = release.get("temp", "test")
    shots = [document(e, "temp", "train", harness="lm-eval 0.4.13")
             for e in release.get("temp", "train").examples]
    predictions = {e.key: (e.answers[0] if i % 4 == 0 else e.any_answers[-1])
                   for i, e in enumerate(gold.examples)}
    files = {
        "compact": "".join(json.dumps({"key": k, "prediction": v}) + "\n"
                           for k, v in predictions.items()).encode(),
        "samples": samples_file(gold, predictions),
        "5-shot": samples_file(gold, predictions, shots=shots, num_fewshot=5),
        "eval": eval_archive(inspect_log(gold, predictions)),
    }
    expected = score(gold, parse_file(files["compact"], gold), resamples=0).metrics
    for data in files.values():  # warm the gold's caches, check the numbers
        assert score(gold, parse_file(data, gold), resamples=0).metrics == expected
    nothing = msgspec.json.Decoder(_Nothing)
    runs: dict[str, Callable[[], object]] = {
        name: (lambda d=data: score(gold, parse_file(d, gold))) for name, data in files.items()}
    documents = [bytes(line.doc) for line in msgspec.json.Decoder(_Doc).decode_lines(
        files["samples"])]
    for name in ("samples", "5-shot"):
        runs[f"{name} msgspec"] = lambda d=files[name]: nothing.decode_lines(d)
    runs["documents"] = lambda: check_documents(documents)
    figures = best(args.repeat, runs)
    compact = figures["compact"]
    for name, data in files.items():
        print(f"{name:8} {len(data) / 1e6:6.2f} MB  parse + score {figures[name]:7.2f} ms"
              f"  {figures[name] / compact:5.2f}x compact")
    for name in ("samples", "5-shot"):
        print(f"{name + ' lines, msgspec alone':29} {figures[name + ' msgspec']:7.2f} ms"
              f"  {figures[name + ' msgspec'] / compact:5.2f}x compact")
    print(f"{'documents checked alone':29} {figures['documents']:7.2f} ms"
          f"  {figures['documents'] / compact:5.2f}x compact"
          f"  ({sum(map(len, documents)) / 1e6:.2f} MB)")
    for name in ("samples", "5-shot"):
        print(f"{name} / compact: {figures[name] / compact:.2f}x (target <= 2)")


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        main()
