"""Profile the upload path in process: where an upload's milliseconds go.

Usage: .venv/bin/python scripts/profile_upload.py [--database-url URL] [--uploads N] [--top K]

Sets the server up in a private PostgreSQL schema (dropped afterwards) exactly as
`scripts/bench_server.py` does, then POSTs N distinct public temp test-split files through
Flask's test client (no HTTP server, so the figures are the application's own cost) under
cProfile, and prints the wall time per upload, the SQL statements per upload and the top
functions by cumulative and by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_server import (  # noqa: E402
    add_server_arguments,
    gold_examples,
    official_file,
    prediction_file,
    prepared_server,
    release_records,
)


def main() -> None:
    """Profile N uploads and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(parser)
    parser.add_argument("--uploads", type=int, default=60)
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--show-sql", action="store_true",
                        help="Print the SQL statements of the last upload.")
    parser.add_argument("--dump", type=Path, help="Also write the raw profile here (pstats).")
    parser.add_argument("--cpu", action="store_true",
                        help="Profile CPU time of the thread instead of wall time.")
    parser.add_argument("--format", default="official", choices=["official", "compact"],
                        help="Uploaded files: full release records with pred_answer, or compact.")
    args = parser.parse_args()
    random.seed(20211107)
    with prepared_server(args.database_url, args.release, "prof") as (_, env, token):
        os.environ.update(env)
        from situatedqa_server import create_app

        app = create_app()
        client = app.test_client()
        warm = 5
        count = warm + 2 * args.uploads
        if args.format == "official":
            records = release_records(args.release, "temp", "test")
            files = [official_file(records, 0.2 + 0.3 * random.random()) for _ in range(count)]
        else:
            examples = gold_examples(args.release, "temp", "test")
            files = [prediction_file(examples, 0.2 + 0.3 * random.random())
                     for _ in range(count)]
        statements = 0
        last: list[str] = []

        def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
            nonlocal statements
            statements += 1
            last.append(" ".join(statement.split())[:160])

        with app.app_context():
            from situatedqa_server.extensions import db

            sa.event.listen(db.engine, "before_cursor_execute", count)
        # The server's own CPU per upload (this thread, inside the WSGI app: the test client's
        # encoding of the request aside). Other load on the machine only adds to a sample,
        # so the lowest samples compare two versions best on a busy host.
        server_cpu: list[float] = []
        wsgi = app.wsgi_app

        def measured(environ: Any, start_response: Any) -> Any:
            start = time.thread_time()
            try:
                return wsgi(environ, start_response)
            finally:
                server_cpu.append((time.thread_time() - start) * 1000)

        app.wsgi_app = measured  # type: ignore[method-assign]

        def upload(number: int) -> float:
            last.clear()
            start = time.perf_counter()
            response = client.post(
                "/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                data={"track": "temp", "split": "test", "method_name": f"prof {number}",
                      "public": "true", "file": (io.BytesIO(files[number]), "p.jsonl")})
            if response.status_code != 201:
                raise SystemExit(f"upload {number}: {response.status_code} {response.text}")
            return (time.perf_counter() - start) * 1000

        for number in range(warm):
            upload(number)
        statements = 0
        server_cpu.clear()
        cpu_start = time.process_time()
        plain = [upload(warm + args.uploads + number) for number in range(args.uploads)]
        cpu = (time.process_time() - cpu_start) * 1000 / args.uploads
        print(f"{args.uploads} uploads in process without the profiler: median "
              f"{statistics.median(plain):.1f} ms, best {min(plain):.1f} ms wall; "
              f"{cpu:.1f} ms CPU each in this process (PostgreSQL's own CPU not counted)")
        ordered = sorted(server_cpu)
        print(f"server CPU per upload (inside the app): lowest {ordered[0]:.2f} ms, "
              f"10th percentile {ordered[len(ordered) // 10]:.2f}, median "
              f"{statistics.median(ordered):.2f}")
        statements = 0
        # --cpu: this thread's CPU time, so time spent waiting for PostgreSQL is not counted.
        profiler = cProfile.Profile(time.thread_time) if args.cpu else cProfile.Profile()
        profiler.enable()
        times = [upload(warm + number) for number in range(args.uploads)]
        profiler.disable()
        print(f"{args.uploads} uploads in process: median {statistics.median(times):.1f} ms, "
              f"best {min(times):.1f} ms (under cProfile), "
              f"{statements / args.uploads:.1f} SQL statements each")
        if args.show_sql:
            print("\n".join(last))
        if args.dump:
            profiler.dump_stats(args.dump)
        for order in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(args.top)
            print(out.getvalue())


if __name__ == "__main__":
    main()
