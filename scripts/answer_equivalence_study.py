#!/usr/bin/env python
"""The figures of docs/answer-equivalence.md: answer forms in the release, lenient metrics on
runnable baselines, and examples where em_equiv and EM disagree.

1. Gold pairs that differ only in form: within each QA example's answers (`answer`, and
   `any_answer`: the answers of all its contexts), pairs of answers that are not an exact
   match after the paper's normalization but name the same date, year range or number at
   the same granularity (em_equiv in both directions).
2. Lenient metrics of prediction files (default: each QA track's test `any_answer[0]` as
   predictions; more with --predictions TRACK=FILE, e.g. an nn-train run): EM, em_equiv
   and token F1 side by side, with the examples em_equiv counts right and EM wrong.

Usage: SITUATEDQA_DATA=/path/to/release python scripts/answer_equivalence_study.py \
           [--predictions temp=nn/temp.jsonl ...] [--examples 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark import GoldSplit, import_release, normalize_answer, parse_predictions, score
from benchmark.equivalence import gold_keys
from benchmark.scoring import CORRECT, CORRECT_EQUIV
from benchmark.tracks import QA_TRACKS, SPLITS


def same_in_form(a: str, b: str) -> bool:
    """Not an exact match, but the same date, range or number at the same granularity."""
    if normalize_answer(a) == normalize_answer(b):
        return False
    return not gold_keys(a).isdisjoint(gold_keys(b))


def form_pairs(gold: GoldSplit) -> tuple[Counter[str], list[tuple[str, str]]]:
    """Counts of distinct answer pairs per example, and those differing only in form."""
    counts: Counter[str] = Counter()
    found: list[tuple[str, str]] = []
    for example in gold.examples:
        for label, answers in (("answer", example.answers), ("any_answer", example.any_answers)):
            distinct = list(dict.fromkeys(answers))
            for a, b in combinations(distinct, 2):
                counts[f"{label} pairs"] += 1
                if same_in_form(a, b):
                    counts[f"{label} pairs same in form"] += 1
                    found.append((a, b))
        extra = [b for b in dict.fromkeys(example.any_answers) if b not in example.answers]
        for a in example.answers:
            for b in extra:
                counts["answer x other-context pairs"] += 1
                if same_in_form(a, b):
                    counts["answer x other-context pairs same in form"] += 1
                    found.append((a, b))
    return counts, found


def any_answer_file(gold: GoldSplit) -> bytes:
    """The first any_answer of every example as its prediction (compact JSON Lines)."""
    return "".join(json.dumps({"key": e.key, "prediction": (e.any_answers or e.answers)[0]},
                              ensure_ascii=False) + "\n" for e in gold.examples).encode()


def report(name: str, gold: GoldSplit, data: bytes, examples: int, rng: random.Random) -> None:
    """EM, em_equiv and token F1 of one prediction file, and sampled disagreements."""
    predictions = parse_predictions(data, gold)
    result = score(gold, predictions, resamples=0)
    m = {name: value or 0.0 for name, value in result.metrics.items()}  # test splits: never empty
    print(f"\n{name} ({gold.track}/{gold.split}, {len(gold)} examples): "
          f"EM {m['em']:.2f}, em_equiv {m['em_equiv']:.2f} "
          f"(+{m['em_equiv'] - m['em']:.2f}), F1 {m['f1']:.2f} (+{m['f1'] - m['em']:.2f})"
          + (f"; EM Any {m['em_any']:.2f}, em_equiv_any {m['em_equiv_any']:.2f}, "
             f"F1 Any {m['f1_any']:.2f}" if "em_any" in m else ""))
    lenient_only = [i for i, code in enumerate(result.outcomes.tolist())
                    if code & CORRECT_EQUIV and not code & CORRECT]
    print(f"  em_equiv right, EM wrong: {len(lenient_only)} examples")
    answers = predictions.answers or ()
    for i in sorted(rng.sample(lenient_only, min(examples, len(lenient_only)))):
        example = gold.examples[i]
        print(f"    {example.key}: {example.question!r} gold {list(example.answers)!r} "
              f"prediction {answers[i]!r}")


def main() -> int:
    """Print the study's figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=os.environ.get("SITUATEDQA_DATA"))
    parser.add_argument("--predictions", action="append", default=[],
                        help="TRACK=FILE: also score this test-split prediction file.")
    parser.add_argument("--examples", type=int, default=10)
    args = parser.parse_args()
    if args.data is None:
        parser.error("pass --data or set SITUATEDQA_DATA")
    gold_set = import_release(args.data)
    rng = random.Random(15)
    print("1. Gold answer pairs that differ only in form (all splits)")
    for track in ("temp", "geo", "present", "curprev"):
        total: Counter[str] = Counter()
        found: list[tuple[str, str]] = []
        for split in SPLITS:
            counts, pairs = form_pairs(gold_set.get(track, split))
            total.update(counts)
            found += pairs
        print(f"  {track}: " + "; ".join(f"{k} {v}" for k, v in sorted(total.items())))
        for a, b in rng.sample(found, min(args.examples, len(found))):
            print(f"      {a!r} ~ {b!r}")
    print("\n2. Lenient metrics of prediction files (test split)")
    for track in QA_TRACKS:
        gold = gold_set.get(track, "test")
        report("any_answer[0] as predictions", gold, any_answer_file(gold), args.examples, rng)
    for spec in args.predictions:
        track, _, file = spec.partition("=")
        gold = gold_set.get(track, "test")
        report(Path(file).name, gold, Path(file).read_bytes(), args.examples, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
