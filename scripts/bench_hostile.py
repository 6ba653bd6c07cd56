"""Measure what each hostile upload costs: CPU and memory in process, RSS under a server.

Usage: .venv/bin/python scripts/bench_hostile.py [--server] [--release DIR]

1. In process, for each file of the hostile corpus (tests/hostile.py, the one CI sends to a
   real gunicorn): the CPU (time.process_time) of parse_predictions against temp/test, and
   how far the process's peak RSS rises above its RSS before the parse (the peak is reset
   through /proc/self/clear_refs first). Each file runs in a process of its own.
2. With --server: a real gunicorn (`-w 4 --threads 4`, PostgreSQL as in bench_server.py);
   16 concurrent normal uploads give the workers' normal ceiling (their highest RSS, sampled
   every 20 ms), then 16 concurrent uploads of each hostile file: the highest worker RSS
   above that ceiling, and the slowest answer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import hostile  # noqa: E402  (the corpus is the tests' own)

CONCURRENT = 16


def status_kib(field: str) -> int:
    """A field of /proc/self/status in KiB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def measure_one(path: Path, filename: str, release: str) -> dict[str, Any]:
    """CPU and peak RSS growth of parsing one file (run in a process of its own)."""
    from benchmark import ValidationError, import_release, parse_predictions

    gold = import_release(Path(release)).get("temp", "test")
    data = path.read_bytes()
    before = status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM, the peak RSS
    start = time.process_time()
    try:
        parse_predictions(data, gold, filename=filename)
        outcome = "accepted"
    except ValidationError as error:
        outcome = str(error)[:110]
    cpu = time.process_time() - start
    return {"cpu_s": round(cpu, 3), "peak_growth_mib": round(
        (status_kib("VmHWM") - before) / 1024, 1), "outcome": outcome,
        "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def _long_records() -> bytes:
    """Not a bomb but the most memory a file within the caps asks for: 64 MiB of records,
    as many as temp/test allows, each with a long prediction."""
    count = 2_895
    width = (64 * 1024 * 1024) // count - 40
    return b"".join(b'{"key": "k%d", "prediction": "%s"}\n' % (i, b"a" * width)
                    for i in range(count))


#: The corpus, and the largest file the caps let through to the parser.
CASES = (*hostile.FILES, hostile.HostileFile(
    "64 MiB of long records (within every cap)", "long.jsonl", _long_records, 400, ""))


def in_process(release: str) -> None:
    """Part 1: each file in a fresh process."""
    print("| File | Upload size | CPU | Peak RSS growth | Refused with |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for item in CASES:
            path = Path(folder) / "upload"
            path.write_bytes(item.build())
            result = subprocess.run(
                [sys.executable, __file__, "--one", str(path), "--filename", item.filename,
                 "--release", release], capture_output=True, text=True, check=True)
            found = json.loads(result.stdout)
            print(f"| {item.name} | {path.stat().st_size / 1e6:.1f} MB | {found['cpu_s']:.3f} s "
                  f"| {found['peak_growth_mib']} MiB | {found['outcome']} |")


def sampled_peak(master: int, stop: threading.Event, peaks: dict[int, int]) -> None:
    """Keep each worker's highest RSS (KiB) until stopped."""
    import bench_server

    while not stop.is_set():
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        for pid, rss in zip(children, bench_server.worker_rss(master), strict=False):
            peaks[int(pid)] = max(peaks.get(int(pid), 0), rss)
        time.sleep(0.02)


def burst(url: str, token: str, files: list[tuple[str, bytes]], master: int
          ) -> tuple[int, float, list[int]]:
    """16 concurrent uploads: (highest worker RSS KiB, slowest answer s, statuses)."""
    stop, peaks = threading.Event(), dict[int, int]()
    sampler = threading.Thread(target=sampled_peak, args=(master, stop, peaks))
    sampler.start()

    def send(item: tuple[str, bytes]) -> tuple[int, float]:
        start = time.monotonic()
        response = requests.post(f"{url}/api/v1/submissions", headers={
            "Authorization": f"Bearer {token}"}, data={
            "track": "temp", "split": "test", "method_name": "hostile bench"},
            files={"file": item}, timeout=600)
        return response.status_code, time.monotonic() - start

    with ThreadPoolExecutor(CONCURRENT) as pool:
        answers = list(pool.map(send, files))
    time.sleep(0.2)
    stop.set()
    sampler.join()
    return max(peaks.values()), max(t for _, t in answers), sorted({s for s, _ in answers})


def under_server(args: argparse.Namespace) -> None:
    """Part 2: worker RSS under 16 concurrent hostile uploads, over the normal ceiling."""
    import bench_server  # beside this script (its folder is on sys.path)

    port = bench_server.free_port()
    with bench_server.prepared_server(args.database_url, args.release, "hostile"
                                      ) as (_schema, env, token):
        # Every burst is refused: the team's cap of rejected uploads must not answer 429.
        env = {**env, "SITUATEDQA_REJECTED_DAILY_CAP": "100000"}
        server = subprocess.Popen(
            [str(bench_server.BIN / "gunicorn"), "-c", "python:situatedqa_server.gunicorn_conf",
             "-w", "4", "--threads", "4", "-b", f"127.0.0.1:{port}", "app:app"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    requests.get(url + "/api/v1/tracks", timeout=5)
                    break
                except requests.RequestException:
                    time.sleep(0.2)
            records = bench_server.release_records(args.release, "temp", "test")
            normal = [("p.jsonl", bench_server.official_file(records, 0.2 + 0.01 * i))
                      for i in range(2 * CONCURRENT)]
            burst(url, token, normal[:CONCURRENT], server.pid)  # every worker warm
            ceiling, slowest, statuses = burst(url, token, normal[CONCURRENT:], server.pid)
            print(f"normal ceiling (16 concurrent official temp/test uploads): "
                  f"{ceiling / 1024:.0f} MiB, slowest {slowest:.2f} s, statuses {statuses}")
            print("| File (16 concurrent) | Highest worker RSS | Over the ceiling | Slowest "
                  "answer | Statuses |")
            print("|---|---|---|---|---|")
            for item in hostile.FILES:
                data = item.build()
                peak, slowest, statuses = burst(url, token, [(item.filename, data)] * CONCURRENT,
                                                server.pid)
                print(f"| {item.name} | {peak / 1024:.0f} MiB | {(peak - ceiling) / 1024:+.0f} "
                      f"MiB | {slowest:.2f} s | {statuses} |")
        finally:
            server.terminate()
            server.wait(30)


def main() -> None:
    """Run part 1, and part 2 with --server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=os.environ.get(
        "SITUATEDQA_DATA", str(ROOT.parent / "shared" / "situatedqa")))
    parser.add_argument("--database-url", default=os.environ.get(
        "TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--server", action="store_true", help="Also measure under gunicorn.")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--filename", default="upload", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.filename, args.release)))
        return
    in_process(args.release)
    if args.server:
        under_server(args)


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        main()
