"""Count the instructions of an upload in process (valgrind's callgrind): repeatable figures.

Usage: .venv/bin/python scripts/bench_instructions.py [--database-url URL] [--release DIR]
           [--uploads N] [--format official|compact] [--project DIR ...]

On a shared VM the same code's CPU per upload varies by up to 1.6x between runs minutes
apart; an instruction count does not: the same code, inputs and environment count the same,
whatever else the machine is doing. So two versions of the upload path are best compared
here, and the wall-clock figures of `scripts/bench_server.py` read beside it.

For each checkout given by --project (this one unless told; e.g. `git worktree add ../old
REV`, then `--project . --project ../old`), a private PostgreSQL schema is set up by that
checkout's organizer commands, as `bench_server.py` does, and a child Python runs under
`valgrind --tool=callgrind` with PYTHONHASHSEED=0. The child builds the app, warms it up as a
gunicorn worker does (the gold and its scoring caches, frozen out of the collector where the
checkout does so), makes a few uploads, then makes N more between two marker calls: callgrind
zeroes its counters on entering `os.getpgrp` and dumps them on entering `os.getppid`. The
requests are built before the first marker, so what is counted is the application: Flask,
the multipart parse, parsing and scoring, the SQL client side, the commit and the response.
PostgreSQL's own work is another process and is not counted; nor is gunicorn's. Every
checkout gets the same files (the benchmark files of `bench_files.py` in turn, each a
distinct variant; a fixed seed). Under valgrind, libraries that pick their code
by CPU features (ISA-L, numpy) see valgrind's virtual CPU, so their counts are of the AVX2
paths. One of them distorts the count: OpenSSL's SHA-256 sees no SHA extensions there and
takes its generic code, about 27 M instructions for a 1 MB file that natively hashes in
0.5 ms, so the table also gives the count without libcrypto. A run takes about a minute a
checkout.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_files import upload_files  # noqa: E402
from bench_server import (  # noqa: E402
    add_server_arguments,
    gold_examples,
    prediction_file,
    prepared_server,
)

WARM_UPLOADS = 3
ZERO_MARKER, DUMP_MARKER = "os_getpgrp", "os_getppid"


def describe(project: Path) -> str:
    """The checkout's commit (and '+changes' when its tree differs from it)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(project), *args], capture_output=True,
                              text=True, check=False).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain",
                                                                      "--untracked-files=no")
                                                   else "")


def make_files(release: str, file_format: str, count: int) -> list[bytes]:
    """`count` distinct temp test-split files, the same ones on every call."""
    random.seed(20211107)
    if file_format == "official":  # the benchmark files (bench_files.py) in turn
        return upload_files(Path(release), count)
    examples = gold_examples(release, "temp", "test")
    return [prediction_file(examples, 0.2 + 0.3 * random.random()) for _ in range(count)]


def self_cost_by_object(text: str) -> dict[str, int]:
    """Instructions by shared object (the program, libpython, libcrypto, ...) in a dump.

    A cost line counts for the function above it, except the line after `calls=`, which is
    the inclusive cost of a call (counted in the callee's own lines).
    """
    names: dict[str, str] = {}
    costs: dict[str, int] = {}
    current, after_call = "", False
    for line in text.splitlines():
        if line.startswith(("ob=", "cob=")):
            number, _, name = line.split("=", 1)[1].partition(" ")
            if name:
                names[number] = name
            if line.startswith("ob="):
                current = names[number]
        elif line.startswith("calls="):
            after_call = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
                continue
            fields = line.split()
            if len(fields) > 1:
                costs[current] = costs.get(current, 0) + int(fields[1])
    return costs


def count_project(project: Path, args: argparse.Namespace, files: list[bytes]
                  ) -> tuple[float, float]:
    """Instructions per upload of one checkout's application: all, and libcrypto's."""
    with prepared_server(args.database_url, args.release, "instr", project) as (_, env, token), \
            tempfile.TemporaryDirectory(prefix="sqa-instr-") as workdir:
        paths = []
        for number, data in enumerate(files):
            path = Path(workdir) / f"upload-{number}.jsonl"
            path.write_bytes(data)
            paths.append(str(path))
        config = Path(workdir) / "config.json"
        config.write_text(json.dumps({"project": str(project), "token": token,
                                      "files": paths, "warm": WARM_UPLOADS}))
        out = Path(workdir) / "callgrind.out"
        result = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             f"--zero-before={ZERO_MARKER}", f"--dump-before={DUMP_MARKER}",
             sys.executable, str(Path(__file__).resolve()), "--child", str(config)],
            env={**env, "PYTHONHASHSEED": "0"}, cwd=project, capture_output=True, text=True,
            check=False)
        if result.returncode != 0:
            raise SystemExit(f"the child under callgrind failed:\n{result.stderr[-3000:]}")
        dump = Path(f"{out}.1")
        if not dump.exists():
            raise SystemExit(f"callgrind saw no call of {DUMP_MARKER}: is this Python's "
                             "libpython stripped of its symbols?")
        text = dump.read_text(errors="replace")
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            kept = args.keep / f"callgrind.{describe(project)}.out"
            kept.write_text(text)
            print(f"kept the dump of {project}: callgrind_annotate {kept}", file=sys.stderr)
        if marker_calls(text, ZERO_MARKER):
            raise SystemExit(f"the application itself called {ZERO_MARKER} between the markers:"
                             " the counters were zeroed inside the measured uploads")
        totals = re.search(r"^totals:\s+(\d+)", text, re.MULTILINE)
        if totals is None:
            raise SystemExit(f"no totals line in {dump}")
        crypto = sum(cost for name, cost in self_cost_by_object(text).items()
                     if Path(name).name.startswith("libcrypto"))
        return int(totals.group(1)) / args.uploads, crypto / args.uploads


def marker_calls(text: str, function: str) -> int:
    """Calls of a function that a callgrind dump records as completed (the marker's own
    call, in progress when the counters were zeroed, is recorded with calls=0)."""
    name = re.search(rf"\((\d+)\) {function}$", text, re.MULTILINE)
    if name is None:
        return 0
    return sum(int(calls) for calls in re.findall(
        rf"^cfn=\({name.group(1)}\).*\ncalls=(\d+)", text, re.MULTILINE))


def child(config_path: str) -> None:
    """Under callgrind: warm the app up, then make the measured uploads between the markers."""
    config = json.loads(Path(config_path).read_text())
    sys.path.insert(0, config["project"])
    from werkzeug.test import EnvironBuilder

    import situatedqa_server
    from situatedqa_server import create_app

    if not Path(situatedqa_server.__file__).resolve().is_relative_to(config["project"]):
        raise SystemExit(f"imported {situatedqa_server.__file__}, not the checkout's own")
    app = create_app()
    with app.app_context():
        from situatedqa_server.services import gold_store

        gold_store.warm_up()

    def environ(number: int, path: str) -> dict[str, Any]:
        builder = EnvironBuilder(
            path="/api/v1/submissions", method="POST",
            headers={"Authorization": f"Bearer {config['token']}"},
            data={"track": "temp", "split": "test", "method_name": f"instructions {number}",
                  "public": "true", "file": (io.BytesIO(Path(path).read_bytes()), "p.jsonl")})
        try:
            return builder.get_environ()
        finally:
            builder.close()

    def upload(request: dict[str, Any]) -> None:
        statuses: list[str] = []
        response = app(request, lambda status, headers, exc_info=None: statuses.append(status))
        try:
            body = b"".join(response)
        finally:
            getattr(response, "close", lambda: None)()
        if not statuses[0].startswith("201"):
            raise SystemExit(f"upload answered {statuses[0]}: {body[:500]!r}")

    requests = [environ(number, path) for number, path in enumerate(config["files"])]
    for request in requests[:config["warm"]]:
        upload(request)
    try:
        from situatedqa_server.memory import freeze_long_lived
    except ImportError:  # a checkout from before the workers froze their gold
        gc.collect()
    else:
        freeze_long_lived()
    measured = requests[config["warm"]:]
    os.getpgrp()  # callgrind zeroes its counters on entering this call ...
    for request in measured:
        upload(request)
    os.getppid()  # ... and dumps them on entering this one


def main() -> None:
    """Count each checkout's instructions per upload and print a Markdown table."""
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_server_arguments(parser)
    parser.add_argument("--uploads", type=int, default=10, help="Measured uploads.")
    parser.add_argument("--format", default="official", choices=["official", "compact"],
                        help="Uploaded files: full release records with pred_answer, or compact.")
    parser.add_argument("--project", type=Path, action="append",
                        help="A checkout to measure (repeatable; default: this one).")
    parser.add_argument("--keep", type=Path, help="Keep each checkout's dump in this folder "
                        "(read it with callgrind_annotate, or kcachegrind).")
    args = parser.parse_args()
    if args.uploads < 1:
        parser.error("--uploads must be at least 1")
    projects = [p.resolve() for p in (args.project or [ROOT])]
    files = make_files(args.release, args.format, WARM_UPLOADS + args.uploads)
    rows = []
    for project in projects:
        started = time.perf_counter()
        per_upload, crypto = count_project(project, args, files)
        rows.append((describe(project), per_upload, crypto, time.perf_counter() - started))
    print(f"{args.uploads} {args.format} uploads (temp/test, {len(files[-1]) / 1e3:,.0f} KB) "
          f"per checkout, in process under callgrind, PostgreSQL; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| checkout | instructions per upload | vs the first | without libcrypto | vs the first "
          "| run |")
    print("|---|---|---|---|---|---|")
    first, first_rest = rows[0][1], rows[0][1] - rows[0][2]
    for name, per_upload, crypto, seconds in rows:
        rest = per_upload - crypto
        print(f"| {name} | {per_upload / 1e6:,.2f} M | {per_upload / first:.3f} | "
              f"{rest / 1e6:,.2f} M | {rest / first_rest:.3f} | {seconds:.0f} s |")


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        main()
