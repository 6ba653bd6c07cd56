"""Fixtures for the server: app, client and runner (as in flaskr), on SQLite and PostgreSQL.

The app fixture is parametrized over both backends; PostgreSQL runs when TEST_DATABASE_URL
is set, in a schema made for this test session and dropped after it.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from werkzeug.serving import BaseWSGIServer, make_server

from benchmark import GoldSet, GoldSplit, load_gold
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.services import gold_store

PG_URL = os.environ.get("TEST_DATABASE_URL")
BACKENDS = ["sqlite"] + (["postgres"] if PG_URL else [])
PASSWORD = "correct horse battery staple"

#: Lenient limits and cheap bootstrap/argon2 so the suite stays fast on two cores.
TEST_CONFIG: dict[str, Any] = {
    "TESTING": True,
    "SECRET_KEY": "test-secret-key",
    "BOOTSTRAP_RESAMPLES": 20,
    "LOGIN_RATE_LIMIT": "10000 per minute",
    "REGISTER_RATE_LIMIT": "10000 per minute",
    "UPLOAD_RATE_LIMIT": "10000 per minute",
    "REJECTED_DAILY_CAP": 1000,
    # Jobs run where they start; tests of real job workers set a broker instead.
    "JOBS_EAGER": True,
}
#: Gold sets read once per test session, by folder (their serialized bytes are memoized).
_GOLD_SETS: dict[str, GoldSet] = {}


def gold_set(gold: Path) -> GoldSet:
    """The canonical gold saved in a folder, read once per test session."""
    key = str(gold.resolve())
    if key not in _GOLD_SETS:
        _GOLD_SETS[key] = load_gold(gold)
    return _GOLD_SETS[key]


@pytest.fixture(scope="session")
def gold_dir(release_gold: GoldSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Canonical gold of the real release, saved once per session."""
    directory = tmp_path_factory.mktemp("gold")
    release_gold.save(directory)
    return directory


def _migrate(config: dict[str, Any]) -> None:
    """Run the Alembic migrations (`flask db upgrade`) against a database."""
    from flask_migrate import upgrade

    app = create_app({**TEST_CONFIG, **config})
    with app.app_context():
        upgrade(directory=app.extensions["migrate"].directory)
        db.engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file at the current schema, copied for each test."""
    path = tmp_path_factory.mktemp("db") / "template.sqlite"
    _migrate({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}"})
    return path


@pytest.fixture(scope="session")
def pg_config() -> Iterator[dict[str, Any]]:
    """A fresh PostgreSQL schema at the current schema version; dropped after the session."""
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set")
    schema = f"sqa_test_{secrets.token_hex(4)}"
    engine = sa.create_engine(PG_URL)
    with engine.begin() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    config = {"SQLALCHEMY_DATABASE_URI": PG_URL, "SQLALCHEMY_ENGINE_OPTIONS": {
        "connect_args": {"options": f"-csearch_path={schema}"}, "pool_size": 10,
        "max_overflow": 60}}
    try:
        _migrate(config)
        yield config
    finally:
        with engine.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Config of an empty database at the current schema, on each backend."""
    if request.param == "sqlite":
        path = tmp_path / "test.sqlite"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}"}
    config = request.getfixturevalue("pg_config")
    engine = sa.create_engine(config["SQLALCHEMY_DATABASE_URI"],
                              connect_args=config["SQLALCHEMY_ENGINE_OPTIONS"]["connect_args"])
    with engine.begin() as connection:
        tables = ", ".join(f'"{t.name}"' for t in db.metadata.sorted_tables)
        connection.execute(sa.text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()
    return config


def make_app(database: dict[str, Any], gold: Path, tmp_path: Path, **overrides: Any) -> Flask:
    """An app on the given database, with the gold in a folder stored as the first version."""
    app = create_app({**TEST_CONFIG, **database, "CACHE_DIR": str(tmp_path / "cache"),
                      **overrides})
    with app.app_context():
        gold_store.register_first_version(gold_set(gold))
    return app


def make_app_with_own_gold(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Flask:
    """An app for tests that build gold versions (they live in the database like any)."""
    return make_app(database, gold_dir, tmp_path)


@pytest.fixture
def app(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Iterator[Flask]:
    """The app on a fresh database (SQLite, and PostgreSQL when configured)."""
    application = make_app(database, gold_dir, tmp_path)
    yield application
    with application.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A browser-like test client."""
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    """Runs the organizer commands."""
    return app.test_cli_runner()


# --- helpers -------------------------------------------------------------------------------

CSRF_PATTERN = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


def csrf_token(client: FlaskClient, url: str) -> str:
    """The CSRF token of the form on a page."""
    match = CSRF_PATTERN.search(client.get(url).get_data(as_text=True))
    if match is None:
        raise LookupError(f"no CSRF token on {url}")
    return match.group(1)


def register(client: FlaskClient, username: str, team: str | None = None) -> None:
    """Register through the form (logs in)."""
    token = csrf_token(client, "/auth/register")
    response = client.post("/auth/register", data={
        "csrf_token": token, "username": username, "email": f"{username}@example.org",
        "password": PASSWORD, "team": team or ""})
    if response.status_code != 302:
        raise AssertionError(response.get_data(as_text=True))


def login(client: FlaskClient, username: str, password: str = PASSWORD) -> Any:
    """Log in through the form."""
    token = csrf_token(client, "/auth/login")
    return client.post("/auth/login", data={"csrf_token": token, "username": username,
                                            "password": password})


def new_token(client: FlaskClient) -> str:
    """Create an API token through the account page and read it off the page."""
    token = csrf_token(client, "/auth/account")
    page = client.post("/auth/tokens", data={"csrf_token": token, "name": "test"})
    match = re.search(r'<pre id="new-token">([^<]+)</pre>', page.get_data(as_text=True))
    if match is None:
        raise AssertionError("no token shown")
    return match.group(1)


def prediction_file(gold: GoldSplit, correct: int | None = None, *, compress: bool = False,
                    value: str | None = None, wrong: str = "no such answer") -> bytes:
    """JSONL predictions: the first `correct` examples right (all by default), others wrong.

    `wrong` is the answer of the wrong QA examples: another one makes other predictions with
    the same score (one team's identical predictions on a board are refused with 409).
    """
    limit = len(gold) if correct is None else correct
    lines = []
    for position, example in enumerate(gold.examples):
        right = position < limit
        if gold.is_identification:
            label = bool(example.label) if right else not example.label
            lines.append({"key": example.key, "label": label})
        else:
            answer = example.answers[0] if right and example.answers else wrong
            lines.append({"key": example.key, "prediction": value or answer})
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return gzip.compress(data) if compress else data


def api_upload(client: Any, token: str, gold: GoldSplit, data: bytes | None = None,
               **fields: Any) -> Any:
    """POST /api/v1/submissions through a test client."""
    import io

    form = {"track": gold.track, "split": gold.split, "method_name": "test method",
            "public": "false", **fields}
    form["file"] = (io.BytesIO(data if data is not None else prediction_file(gold)),
                    "predictions.jsonl")
    return client.post("/api/v1/submissions", data=form,
                       headers={"Authorization": f"Bearer {token}"},
                       content_type="multipart/form-data")


class LiveServer:
    """The app served by werkzeug in a thread, for real concurrent HTTP requests."""

    def __init__(self, app: Flask) -> None:
        self.server: BaseWSGIServer = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)
