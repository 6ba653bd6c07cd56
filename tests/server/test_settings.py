"""Settings: declared once, each settable from the environment, each documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from situatedqa_server.settings import PROCESS_SETTINGS, SETTINGS, declared, settings_from_env

DOCS = Path(__file__).resolve().parents[2] / "docs" / "server.md"


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text()
    missing = [s.env for s in SETTINGS if f"`{s.env}`" not in text]
    assert missing == []


def test_required_environment_names_exist() -> None:
    names = {s.env for s in SETTINGS}
    assert {"DATABASE_URL", "SECRET_KEY", "SITUATEDQA_DATA", "SITUATEDQA_TEST_DAILY_QUOTA",
            "SITUATEDQA_TEST_TOTAL_QUOTA", "SITUATEDQA_MAX_UPLOAD_BYTES",
            "SITUATEDQA_MAX_DECOMPRESSED_BYTES"} <= names
    assert all(s.help for s in SETTINGS)


def test_settings_are_read_from_the_environment() -> None:
    config = settings_from_env({"SITUATEDQA_TEST_DAILY_QUOTA": "9", "DATABASE_URL": "sqlite://",
                                "SITUATEDQA_SECURE_COOKIES": "off"})
    assert config["TEST_DAILY_QUOTA"] == 9
    assert config["SQLALCHEMY_DATABASE_URI"] == "sqlite://"
    assert config["SESSION_COOKIE_SECURE"] is False
    with pytest.raises(ValueError, match="SITUATEDQA_TEST_TOTAL_QUOTA"):
        settings_from_env({"SITUATEDQA_TEST_TOTAL_QUOTA": "many"})


def test_an_app_makes_its_instance_folder_only_when_it_keeps_something_there(
        tmp_path: Path) -> None:
    from situatedqa_server import create_app

    configured = tmp_path / "configured"
    create_app({"INSTANCE_DIR": str(configured), "SECRET_KEY": "k", "JOBS_EAGER": True,
                "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'db.sqlite'}"})
    assert not configured.exists()
    defaults = tmp_path / "defaults"
    app = create_app({"INSTANCE_DIR": str(defaults)})
    assert defaults.is_dir() and (defaults / "secret_key").is_file()
    assert app.config["SQLALCHEMY_DATABASE_URI"] == f"sqlite:///{defaults / 'situatedqa.db'}"


ROOT = Path(__file__).resolve().parents[2]
#: Where the project's code reads its settings: the settings scan looks at every file here.
SCANNED = ("situatedqa_server", "benchmark", "baselines", "app.py", "gunicorn.conf.py", "scripts")
ENV_NAME = re.compile(r"SITUATEDQA_[A-Z0-9_]+")
SHELL_NAME = re.compile(r"\$\{?(SITUATEDQA_[A-Z0-9_]+)|\b(SITUATEDQA_[A-Z0-9_]+)=")
#: Keys of Flask and its extensions that the app reads or sets itself; they are no setting
#: of this project (none is read from the environment).
FRAMEWORK_KEYS = {"TESTING", "RATELIMIT_STORAGE_OPTIONS", "RATELIMIT_HEADERS_ENABLED",
                  "SQLALCHEMY_ENGINE_OPTIONS"}


def scanned_files(suffix: str) -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob(f"*{suffix}"))
    return [f for f in files if f.suffix == suffix and f.name != "settings.py"]


def names_read(path: Path) -> tuple[set[str], set[str]]:
    """The environment names (every string that is exactly a `SITUATEDQA_` name: an
    environ lookup, a click envvar, a subprocess's environment) and the Flask config keys
    read (`….config[KEY]`, `….config.get(KEY)`) in one Python file. Identifiers, docstrings
    and messages that mention a name in passing are not reads."""
    tree = ast.parse(path.read_text(), str(path))
    env: set[str] = set()
    config: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and ENV_NAME.fullmatch(node.value):
            env.add(node.value)
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.value, ast.Attribute) and node.value.attr == "config":
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and isinstance(node.func.value, ast.Attribute) \
                and node.func.value.attr == "config" and node.args:
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            config.add(key.value)
    return env, config


def test_every_name_read_is_declared_in_settings() -> None:
    declared_env = {s.env for s in SETTINGS + PROCESS_SETTINGS}
    declared_keys = {s.name for s in SETTINGS} | FRAMEWORK_KEYS
    undeclared: list[str] = []
    for path in scanned_files(".py"):
        env, config = names_read(path)
        where = path.relative_to(ROOT)
        undeclared += [f"{where}: environment {name}" for name in sorted(env - declared_env)]
        undeclared += [f"{where}: config {name}" for name in sorted(config - declared_keys)]
    for path in scanned_files(".sh"):
        for match in SHELL_NAME.finditer(path.read_text()):
            name = match.group(1) or match.group(2)
            if name not in declared_env:
                undeclared.append(f"{path.relative_to(ROOT)}: environment {name}")
    assert undeclared == []


def test_the_scan_finds_an_undeclared_read(tmp_path: Path) -> None:
    source = tmp_path / "reader.py"
    source.write_text('import os\nfrom flask import current_app\n'
                      'SITUATEDQA_LIKE = 1  # a constant: no read\n'
                      'x = os.environ.get("SITUATEDQA_NEW_THING")\n'
                      'y = current_app.config.get("NEW_KEY", 3)\n'
                      'z = current_app.config["OTHER_KEY"]\n'
                      '"""Mentions SITUATEDQA_DATA in passing."""\n')
    assert names_read(source) == ({"SITUATEDQA_NEW_THING"}, {"NEW_KEY", "OTHER_KEY"})


def test_every_process_setting_is_documented() -> None:
    text = "\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    assert [s.env for s in PROCESS_SETTINGS if not re.search(rf"\b{s.env}\b", text)] == []
    assert all(s.help for s in PROCESS_SETTINGS)


def test_a_declared_default_is_found_by_name() -> None:
    assert declared("RANK_GROUP_RESAMPLES").default == 1000
    assert declared("SITUATEDQA_BIND").default == "127.0.0.1:8000"
    with pytest.raises(KeyError, match="NOPE"):
        declared("NOPE")
