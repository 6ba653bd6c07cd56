"""The README's quick start, run for real: `bash scripts/serve.sh`, stopped and run again.

The checkout is copied to tmp_path and served from there with a virtualenv of its own that
sees this environment's packages through a .pth file, so serve.sh's `pip install -e` changes
neither the working folder nor the test environment. Between the two starts an organizer
builds and activates a gold version that retires and adds examples on every QA track: the
second start must serve, with the baseline entries on every board.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import requests

from benchmark import QA_TRACKS, GoldSet
from tests.versions.conftest import update_on_every_qa_track

from .conftest import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
#: What a clone holds that the copy must not: caches, the instance folder, virtualenvs.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "instance", "__pycache__", "*.egg-info",
                                    ".mypy_cache", ".ruff_cache", ".pytest_cache", "build")


def checkout_copy(root: Path) -> Path:
    """The working tree as a fresh clone would hold it, under root."""
    target = root / "checkout"
    shutil.copytree(REPO, target, ignore=NOT_COPIED)
    return target


def side_venv(root: Path) -> Path:
    """A virtualenv that sees this environment's packages (a .pth line), so pip installs
    only the project itself into it, from the copy."""
    venv = root / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
                    str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "parent-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # pip writes no console scripts for packages it finds installed already: the two that
    # serve.sh calls, as their own entry points would be.
    for name, entry in (("flask", "flask.cli:main"), ("gunicorn", "gunicorn.app.wsgiapp:run")):
        module, function = entry.split(":")
        script = venv / "bin" / name
        script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\n"
                          f"from {module} import {function}\nsys.exit({function}())\n")
        script.chmod(0o755)
    return venv


class QuickStart:
    """`bash scripts/serve.sh` in a copy of the checkout, started and stopped."""

    def __init__(self, root: Path, release_dir: Path) -> None:
        self.checkout = checkout_copy(root)
        self.venv = side_venv(root)
        self.port = free_port()
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("SITUATEDQA_", "TEST_")) and key != "DATABASE_URL"}
        self.env |= {"SITUATEDQA_DATA": str(release_dir), "VENV": str(self.venv),
                     "PORT": str(self.port), "WORKERS": "1",
                     "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / "serve.log"

    def serve(self) -> subprocess.Popen[bytes]:
        """Start serve.sh and wait until the home page answers."""
        with self.log.open("ab") as log:
            process = subprocess.Popen(["bash", "scripts/serve.sh"], cwd=self.checkout,
                                       env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)

        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"serve.sh exited {process.returncode}:\n"
                                     + self.log.read_text()[-4000:])
            try:
                return requests.get(self.url + "/", timeout=30).status_code == 200
            except (requests.ConnectionError, requests.Timeout):
                return False

        try:
            wait_for(up, 600, "the quick start to serve")
        except BaseException:
            self.stop(process)  # no server or job worker left behind
            raise
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        """Ctrl-C, as the README says: the server and its job worker stop."""
        try:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=60)
        except ProcessLookupError:  # the group is gone already
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def flask(self, *args: str) -> str:
        """`flask --app app …` with the quick start's environment, in the copy."""
        result = subprocess.run([str(self.venv / "bin" / "flask"), "--app", "app", *args],
                                cwd=self.checkout, env=self.env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def baselines_on(self, track: str, split: str) -> list[dict[str, Any]]:
        """The baseline entries of a board, as its JSON lists them."""
        board = requests.get(f"{self.url}/api/v1/leaderboards/{track}",
                             params={"split": split}, timeout=30)
        assert board.status_code == 200, board.text
        return [e for e in board.json()["entries"] if e["baseline"] and not e["reported"]]


@pytest.mark.slow
def test_the_quick_start_serves_again_after_a_gold_version(
        tmp_path: Path, release_dir: Path, release_gold: GoldSet) -> None:
    quick = QuickStart(tmp_path, release_dir)
    process = quick.serve()
    try:
        before = {(t, s): quick.baselines_on(t, s) for t in QA_TRACKS for s in ("dev", "test")}
        assert all(before.values()), before
    finally:
        quick.stop(process)
    update = tmp_path / "update.jsonl"
    update.write_text("".join(json.dumps(r) + "\n"
                              for r in update_on_every_qa_track(release_gold)))
    quick.flask("gold", "build", "--from-update", str(update), "--name", "v2",
                "--as-of", "2026-11-01")
    quick.flask("gold", "activate", "v2")
    process = quick.serve()  # exited 1 in `baselines regenerate --quick` before the fix
    try:
        for track in QA_TRACKS:
            for split in ("dev", "test"):
                entries = quick.baselines_on(track, split)
                runners = {e["method_name"] for e in entries}
                assert runners == {e["method_name"] for e in before[(track, split)]}, runners
        versions = quick.flask("gold", "versions")
        assert "v2" in versions and "ACTIVE" in versions.split("v2", 1)[1].splitlines()[0]
        # The retired example is gone from the score, the added one counts as wrong.
        geo_dev = requests.get(f"{quick.url}/api/v1/leaderboards/geo",
                               params={"split": "dev"}, timeout=30).json()
        assert geo_dev["entries"]
    finally:
        quick.stop(process)
