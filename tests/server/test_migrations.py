"""The migrations match the models, and go down to base and up to head on both backends."""

from __future__ import annotations

import hashlib
import secrets
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from flask_migrate import downgrade, upgrade

from situatedqa_server import create_app
from situatedqa_server.extensions import db

from .conftest import BACKENDS, PG_URL, TEST_CONFIG


@pytest.fixture(params=BACKENDS)
def empty_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Flask]:
    """An app on an empty database (SQLite file, or a fresh PostgreSQL schema)."""
    config: dict[str, Any] = {**TEST_CONFIG, "INSTANCE_DIR": str(tmp_path / "instance")}
    schema = None
    if request.param == "sqlite":
        config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{tmp_path / 'm.sqlite'}"
    else:
        schema = f"sqa_mig_{secrets.token_hex(4)}"
        engine = sa.create_engine(str(PG_URL))
        with engine.begin() as connection:
            connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        config["SQLALCHEMY_DATABASE_URI"] = PG_URL
        config["SQLALCHEMY_ENGINE_OPTIONS"] = {
            "connect_args": {"options": f"-csearch_path={schema}"}}
    app = create_app(config)
    try:
        with app.app_context():
            yield app
            db.session.remove()
            db.engine.dispose()
    finally:
        if schema is not None:
            with engine.begin() as connection:
                connection.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            engine.dispose()


def directory(app: Flask) -> str:
    """The app's migration folder."""
    return str(app.extensions["migrate"].directory)


def differences(metadata: sa.MetaData) -> list[Any]:
    """What autogenerate would write to bring the database to the given models."""
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={
            "compare_type": True, "compare_server_default": True})
        return list(compare_metadata(context, metadata))


def tables() -> set[str]:
    """The tables in the database (the current schema on PostgreSQL)."""
    return set(sa.inspect(db.engine).get_table_names())


def test_models_match_migrations_and_down_up_round_trip(empty_app: Flask) -> None:
    """Head equals the models; base leaves only Alembic's table; head again equals them."""
    upgrade(directory=directory(empty_app))
    assert differences(db.metadata) == []
    assert tables() == {*db.metadata.tables, "alembic_version"}
    downgrade(directory=directory(empty_app), revision="base")
    assert tables() == {"alembic_version"}
    upgrade(directory=directory(empty_app))
    assert differences(db.metadata) == []


def test_the_comparison_sees_a_model_change(empty_app: Flask) -> None:
    """A column in the models that no migration adds is a difference (the check can fail)."""
    upgrade(directory=directory(empty_app))
    changed = sa.MetaData(naming_convention=db.metadata.naming_convention)
    for table in db.metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["team"].append_column(sa.Column("motto", sa.String(80)))
    found = differences(changed)
    assert [(d[0], d[2], d[3].name) for d in found] == [("add_column", "team", "motto")]


@pytest.mark.parametrize("empty_app", ["sqlite"], indirect=True)
def test_downgrade_past_database_storage_gives_the_files_back(
        empty_app: Flask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below 0005 uploads live in a folder again, and 0005 takes them back in."""
    uploads = tmp_path / "uploads"
    monkeypatch.setenv("SITUATEDQA_SUBMISSIONS_DIR", str(uploads))
    upgrade(directory=directory(empty_app), revision="0005_database_storage")
    content = b'{"id": "q1", "answer": "x"}\n'
    sha256 = hashlib.sha256(content).hexdigest()
    now = "2026-01-01 00:00:00"
    with db.engine.begin() as connection:
        run = connection.execute
        run(sa.text("INSERT INTO team (id, name, created_at) VALUES (1, 't', :now)"),
            {"now": now})
        run(sa.text("INSERT INTO user_account (id, username, email, password_hash, team_id, "
                    "is_admin, created_at) VALUES (1, 'u', 'u@x.org', 'h', 1, false, :now)"),
            {"now": now})
        run(sa.text("INSERT INTO stored_file (sha256, size, data, created_at) "
                    "VALUES (:sha, :size, :data, :now)"),
            {"sha": sha256, "size": len(content), "data": zlib.compress(content), "now": now})
        run(sa.text("INSERT INTO submission (id, user_id, team_id, track, split, file_sha256, "
                    "filename, format, method_name, description, model_type, fine_tuned, "
                    "visibility, hidden, is_baseline, created_at) VALUES (1, 1, 1, 'temp', "
                    "'dev', :sha, 'p.jsonl', 'jsonl', 'm', '', 'other', false, 'private', "
                    "false, false, :now)"), {"sha": sha256, "now": now})
    downgrade(directory=directory(empty_app), revision="0004_integrity")
    assert (uploads / sha256[:2] / sha256).read_bytes() == content
    assert "stored_file" not in tables()
    upgrade(directory=directory(empty_app), revision="0005_database_storage")
    with db.engine.connect() as connection:
        stored = connection.execute(sa.text("SELECT data FROM stored_file")).scalars().all()
    assert [zlib.decompress(data) for data in stored] == [content]
