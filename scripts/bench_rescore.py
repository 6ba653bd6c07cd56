#!/usr/bin/env python
"""Benchmark: rescore N stored submissions against a new gold version, then switch to it.

Seeds a throw-away instance (SQLite, its own gold and upload store) with N distinct
prediction files derived from the real gold with random wrong answers, spread over every
track's dev and test splits; builds a version from a synthetic update (answer changes, an
addition and a retirement on dev and test); times `activate` (rescore + atomic switch).

Usage: SITUATEDQA_DATA=/path/to/release python scripts/bench_rescore.py [-n 10000] [--workers 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark import ID_TRACKS, GoldSet, GoldSplit, import_release
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.models import Score, Submission, Team, User
from situatedqa_server.services import gold_store, versions

SPLITS = ("dev", "test")
SEED_BATCH = 1000


def prediction_lines(gold: GoldSplit) -> tuple[list[str], list[str]]:
    """Each example's JSONL line when right and when wrong, to assemble files quickly."""
    right, wrong = [], []
    for e in gold.examples:
        if gold.is_identification:
            right.append(json.dumps({"key": e.key, "label": bool(e.label)}))
            wrong.append(json.dumps({"key": e.key, "label": not e.label}))
        else:
            right.append(json.dumps({"key": e.key, "prediction": e.answers[0]}))
            wrong.append(json.dumps({"key": e.key, "prediction": "wrong answer"}))
    return right, wrong


def seed(gold: GoldSet, n: int, store: Path, rng: np.random.Generator) -> None:
    """N submissions with distinct files (content-addressed) and a first-version score each."""
    version = gold_store.active_version()
    user = User(username="bench", email="bench@example.org", password_hash="x",
                team=Team(name="bench"))
    db.session.add(user)
    db.session.flush()
    boards = [(t, s) for t, s in gold.available() if s in SPLITS]
    lines = {where: prediction_lines(gold.get(*where)) for where in boards}
    for start in range(0, n, SEED_BATCH):
        submissions, scores = [], []
        for i in range(start, min(n, start + SEED_BATCH)):
            track, split = boards[i % len(boards)]
            right, wrong = lines[(track, split)]
            accuracy = rng.uniform(0.2, 0.9)
            mask = rng.random(len(right)) < accuracy
            data = ("\n".join(r if ok else w for r, w, ok in zip(right, wrong, mask, strict=True))
                    + "\n").encode()
            digest = hashlib.sha256(data).hexdigest()
            path = store / digest[:2] / digest
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            submissions.append(Submission(
                user_id=user.id, team_id=user.team_id, track=track, split=split,
                file_sha256=digest, filename="predictions.jsonl", format="jsonl",
                method_name=f"bench {i}", visibility="public"))
        db.session.add_all(submissions)
        db.session.flush()
        # A placeholder first-version score: rescoring reads it only to learn the upload version.
        scores = [Score(submission_id=s.id, gold_version_id=version.id, track=s.track,
                        split=s.split, n=0, metrics={}, ci={}, counts={}, outcomes=b"")
                  for s in submissions]
        db.session.add_all(scores)
        db.session.commit()


def update_text(gold: GoldSet) -> str:
    """Answer changes on dev and test of temp and geo, one addition and one retirement."""
    records: list[dict[str, Any]] = []
    for track in ("temp", "geo"):
        for split in SPLITS:
            examples = gold.get(track, split).examples
            records += [{"track": track, "split": split, "key": e.key, "action": "update",
                         "answer": [f"changed {i}"], "reason": "bench"}
                        for i, e in enumerate(examples[:20])]
            records.append({"track": track, "split": split, "key": examples[20].key,
                            "action": "retire", "reason": "bench"})
    for split in SPLITS:
        records.append({"track": "temp", "split": split, "key": "990000001|2099|sampled_year",
                        "action": "add", "question": "added?", "answer": ["added"],
                        "context": {"date": "2099", "date_type": "sampled_year"},
                        "reason": "bench"})
    return "".join(json.dumps(r) + "\n" for r in records)


def main() -> None:
    """Seed, build, activate with timing; print submissions per second."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="stored submissions")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    args = parser.parse_args()
    release = Path(os.environ.get("SITUATEDQA_DATA", "/work/shared/situatedqa"))
    with tempfile.TemporaryDirectory(prefix="bench-rescore-") as tmp:
        root = Path(tmp)
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{root / 'bench.db'}",
                          "GOLD_DIR": str(root / "gold"), "SUBMISSIONS_DIR": str(root / "store"),
                          "BOOTSTRAP_RESAMPLES": args.resamples, "SECRET_KEY": "bench"})
        with app.app_context():
            from flask_migrate import upgrade

            upgrade(directory=app.extensions["migrate"].directory)
            gold = import_release(release)
            gold.save(root / "gold")
            gold_store.register_first_version(gold)
            started = time.perf_counter()
            seed(gold, args.n, root / "store", np.random.default_rng(0))
            seeded = time.perf_counter() - started
            version = versions.build_version(update_text(gold), "bench.jsonl", "bench",
                                             date(2024, 1, 1), "", None)
            job = versions.start_activation(version, None)
            started = time.perf_counter()
            versions.run_job(job.id, workers=args.workers)
            elapsed = time.perf_counter() - started
            active = gold_store.active_version().name
        ids = sum(1 for t, s in gold.available() if s in SPLITS and t in ID_TRACKS)
        print(f"python {platform.python_version()} on {platform.machine()}, "
              f"{os.cpu_count()} CPUs; seeded {args.n} files in {seeded:.1f}s "
              f"({ids} of 12 boards are identification tracks)")
        print(f"rescored {args.n} submissions with {args.workers} worker(s), "
              f"{args.resamples} resamples: {elapsed:.1f}s = {args.n / elapsed:.1f} "
              f"submissions/s; active version: {active}")


if __name__ == "__main__":
    main()
