"""Flask extensions, created unbound here and bound to the app in create_app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import current_app
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import Connection, Engine, MetaData, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase

# Stable constraint names so Alembic migrations are the same on SQLite and PostgreSQL.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base of every model."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
limiter = Limiter(key_func=get_remote_address)


def configure_sqlite(engine: Engine) -> None:
    """On the app's own SQLite engines only (not, e.g., the embedded job broker's)."""
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    """SQLite: let SQLAlchemy emit BEGIN itself, enforce foreign keys, wait on locks."""
    if type(dbapi_connection).__module__ != "sqlite3":
        return
    # pysqlite's own implicit BEGIN would defeat BEGIN IMMEDIATE below.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    """SQLite: BEGIN IMMEDIATE for transactions that must hold the write lock from the start."""
    if connection.dialect.name != "sqlite":
        return
    immediate = connection.get_execution_options().get("sqlite_immediate", False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def upsert_insert(entity: Any) -> Any:
    """INSERT for the session's database that takes ON CONFLICT (PostgreSQL or SQLite)."""
    if db.session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(entity)
    return sqlite.insert(entity)


def config_limit(setting: str) -> Callable[[], str]:
    """A rate limit read from the app's config at request time (tests set their own)."""
    return lambda: str(current_app.config[setting])
