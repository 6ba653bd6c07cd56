"""Benchmark the server under gunicorn on PostgreSQL: upload latency, leaderboard latency, RSS.

Usage: .venv/bin/python scripts/bench_server.py [--database-url URL] [--release DIR]

Creates a private schema in the database (dropped afterwards), migrates it and imports the
gold into it with `flask --app app setup --from RELEASE`, starts gunicorn as a real
subprocess, then measures:
  1. upload-to-ranked latency, 1 client and 8 concurrent clients POSTing public test-split
     files: when the 201 arrives the entry is committed and its board's stamp bumped, so the
     next read of the board anywhere ranks it;
     the files (official format, temp) are the benchmark files of scripts/bench_files.py in
     turn (gold or another context's answer, nn-train, closed-book LLM, empty or unknown),
     each a distinct variant;
  2. the leaderboard page and its JSON with 10,000 submissions bulk-inserted in the track
     (raw SQL, so the script bumps the board's stamp itself);
  3. the page sorted by a breakdown column (p99 over `--runs` reads);
  4. the resident memory (RSS) of each gunicorn worker at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import platform
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
import sqlalchemy as sa
from urllib3 import encode_multipart_formdata

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BIN = Path(PYTHON).parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_files import upload_files  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values, nearest rank."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def free_port() -> int:
    """A free TCP port on localhost."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """--database-url and --release, shared by the server benchmarks."""
    parser.add_argument("--database-url", default=os.environ.get(
        "TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--release", default=os.environ.get(
        "SITUATEDQA_DATA", str(ROOT.parent / "shared" / "situatedqa")))


def server_env(database_url: str, schema: str, workdir: Path, release: str) -> dict[str, str]:
    """The server's environment: a private schema, quotas and upload limits out of the way;
    its PostgreSQL sessions are named by the schema (application_name), so that their CPU
    can be read apart from other clients'."""
    return {**os.environ, "DATABASE_URL": (f"{database_url}?options=-csearch_path%3D{schema}"
                                           f"&application_name={schema}"),
            "SECRET_KEY": secrets.token_hex(32), "SITUATEDQA_CACHE_DIR": str(workdir / "cache"),
            "SITUATEDQA_DATA": release, "SITUATEDQA_TEST_DAILY_QUOTA": "100000",
            "SITUATEDQA_TEST_TOTAL_QUOTA": "100000",
            "SITUATEDQA_UPLOAD_RATE_LIMIT": "100000/minute"}


@contextmanager
def prepared_server(database_url: str, release: str, name: str, project: Path = ROOT
                    ) -> Iterator[tuple[str, dict[str, str], str]]:
    """(schema, environment, API token): a private schema set up with the gold, a user and
    a token, as the quick start would, by the organizer commands of `project` (a checkout:
    this one unless told); dropped afterwards."""
    schema = f"{name}_{secrets.token_hex(4)}"
    admin = sa.create_engine(database_url)
    with admin.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    workdir = Path(tempfile.mkdtemp(prefix=f"sqa-{name}-"))
    env = server_env(database_url, schema, workdir, release)
    try:
        run([str(BIN / "flask"), "--app", "app", "setup", "--from", release], env, project)
        run([str(BIN / "flask"), "--app", "app", "users", "create", name, "--email",
             f"{name}@example.org", "--password", "benchmark password 123"], env, project)
        token = run([str(BIN / "flask"), "--app", "app", "tokens", "create", name],
                    env, project).strip().splitlines()[-1]
        yield schema, env, token
    finally:
        with admin.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
        shutil.rmtree(workdir, ignore_errors=True)


def run(args: list[str], env: dict[str, str], project: Path = ROOT) -> str:
    """Run an organizer command in a checkout (this one unless told); its output."""
    result = subprocess.run(args, env=env, cwd=project, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def prediction_file(examples: list[tuple[str, list[str]]], accuracy: float) -> bytes:
    """A compact JSONL prediction file that is right on about `accuracy` of the examples."""
    lines = []
    for key, answers in examples:
        right = random.random() < accuracy and answers
        lines.append(json.dumps({"key": key, "prediction": answers[0] if right else "no idea"}))
    return ("\n".join(lines) + "\n").encode()


def official_file(records: list[dict[str, Any]], accuracy: float) -> bytes:
    """The release's records with a `pred_answer` (the official format, ~1 MB on temp/test),
    right on about `accuracy` of them."""
    lines = []
    for record in records:
        right = random.random() < accuracy and record["answer"]
        lines.append(json.dumps({**record, "pred_answer": record["answer"][0] if right
                                 else "no idea"}, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def gold_examples(release: str, track: str, split: str) -> list[tuple[str, list[str]]]:
    """(key, answers) of every example of a split of the release."""
    sys.path.insert(0, str(ROOT))
    from benchmark import import_release

    gold = import_release(Path(release)).get(track, split)
    return [(e.key, list(e.answers)) for e in gold.examples]


def release_records(release: str, track: str, split: str) -> list[dict[str, Any]]:
    """The release's own records of a split (qa_data), as the official format carries them."""
    path = Path(release) / "qa_data" / f"{track}.{split}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def bulk_insert(url: str, schema: str, track: str, split: str, count: int) -> None:
    """Insert `count` published submissions with scores straight into the database."""
    engine = sa.create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    with engine.begin() as connection:
        team_id, user_id = connection.execute(sa.text(
            "SELECT team_id, id FROM user_account ORDER BY id LIMIT 1")).one()
        version_id = connection.execute(sa.text(
            "SELECT id FROM gold_version WHERE is_active")).scalar_one()
        metrics_names = {"geo": ["em", "em_common", "em_rare", "em_any", "em_us", "em_india",
                                 "em_other_common"],
                         "temp": ["em", "em_static", "em_sampled", "em_start", "em_any"]}[track]
        # Every bulk row names one stored placeholder file (uploads name their own).
        placeholder = b"bulk-inserted submission: no file behind it\n"
        sha256 = hashlib.sha256(placeholder).hexdigest()
        connection.execute(sa.text(
            "INSERT INTO stored_file (sha256, size, data, created_at) VALUES "
            "(:sha256, :size, :data, now()) ON CONFLICT DO NOTHING"),
            {"sha256": sha256, "size": len(placeholder), "data": zlib.compress(placeholder)})
        submissions, scores = [], []
        for number in range(count):
            submissions.append({
                "user_id": user_id, "team_id": team_id, "track": track, "split": split,
                "file_sha256": sha256, "filename": "bulk.jsonl",
                "format": "jsonl", "method_name": f"bulk {number}", "description": "",
                "model_type": random.choice(["retrieval", "closed-book", "other"]),
                "fine_tuned": random.random() < 0.5, "visibility": "public", "hidden": False,
                "is_baseline": number % 50 == 0, "created_at": sa.func.now()})
        ids = connection.execute(sa.text(
            "INSERT INTO submission (user_id, team_id, track, split, file_sha256, filename, "
            "format, method_name, description, model_type, fine_tuned, visibility, hidden, "
            "is_baseline, created_at) SELECT * FROM json_to_recordset(:rows) AS r(user_id int, "
            "team_id int, track text, split text, file_sha256 text, filename text, format "
            "text, method_name text, description text, model_type text, fine_tuned bool, "
            "visibility text, hidden bool, is_baseline bool, created_at timestamp) RETURNING id"),
            {"rows": json.dumps([{**s, "created_at": "2026-01-01T00:00:00"}
                                 for s in submissions])}).scalars().all()
        for submission_id in ids:
            values = {name: round(random.uniform(5, 60), 4) for name in metrics_names}
            scores.append({
                "submission_id": submission_id, "gold_version_id": version_id, "track": track,
                "split": split, "n": 500, "primary_metric": values["em"], "metrics": values,
                "ci": {name: [v - 2, v + 2] for name, v in values.items()},
                "counts": dict.fromkeys(values, 500)})
        connection.execute(sa.text(
            "INSERT INTO score (submission_id, gold_version_id, track, split, n, primary_metric,"
            " metrics, ci, counts, outcomes, scored_at) SELECT submission_id, gold_version_id, "
            "track, split, n, primary_metric, metrics, ci, counts, '\\x00'::bytea, now() FROM "
            "json_to_recordset(:rows) AS r(submission_id int, gold_version_id int, track text, "
            "split text, n int, primary_metric float, metrics json, ci json, counts json)"),
            {"rows": json.dumps(scores)})
        # Written outside the app's session: bump the board's stamp as the app would.
        connection.execute(sa.text(
            "INSERT INTO board_stamp (track, split, generation) VALUES (:track, :split, 1) "
            "ON CONFLICT (track, split) DO UPDATE SET generation = board_stamp.generation + 1"),
            {"track": track, "split": split})
        connection.execute(sa.text("ANALYZE"))
    engine.dispose()


def worker_rss(master_pid: int) -> list[int]:
    """RSS in KiB of each gunicorn worker (the master's children)."""
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    sizes = []
    for pid in children:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(int(line.split()[1]))
    return sizes


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system, all threads) a process has used so far; 0 once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_backends(url: str, schema: str) -> list[int]:
    """Process ids of the server's PostgreSQL sessions (named by the schema)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE application_name = :name"),
                {"name": schema}).scalars())
    finally:
        engine.dispose()


class CpuMeter:
    """CPU used by the gunicorn workers, the server's PostgreSQL sessions (this host only)
    and this script between start() and stop(): what the latency of N clients on a few
    cores is made of, and, unlike wall time, not inflated by other load on the machine."""

    def __init__(self, url: str, schema: str, master_pid: int) -> None:
        self.url, self.schema, self.master_pid = url, schema, master_pid
        self.before: dict[str, dict[int, float]] = {}

    def _read(self) -> dict[str, dict[int, float]]:
        workers = Path(f"/proc/{self.master_pid}/task/{self.master_pid}/children").read_text()
        return {"server": {int(p): process_cpu(int(p)) for p in workers.split()},
                "postgres": {p: process_cpu(p) for p in database_backends(self.url,
                                                                         self.schema)},
                "client": {0: time.process_time()}}

    def start(self) -> None:
        """Read every counter."""
        self.before = self._read()

    def stop(self, uploads: int) -> dict[str, float]:
        """CPU milliseconds per upload since start(), by part."""
        after = self._read()
        return {part: 1000 * sum(value - self.before[part].get(pid, 0.0)
                                 for pid, value in values.items()) / uploads
                for part, values in after.items()}


def timed_get(session: requests.Session, url: str, runs: int) -> list[float]:
    """Latencies in ms of `runs` sequential GETs (each must answer 200)."""
    latencies = []
    for _ in range(runs):
        start = time.perf_counter()
        response = session.get(url, timeout=60)
        latencies.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"GET {url}: {response.status_code}")
    return latencies


def main() -> None:
    """Run the benchmark and print a Markdown table of the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(parser)
    parser.add_argument("--track", default="temp", choices=["geo", "temp"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--uploads", type=int, default=25,
                        help="Uploads per client of the concurrent clients.")
    parser.add_argument("--single", type=int, default=100, help="Uploads by the single client.")
    parser.add_argument("--bulk", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200, help="GETs per leaderboard measure.")
    parser.add_argument("--format", default="official", choices=["official", "compact"],
                        help="Uploaded files: the release's full records with pred_answer "
                             "(the issue's setting, ~1 MB) or compact {key, prediction} lines.")
    parser.add_argument("--project", type=Path, default=ROOT,
                        help="The checkout to serve (e.g. a `git worktree` of an earlier "
                             "commit, to compare on the same host with the same client).")
    args = parser.parse_args()
    random.seed(20211107)
    project = args.project.resolve()

    port = free_port()
    with prepared_server(args.database_url, args.release, "bench", project
                         ) as (schema, env, token):
        server = None
        try:
            server = subprocess.Popen(
                [str(BIN / "gunicorn"), "-c", "python:situatedqa_server.gunicorn_conf",
                 "-w", str(args.workers), "--threads", str(args.threads),
                 "-b", f"127.0.0.1:{port}", "app:app"],
                env=env, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    requests.get(base + "/api/v1/tracks", timeout=5)
                    break
                except requests.RequestException:
                    time.sleep(0.2)
            # Distinct files (a team may not upload the same predictions twice on a board).
            warm = 10 * args.workers
            count = warm + args.single + args.uploads * args.clients
            if args.format == "official" and args.track == "temp":
                # The benchmark files (scripts/bench_files.py) in turn, each a distinct variant.
                files = upload_files(Path(args.release), count)
            elif args.format == "official":
                records = release_records(args.release, args.track, "test")
                files = [official_file(records, 0.2 + 0.3 * random.random())
                         for _ in range(count)]
            else:
                examples = gold_examples(args.release, args.track, "test")
                files = [prediction_file(examples, 0.2 + 0.3 * random.random())
                         for _ in range(count)]
            # Each body is encoded before the clock starts and sent by http.client on a kept
            # connection per client thread: a client on another host costs the server nothing,
            # but here it shares the 2 cores, and requests' multipart encoding of a 1 MB file
            # took ~1 ms of CPU per upload from the server under test.
            bodies = [encode_multipart_formdata(
                {"track": args.track, "split": "test", "method_name": f"bench {number}",
                 "public": "true", "file": ("p.jsonl", data)}) for number, data in
                enumerate(files)]
            connections = threading.local()

            def upload(number: int) -> float:
                if not hasattr(connections, "http"):
                    connections.http = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                body, content_type = bodies[number]
                start = time.perf_counter()
                connections.http.request("POST", "/api/v1/submissions", body=body, headers={
                    "Authorization": f"Bearer {token}", "Content-Type": content_type})
                response = connections.http.getresponse()
                answer = response.read()
                if response.status != 201:
                    raise SystemExit(f"upload {number}: {response.status} {answer[:2000]!r}")
                return (time.perf_counter() - start) * 1000

            for number in range(warm):  # every worker thread parses and scores once first
                upload(number)
            meter = CpuMeter(args.database_url, schema, server.pid)
            meter.start()
            single = [upload(warm + number) for number in range(args.single)]
            cpu_single = meter.stop(args.single)
            first = warm + args.single
            meter.start()
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.clients) as pool:
                uploads = list(pool.map(upload, range(first, first + args.clients * args.uploads)))
            rate = len(uploads) / (time.perf_counter() - started)
            cpu_many = meter.stop(len(uploads))

            bulk_insert(args.database_url, schema, args.track, "test", args.bulk)
            session = requests.Session()
            board = f"{base}/leaderboards/{args.track}?split=test"
            board_json = f"{base}/api/v1/leaderboards/{args.track}?split=test"
            timed_get(session, board, 10)
            page = timed_get(session, board, args.runs)
            api = timed_get(session, board_json, args.runs)
            sorted_page = timed_get(session, board + "&sort=em_rare" if args.track == "geo"
                                    else board + "&sort=em_static", args.runs)
            total = session.get(board_json, timeout=60).json()["total"]
            rss = worker_rss(server.pid)
        finally:
            if server is not None:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)

    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor())
    load = os.getloadavg()[0]
    mean_kb = statistics.mean(map(len, files)) / 1e3
    commit = subprocess.run(["git", "-C", str(project), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    print(f"Checkout {project} ({commit}); "
          f"machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
          f"gunicorn -w {args.workers} --threads {args.threads}, PostgreSQL, track "
          f"{args.track}/test, {args.format} files of {mean_kb:,.0f} KB, "
          f"{total} entries on the board at the end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load:.1f}")
    print(f"{args.clients} clients: {rate:.1f} uploads/s")
    for name, used in (("1 client", cpu_single), (f"{args.clients} clients", cpu_many)):
        print(f"CPU per upload, {name}: gunicorn workers {used['server']:.1f} ms, PostgreSQL "
              f"{used['postgres']:.1f} ms, this benchmark's clients {used['client']:.1f} ms")
    print("| measure | n | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, values in (("upload-to-ranked (1 client)", single),
                         (f"upload-to-ranked ({args.clients} concurrent clients)", uploads),
                         (f"leaderboard page ({args.bulk:,} submissions)", page),
                         ("leaderboard JSON", api),
                         ("leaderboard page sorted by a breakdown column", sorted_page)):
        print(f"| {name} | {len(values)} | {statistics.median(values):.1f} | "
              f"{percentile(values, 99):.1f} |")
    print(f"Worker RSS: {', '.join(f'{kib / 1024:.0f} MiB' for kib in rss)}")


if __name__ == "__main__":
    main()
