"""The wheel works on its own: built from the sources, installed into a fresh venv, run from
a folder outside the checkout.

The venv is clean (no --system-site-packages, nothing from the checkout on sys.path): pip
installs the wheel's declared dependencies from the package index, so a dependency missing
from pyproject.toml fails here. HOME is a temporary folder, so pip's cache and everything
else stay under tmp_path; the price is a fresh download each run (3 to 7 minutes in all on
the 2-core dev machine, most of it pip).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from benchmark import import_release

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("SITUATEDQA_DATA", "/nonexistent"))
#: What the wheel is built from: the packages and the top-level folders it ships.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "benchmark", "baselines",
           "situatedqa_server", "templates", "gold/manifest.json",
           "gold/freshqa-manifest.json")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (DATA / "qa_data").is_dir(), reason="SITUATEDQA_DATA: no release"),
]


def run(*args: str | Path, cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    """Run a command; its stdout, or a failure showing its output."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {done.returncode}:\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(venv bin folder, environment, working folder) with the wheel installed."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # a copy, so the build writes nothing into the checkout
    for name in SOURCES:
        target = source / name
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, target, ignore=shutil.ignore_patterns(
                "__pycache__", "*.egg-info", "runs"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, target)
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HOME=str(base), SITUATEDQA_DATA=str(DATA), SECRET_KEY="wheel-test",
               SITUATEDQA_INSTANCE_DIR=str(base / "instance"), PYTHONDONTWRITEBYTECODE="1")
    # The running interpreter's setuptools builds it: no isolated build env to download.
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
        "-w", base / "dist", source, cwd=base, env=env)
    wheel = next((base / "dist").glob("*.whl"))
    run(sys.executable, "-m", "venv", base / "venv", cwd=base, env=env)
    bin_dir = base / "venv" / "bin"
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel, cwd=base, env=env)
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return bin_dir, env, elsewhere


def test_the_installed_code_is_the_wheel(installed: tuple[Path, dict[str, str], Path]) -> None:
    """The modules, templates and manifest come from the venv, and code_version has no git
    tree to ask, so it names the installed package's version."""
    bin_dir, env, cwd = installed
    out = json.loads(run(bin_dir / "python", "-c", (
        "import json, situatedqa_server as s, benchmark.release as r, baselines.output as o;"
        "print(json.dumps([s.__file__, str(s.templates_dir()), str(r.MANIFEST_PATH),"
        " o.code_version()]))"), cwd=cwd, env=env))
    site = str(bin_dir.parent)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert [path.startswith(site) for path in out[:3]] == [True, True, True]
    assert Path(out[1], "leaderboards", "show.html").is_file()
    assert json.loads(Path(out[2]).read_text()) == json.loads(
        (ROOT / "gold" / "manifest.json").read_text())
    assert out[3] == f"situatedqa-server {version}"


def test_benchmark_score(installed: tuple[Path, dict[str, str], Path]) -> None:
    """`python -m benchmark score` scores a file: a quarter right gives EM = that quarter."""
    bin_dir, env, cwd = installed
    gold = import_release(DATA).get("temp", "dev")
    right = len(gold.examples) // 4
    lines = [{"key": e.key, "prediction": e.answers[0] if i < right else "no such answer"}
             for i, e in enumerate(gold.examples)]
    (cwd / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = json.loads(run(bin_dir / "python", "-m", "benchmark", "score", "--track", "temp",
                            "--split", "dev", "predictions.jsonl", "--json", "--resamples",
                            "0", cwd=cwd, env=env))
    assert result["n"] == len(gold.examples)
    assert result["metrics"]["em"] == pytest.approx(100 * right / len(gold.examples))
    # The wheel ships the conformance vectors and the scorer's sources: the same fingerprint.
    from benchmark.harness import fingerprint

    assert result["scorer"] == fingerprint()


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str) -> tuple[int, str]:
    """Status and body of a GET (errors too)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_database_gold_and_a_page_through_gunicorn(
        installed: tuple[Path, dict[str, str], Path]) -> None:
    """`flask … db upgrade` and `gold import` set up the instance; gunicorn serves the
    leaderboard page (a template from the wheel) and a static file."""
    bin_dir, env, cwd = installed
    run(bin_dir / "flask", "--app", "situatedqa_server", "db", "upgrade", cwd=cwd, env=env)
    imported = run(bin_dir / "flask", "--app", "situatedqa_server", "gold", "import",
                   cwd=cwd, env=env)
    dev_examples = len(import_release(DATA).get("temp", "dev").examples)
    assert f"temp     dev   {dev_examples:6} examples" in imported
    port, log = free_port(), cwd / "gunicorn.log"
    server = subprocess.Popen(
        [str(bin_dir / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--no-control-socket", "--error-logfile", str(log), "situatedqa_server:create_app()"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(120):  # until the worker answers (it loads the gold first)
            try:
                status, page = fetch(f"http://127.0.0.1:{port}/leaderboards/temp")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None:
                    pytest.fail(f"gunicorn exited:\n{log.read_text()}")
                time.sleep(0.5)
        else:
            pytest.fail("gunicorn did not answer")
        assert status == 200
        assert "<title>Temporal SituatedQA · test" in page
        css_status, css = fetch(f"http://127.0.0.1:{port}/static/style.css")
        assert (css_status, css) == (200, (ROOT / "situatedqa_server/static/style.css")
                                     .read_text())
    finally:
        server.terminate()
        server.wait(timeout=60)
