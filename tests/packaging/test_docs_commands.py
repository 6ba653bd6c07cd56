"""The docs state the present: every command they show runs (with --help), every path they
name exists, every setting they name is declared, and `gunicorn app:app` gets the project's
settings without a flag."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from situatedqa_server.settings import PROCESS_SETTINGS, SETTINGS, declared

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmark" / "README.md",
        ROOT / "baselines" / "README.md", ROOT / "submissions" / "README.md"]
BIN = Path(sys.executable).parent
#: The command words the docs run, and how each is started here.
PROGRAMS = {"flask": [str(BIN / "flask")], "gunicorn": [str(BIN / "gunicorn")],
            "situatedqa": [str(BIN / "situatedqa")], "python": [sys.executable],
            ".venv/bin/python": [sys.executable]}


def shown_commands() -> list[tuple[str, list[str]]]:
    """(document, argv) of every command line in the docs' bash blocks."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", doc.read_text(), re.S):
            for raw in block.replace("\\\n", " ").splitlines():
                line = raw.split(" #", 1)[0].strip().removeprefix("$ ")
                for part in re.split(r"\s*(?:&&|\|)\s*", line):
                    try:
                        words = shlex.split(part) if part else []
                    except ValueError:  # a quote opened in another part of the line
                        words = part.split()
                    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                        words = words[1:]  # VAR=value prefixes
                    if words and words[0] in PROGRAMS:
                        found.append((doc.name, words))
    return found


def help_argv(words: list[str]) -> list[str] | None:
    """The command as run with --help: its options cut off, placeholders dropped."""
    program, rest = PROGRAMS[words[0]], words[1:]
    if words[0] in ("python", ".venv/bin/python"):
        if rest[:1] == ["-m"] and len(rest) > 1:
            return [*program, "-m", rest[1], *subcommand(rest[2:]), "--help"]
        if rest and rest[0].endswith(".py"):
            return [*program, str(ROOT / rest[0]), "--help"]
        return None
    if words[0] == "gunicorn":
        return [*program, "--help"]
    return [*program, *subcommand(rest), "--help"]


def subcommand(words: list[str]) -> list[str]:
    """The leading words that name a (sub)command: up to the first option or placeholder."""
    chosen = []
    for word in words:
        if word.startswith(("-", "<", "[")) or not re.fullmatch(r"[a-z][a-z0-9_-]*", word):
            break
        chosen.append(word)
    return chosen


def distinct(commands: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """One of each command as run with --help (the docs repeat many)."""
    seen: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for doc, words in commands:
        argv = help_argv(words)
        seen.setdefault(tuple(argv) if argv else tuple(words), (doc, words))
    return list(seen.values())


COMMANDS = distinct(shown_commands())


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) > 20


@pytest.mark.parametrize(("doc", "words"), COMMANDS, ids=[f"{d}:{' '.join(w)[:60]}"
                                                          for d, w in COMMANDS])
def test_every_command_the_docs_show_runs(doc: str, words: list[str], tmp_path: Path) -> None:
    argv = help_argv(words)
    if argv is None:
        pytest.skip(f"{' '.join(words)}: not a command with --help")
    if words[0] == "flask":
        argv = [argv[0], "--app", "app", *[w for w in argv[1:] if w not in ("--app", "app")]]
    env = {**os.environ, "SITUATEDQA_INSTANCE_DIR": str(tmp_path), "MPLCONFIGDIR": str(tmp_path),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'docs.sqlite'}"}
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, f"{doc}: {' '.join(words)}\n{result.stdout}{result.stderr}"


PATH_PATTERN = re.compile(r"`((?:docs|scripts|benchmark|baselines|situatedqa_server|tests|"
                          r"submissions|templates|gold)/[\w./-]*)`")


#: Paths the docs name that a checkout does not hold, and why.
ELSEWHERE = {"gold/release": "downloaded by `python -m benchmark fetch`",
             "situatedqa_server/templates": "where the wheel installs templates/",
             "benchmark/gold/manifest.json": "where the wheel installs gold/manifest.json"}


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_path_the_docs_name_exists(doc: Path) -> None:
    missing = [p for p in PATH_PATTERN.findall(doc.read_text())
               if "<" not in p and "*" not in p and p.rstrip("/.") not in ELSEWHERE
               and not (ROOT / p.rstrip("/.")).exists()]
    assert missing == [], f"{doc.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_setting_the_docs_name_is_declared(doc: Path) -> None:
    # PROCESS_SETTINGS: the client's, the gunicorn config's, a migration's
    known = {setting.env for setting in SETTINGS + PROCESS_SETTINGS}
    named = set(re.findall(r"\b(SITUATEDQA_[A-Z_]+)\b", doc.read_text()))
    assert named - known == set(), f"{doc.name} names unknown settings: {named - known}"


def test_gunicorn_reads_the_projects_settings_without_a_flag() -> None:
    result = subprocess.run([str(BIN / "gunicorn"), "--print-config", "app:app"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    values = dict(re.findall(r"^(\w+)\s+= (.*)$", result.stdout, re.M))
    threads = str(declared("SITUATEDQA_THREADS").default)
    assert values["threads"] == threads and values["limit_request_line"] == "8190"
