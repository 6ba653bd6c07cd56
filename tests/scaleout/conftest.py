"""Real processes on one PostgreSQL database and a real Redis broker.

Each app instance is `gunicorn app:app` with its own instance folder (its own caches and
embedded files); the job worker is `flask --app app jobs worker`. They run when
TEST_DATABASE_URL and TEST_BROKER_URL are set (.ci/run sets both) and skip otherwise.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import sqlalchemy as sa

REPO = Path(__file__).resolve().parents[2]
PG_URL = os.environ.get("TEST_DATABASE_URL")
BROKER_URL = os.environ.get("TEST_BROKER_URL")
PASSWORD = "correct horse battery staple"


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Deployment:
    """One database schema and broker, and the processes started on them."""

    root: Path
    env: dict[str, str]
    engine: sa.Engine
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    token: str = ""

    def instance_env(self, name: str, **extra: str) -> dict[str, str]:
        """Environment of an app instance or worker with an instance folder of its own."""
        folder = self.root / name
        folder.mkdir(exist_ok=True)
        return {**self.env, "SITUATEDQA_INSTANCE_DIR": str(folder), **extra}

    def flask(self, *args: str, instance: str = "admin", check: bool = True) -> str:
        """Run `flask --app app …` in an instance's environment; its output."""
        result = subprocess.run([sys.executable, "-m", "flask", "--app", "app", *args],
                                cwd=REPO, env=self.instance_env(instance),
                                capture_output=True, text=True, timeout=600)
        if check and result.returncode != 0:
            raise AssertionError(f"flask {' '.join(args)}: {result.stdout}{result.stderr}")
        return result.stdout

    def start(self, args: list[str], instance: str, log: str) -> subprocess.Popen[bytes]:
        """Start a process in its own process group, its output in a log file."""
        out = (self.root / log).open("ab")
        process = subprocess.Popen(args, cwd=REPO, env=self.instance_env(instance),
                                   stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def web(self, instance: str, workers: int = 2) -> str:
        """Start `gunicorn app:app` for an instance; its URL once it answers."""
        port = free_port()
        # No control socket: gunicorn would put it in $HOME/.gunicorn, shared by instances.
        self.start([sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
                    "--workers", str(workers), "--threads", "2", "--no-control-socket",
                    "app:app"],
                   instance, f"{instance}.log")
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(url), 60, f"gunicorn of {instance}")
        return url

    def worker(self, name: str = "worker") -> subprocess.Popen[bytes]:
        """Start one job worker (`flask --app app jobs worker`)."""
        return self.start([sys.executable, "-m", "flask", "--app", "app", "jobs", "worker",
                           "--loglevel", "WARNING"], name, f"{name}.log")

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """kill -9 a process and its children."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def scalar(self, sql: str, **params: Any) -> Any:
        """One value from the deployment's database."""
        with self.engine.connect() as connection:
            return connection.execute(sa.text(sql), params).scalar()

    def upload(self, url: str, data: bytes, track: str, split: str, **fields: str) -> Any:
        """POST a file to /api/v1/submissions."""
        return requests.post(f"{url}/api/v1/submissions", headers={
            "Authorization": f"Bearer {self.token}"}, data={
            "track": track, "split": split, "method_name": "m", "public": "true", **fields},
            files={"file": ("p.jsonl", data)}, timeout=60)


def _answers(url: str) -> bool:
    try:
        return requests.get(f"{url}/api/v1/tracks", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def wait_for(condition: Any, seconds: float, what: str) -> None:
    """Poll until condition() is true; fail naming what did not happen."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


@pytest.fixture
def deployment(tmp_path: Path, release_dir: Path) -> Iterator[Deployment]:
    """A fresh schema with the gold imported and a user with a token; processes stopped after."""
    if not PG_URL or not BROKER_URL:
        pytest.skip("TEST_DATABASE_URL and TEST_BROKER_URL are not both set")
    schema = f"sqa_scale_{secrets.token_hex(4)}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = f"{PG_URL}?options={quote(f'-csearch_path={schema}')}"
    # One Redis database per test, so no other run's messages reach these workers.
    broker = f"{BROKER_URL.rstrip('/').rsplit('/', 1)[0]}/{secrets.randbelow(14) + 1}"
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": secrets.token_hex(16),
           "SITUATEDQA_BROKER_URL": broker, "SITUATEDQA_DATA": str(release_dir),
           "SITUATEDQA_BOOTSTRAP_RESAMPLES": "20", "SITUATEDQA_JOB_LEASE_SECONDS": "4",
           "SITUATEDQA_JOB_SWEEP_SECONDS": "1", "SITUATEDQA_RESCORE_BATCH_SIZE": "10",
           "SITUATEDQA_SECURE_COOKIES": "false", "SITUATEDQA_UPLOAD_RATE_LIMIT": "10000/minute",
           "SITUATEDQA_TEST_DAILY_QUOTA": "1000", "SITUATEDQA_TEST_TOTAL_QUOTA": "1000"}
    engine = sa.create_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    deployment = Deployment(tmp_path, env, engine)
    try:
        deployment.flask("db", "upgrade")
        deployment.flask("gold", "import", "--from", str(release_dir))
        deployment.flask("users", "create", "alice", "--email", "a@example.org",
                         "--password", PASSWORD, "--team", "Team A")
        deployment.token = deployment.flask("tokens", "create", "alice").strip().splitlines()[-1]
        yield deployment
    finally:
        for process in deployment.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
