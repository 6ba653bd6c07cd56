#!/usr/bin/env python
"""Benchmark: rescore N stored submissions into a new gold version with a real job worker.

Seeds a throw-away database (a private PostgreSQL schema, dropped afterwards; or SQLite with
--sqlite) with N distinct prediction files, stored in the database like uploads and spread
over the dev and test splits of every track, each with its first-version score and stored
predictions as an upload writes them (parsed and scored while seeding; not timed).
Then starts a real `flask --app app jobs worker --concurrency 2` subprocess (its broker an
SQLite file in a temporary folder, the embedded default, or --broker-url) and times, from
`gold activate NAME --background` to the job row reading done:
  1. incremental: a version with 50 answer changes (25 on temp/dev, 25 on temp/test): on
     the boards it changed each row is rescored from the parent's outcomes, re-evaluating
     the 25 changed examples from the stored predictions (no file read); the other boards
     carry over the parent's rows;
  2. full: a child version with 50 more changes, activated with --full (every file read
     and scored again).
The worker's processes parse each gold version on first use: that is inside the times.
The worker's log (INFO) says how many rows each batch took from the parent's outcomes.

Usage: SITUATEDQA_DATA=/path/to/release python scripts/bench_rescore.py [-n 10000]
           [--sizes 10000,20000,50000]  (each size in a fresh database; then how each grows)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmark import GoldSet, GoldSplit, import_release, parse_predictions, score
from benchmark.incremental import encode_predictions
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.models import Job, JobBatch, Submission, Team, User
from situatedqa_server.services import blobs, gold_store, versions
from situatedqa_server.services.evaluation import score_row

ROOT = Path(__file__).resolve().parent.parent

SPLITS = ("dev", "test")
SEED_BATCH = 500
BIN = Path(sys.executable).parent


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


def seed(gold: GoldSet, n: int, rng: np.random.Generator, resamples: int,
         distinct: int | None = None) -> dict[tuple[str, str], int]:
    """N submissions, each with its first-version score and its stored predictions as an
    upload writes them (parsed and scored here, as on upload, with the error classes: a row
    without them cannot be rescored from its outcomes). Their files are distinct, or with
    `distinct` they repeat after that many (rounded to a multiple of the boards): seeding
    then parses and scores that many, and a rescore still scores every row."""
    version = gold_store.active_version()
    user = User(username="bench", email="bench@example.org", password_hash="x",
                team=Team(name="bench"))
    db.session.add(user)
    db.session.flush()
    boards = [(t, s) for t, s in gold.available() if s in SPLITS]
    lines = {where: prediction_lines(gold.get(*where)) for where in boards}
    per_board = dict.fromkeys(boards, 0)
    cycle = n if distinct is None else max(1, -(-distinct // len(boards))) * len(boards)
    made: dict[int, tuple[str, bytes, Any]] = {}
    for start in range(0, n, SEED_BATCH):
        submissions, results = [], []
        for i in range(start, min(n, start + SEED_BATCH)):
            track, split = boards[i % len(boards)]
            per_board[track, split] += 1
            if i % cycle not in made:
                right, wrong = lines[(track, split)]
                mask = rng.random(len(right)) < rng.uniform(0.2, 0.9)
                data = ("\n".join(r if ok else w
                                  for r, w, ok in zip(right, wrong, mask, strict=True))
                        + "\n").encode()
                inputs = gold.get(track, split)
                predictions = parse_predictions(data, inputs, filename="predictions.jsonl")
                result = score(inputs, predictions, resamples=resamples,
                               errors=gold_store.error_tables_in(gold, inputs))
                made[i % cycle] = (blobs.put(data), encode_predictions(predictions, inputs),
                                   result)
            sha256, stored, result = made[i % cycle]
            results.append(result)
            submissions.append(Submission(
                user_id=user.id, team_id=user.team_id, track=track, split=split,
                file_sha256=sha256, filename="predictions.jsonl", format="jsonl",
                method_name=f"bench {i}", visibility="public", predictions=stored))
        db.session.add_all(submissions)
        db.session.flush()
        db.session.add_all([score_row(s, version, result)
                            for s, result in zip(submissions, results, strict=True)])
        db.session.commit()
    return per_board


def update_text(gold: GoldSet, label: str, offset: int) -> str:
    """50 answer changes: 25 on temp/dev and 25 on temp/test."""
    records: list[dict[str, Any]] = []
    for split in SPLITS:
        examples = gold.get("temp", split).examples[offset:offset + 25]
        records += [{"track": "temp", "split": split, "key": e.key, "action": "update",
                     "answer": [f"{label} {i}"], "reason": "bench"}
                    for i, e in enumerate(examples)]
    return "".join(json.dumps(r) + "\n" for r in records)


def flask(args: list[str], env: dict[str, str]) -> str:
    """Run an organizer command; its output."""
    result = subprocess.run([str(BIN / "flask"), "--app", "app", *args], env=env, cwd=ROOT,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"flask {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def seconds(start: Any, end: Any) -> str:
    """The seconds between two timestamps, to one decimal."""
    return f"{(end - start).total_seconds():.1f}"


def activate(app: Any, env: dict[str, str], name: str, full: bool) -> tuple[float, Job]:
    """Seconds from `gold activate --background` to the job row reading done; the job."""
    started = time.perf_counter()
    flask(["gold", "activate", name, "--background", *(["--full"] if full else [])], env)
    with app.app_context():
        while True:
            job = db.session.scalars(sa.select(Job).order_by(Job.id.desc())).first()
            if job is not None and job.status in ("done", "failed"):
                elapsed = time.perf_counter() - started
                first, last = db.session.execute(
                    sa.select(sa.func.min(JobBatch.finished_at), sa.func.max(JobBatch.finished_at))
                    .where(JobBatch.job_id == job.id)).one()
                if first is not None and job.started_at and job.finished_at:
                    print(f"{name}: job created → started {seconds(job.created_at, job.started_at)}"
                          f" s, → first batch done {seconds(job.created_at, first)} s, → last "
                          f"{seconds(job.created_at, last)} s, → switched "
                          f"{seconds(job.created_at, job.finished_at)} s", file=sys.stderr)
                if os.environ.get("BENCH_BATCHES"):
                    for seq, leased, finished, attempts in db.session.execute(
                            sa.select(JobBatch.seq, JobBatch.leased_until, JobBatch.finished_at,
                                      JobBatch.attempts).where(JobBatch.job_id == job.id)
                            .order_by(JobBatch.finished_at)):
                        print(f"  batch {seq}: finished {seconds(job.created_at, finished)} s, "
                              f"lease {seconds(job.created_at, leased)} s, attempts {attempts}",
                              file=sys.stderr)
                db.session.expunge(job)
                return elapsed, job
            db.session.rollback()
            time.sleep(0.1)


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) so far of a process and its descendants (Linux /proc).

    Load-independent: the work of the worker's processes, whatever else shares the cores.
    """
    children: dict[int, list[int]] = {}
    ticks: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        ticks[int(entry.name)] = float(fields[11]) + float(fields[12])
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += ticks.get(current, 0.0)
        todo += children.get(current, [])
    return total / os.sysconf("SC_CLK_TCK")


def batch_counts(log_path: Path, name: str) -> tuple[int, int, int]:
    """(rows carried over, rows from the parent's outcomes, files read and scored) in the
    worker log for a version."""
    pattern = re.compile(rf"version {re.escape(name)}: (\d+) rows carried over, (\d+) from "
                         r"the parent's outcomes, (\d+) files read and scored")
    found = [tuple(map(int, m.groups())) for m in pattern.finditer(log_path.read_text())]
    return (sum(f[0] for f in found), sum(f[1] for f in found), sum(f[2] for f in found))


def stop(worker: subprocess.Popen[bytes]) -> None:
    """Stop the worker and its pool: SIGTERM, then SIGKILL after 30 s (billiard's pool can
    hang in its exit handler once the children are gone)."""
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def measure(args: argparse.Namespace, n: int, release: Path) -> dict[str, Any]:
    """Seed n files in a fresh schema (or SQLite file), start a worker, time an incremental
    and a full activation; the figures."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-rescore-"))
    schema = f"bench_{secrets.token_hex(4)}"
    admin = None
    if args.sqlite:
        url, options = f"sqlite:///{tmp / 'bench.db'}", {}
        env_url = url
    else:
        admin = sa.create_engine(args.database_url)
        with admin.begin() as connection:
            connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        url = args.database_url
        options = {"connect_args": {"options": f"-csearch_path={schema}"}}
        env_url = f"{url}?options=-csearch_path%3D{schema}"
    env = {**os.environ, "DATABASE_URL": env_url, "SECRET_KEY": "bench",
           "SITUATEDQA_BROKER_URL": args.broker_url or f"sqla+sqlite:///{tmp / 'broker.sqlite'}",
           "SITUATEDQA_BOOTSTRAP_RESAMPLES": str(args.resamples),
           "SITUATEDQA_CACHE_DIR": str(tmp / "cache"), "SITUATEDQA_JOB_SWEEP_SECONDS": "2"}
    worker = None
    try:
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SQLALCHEMY_ENGINE_OPTIONS": options,
                          "BOOTSTRAP_RESAMPLES": args.resamples, "SECRET_KEY": "bench",
                          "CACHE_DIR": str(tmp / "cache")})
        with app.app_context():
            from flask_migrate import upgrade

            upgrade(directory=app.extensions["migrate"].directory)
            gold = import_release(release)
            gold_store.register_first_version(gold)
            started = time.perf_counter()
            per_board = seed(gold, n, np.random.default_rng(0), args.resamples,
                             args.distinct_files)
            seeded = time.perf_counter() - started
            first = versions.build_version(update_text(gold, "changed", 0), "bench.jsonl",
                                           "bench-incremental", date(2024, 1, 1), "", None)
            second = versions.build_version(update_text(gold, "again", 100), "bench.jsonl",
                                            "bench-full", date(2024, 2, 1), "", None, first)
            names = first.name, second.name
        log_path = tmp / "worker.log"
        with log_path.open("wb") as log_file:
            worker = subprocess.Popen(
                [str(BIN / "flask"), "--app", "app", "jobs", "worker", "--concurrency",
                 str(args.concurrency), "--loglevel", "INFO"],
                env=env, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True)
        # The worker parses the active gold, forks its pool and connects to its broker.
        deadline = time.monotonic() + 120
        while " ready." not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1)
        figures: dict[str, Any] = {"n": n, "seeded": seeded}
        for kind, name, full in (("incremental", names[0], False), ("full", names[1], True)):
            cpu_start, load = tree_cpu(worker.pid), os.getloadavg()[0]
            elapsed, job = activate(app, env, name, full=full)
            figures[kind] = {
                "seconds": elapsed, "cpu": tree_cpu(worker.pid) - cpu_start,
                "load": max(load, os.getloadavg()[0]), "status": job.status,
                "counts": batch_counts(log_path, name)}
    finally:
        if worker is not None:
            stop(worker)
        if admin is not None:
            with admin.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
    figures["changed"] = per_board.get(("temp", "dev"), 0) + per_board.get(("temp", "test"), 0)
    return figures


def main() -> None:
    """Seed, start a worker, time an incremental and a full activation at each size; print
    a table, and with several sizes how each figure grows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="stored submissions")
    parser.add_argument("--sizes", type=lambda text: [int(v) for v in text.split(",")],
                        help="several counts of stored submissions, comma-separated (e.g. "
                             "10000,20000,50000), each in a fresh database; overrides -n")
    parser.add_argument("--distinct-files", type=int, default=None,
                        help="files repeat after this many (default: every file distinct); "
                             "seeding parses and scores only these, a rescore every row")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--database-url", default=os.environ.get(
        "TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--sqlite", action="store_true", help="use an SQLite file instead")
    parser.add_argument("--broker-url", default=None,
                        help="the workers' broker (default: an SQLite file, the embedded one)")
    args = parser.parse_args()
    release = Path(os.environ.get("SITUATEDQA_DATA", str(ROOT.parent / "shared" / "situatedqa")))
    sizes = args.sizes or [args.n]
    results = []
    for n in sizes:
        results.append(measure(args, n, release))
        print(f"measured {n} stored submissions: {json.dumps(results[-1])}", file=sys.stderr,
              flush=True)
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor())
    print(f"Machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
          f"{'SQLite' if args.sqlite else 'PostgreSQL'}, broker "
          f"{args.broker_url.split(':')[0] if args.broker_url else 'embedded SQLite'}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{os.getloadavg()[0]:.1f}; seeded "
          + ", ".join(f"{r['n']} files in {r['seeded']:.0f} s" for r in results))
    print("| stored | rescore | worker processes | rows carried over | rows rescored from the "
          "parent's outcomes | files read and scored | seconds (wall) | worker CPU seconds | "
          "load average | job |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for kind in ("incremental", "full"):
            f = r[kind]
            carried, from_parent, read = f["counts"]
            label = "incremental, 50-example update" if kind == "incremental" else "full"
            print(f"| {r['n']:,} | {label} | {args.concurrency} | {carried} | {from_parent} | "
                  f"{read} | {f['seconds']:.1f} | {f['cpu']:.1f} | {f['load']:.1f} | "
                  f"{f['status']} |")
    if len(results) > 1:
        base = results[0]
        changed = ", ".join(f"{r['changed']:,}" for r in results)
        print(f"Growth against {base['n']:,} stored (work: stored submissions; rows on the "
              f"changed boards {changed}):")
        for r in results[1:]:
            print(f"  {r['n'] / base['n']:.0f}x the submissions: incremental "
                  f"{r['incremental']['cpu'] / base['incremental']['cpu']:.2f}x worker CPU "
                  f"({r['incremental']['seconds'] / base['incremental']['seconds']:.2f}x wall), "
                  f"full {r['full']['cpu'] / base['full']['cpu']:.2f}x worker CPU "
                  f"({r['full']['seconds'] / base['full']['seconds']:.2f}x wall)")
    print("Seconds: from `gold activate --background` (a CLI start, ~1-2 s) to the job reading "
          "done; worker CPU: the worker and its pool, user + system (PostgreSQL's apart); "
          "load average: the higher of its values at the start and the end.")


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        main()
