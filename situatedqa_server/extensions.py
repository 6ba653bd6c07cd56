"""Flask extensions, created unbound here and bound to the app in create_app."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click
from flask import Flask, Response, after_this_request, current_app, has_request_context
from flask_limiter.util import get_remote_address
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import Connection, Engine, MetaData, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase

from .ratelimits import ResilientLimiter

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


T = TypeVar("T")
db = SQLAlchemy(model_class=Base)
csrf = CSRFProtect()
#: Fails open (or closed, per route) when its storage is unreachable: see ratelimits.py.
limiter = ResilientLimiter(get_remote_address)


def configure_engine(engine: Engine) -> None:
    """On the app's own engines only (not, e.g., the embedded job broker's SQLite)."""
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    elif engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _postgresql_connect)


def _postgresql_connect(dbapi_connection: Any, _record: Any) -> None:
    """PostgreSQL: no JIT compilation. The app's queries run in milliseconds, and a board's
    ranking over 10,000 entries is estimated costly enough for the JIT, which then compiles
    it for about 240 ms before running it for 20."""
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    cursor = dbapi_connection.cursor()
    cursor.execute("SET SESSION jit = off")
    cursor.close()
    dbapi_connection.autocommit = autocommit


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
    return dialect_insert(dialect_name(), entity)


def dialect_name() -> str:
    """The session's database: "postgresql" or "sqlite"."""
    return str(db.session.get_bind().dialect.name)


def dialect_insert(dialect: str, entity: Any) -> Any:
    """INSERT that takes ON CONFLICT on the named database (see upsert_insert)."""
    return postgresql.insert(entity) if dialect == "postgresql" else sqlite.insert(entity)


def prebuilt(build: Callable[[str], T]) -> Callable[[], T]:
    """A statement built once per database dialect and reused with bound parameters.

    Building a SQLAlchemy statement and its cache key costs about 0.1-0.4 ms of CPU, more
    than executing a simple one; on the upload path that is paid by every request. A
    statement built once keeps its (memoized) cache key, so only the execution is left.
    """
    built: dict[str, T] = {}

    def statement() -> T:
        dialect = dialect_name()
        found = built.get(dialect)
        if found is None:
            found = built.setdefault(dialect, build(dialect))
        return found
    return statement


def after_response(work: Callable[[], None], what: str) -> None:
    """Run work once the current response is sent, in an app context of its own: a failure
    is rolled back and logged (with what it was doing), never shown to the client. Outside a
    request, nothing is run."""
    if not has_request_context():
        return
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def run() -> None:
        with app.app_context():
            try:
                work()
            except Exception:
                db.session.rollback()
                logging.getLogger(__name__).exception("after a response: %s", what)

    @after_this_request
    def later(response: Response) -> Response:
        response.call_on_close(run)
        return response


def config_limit(setting: str) -> Callable[[], str]:
    """A rate limit read from the app's config at request time (tests set their own)."""
    return lambda: str(current_app.config[setting])


# --- migrations: Flask-Migrate, imported only when a migration runs ---------------------------


class LazyMigrate:
    """What Flask-Migrate keeps in app.extensions["migrate"], without importing it.

    Importing Flask-Migrate imports Alembic and Mako: about 11 MiB of every web worker's
    memory for code that only `flask db …`, `flask setup` and the tests' migrations run.
    The attributes read by Flask-Migrate's functions and migrations/env.py are the same
    (directory, db, configure_args, metadata, migrate); `migrate` builds the real
    Flask-Migrate object on first use.
    """

    def __init__(self, database: SQLAlchemy, directory: str) -> None:
        self.db = database
        self.directory = directory
        #: Flask-Migrate's defaults (Migrate(compare_type=True, render_as_batch=True)).
        self.configure_args: dict[str, Any] = {"compare_type": True, "render_as_batch": True}

    @property
    def metadata(self) -> MetaData:
        """The models' metadata (older env.py files read it here)."""
        return self.db.metadata

    @functools.cached_property
    def migrate(self) -> Any:
        """The real flask_migrate.Migrate (its get_config builds Alembic's configuration)."""
        from flask_migrate import Migrate

        return Migrate(db=self.db, directory=self.directory, **self.configure_args)


class LazyMigrateGroup(click.Group):
    """`flask db …`: Flask-Migrate's command group, imported when the command is run."""

    @staticmethod
    def real() -> click.Group:
        """Flask-Migrate's own `db` group (imports Flask-Migrate and Alembic)."""
        from flask_migrate.cli import db as real_group

        group: click.Group = real_group
        return group

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """The real group's context: it parses the options and runs the subcommand."""
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The real group's subcommands (shell completion asks the group itself)."""
        return self.real().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """One of the real group's subcommands."""
        return self.real().get_command(ctx, cmd_name)


def init_migrations(app: Flask, directory: str) -> None:
    """Register migrations as Migrate(app, db, directory) would, importing nothing yet."""
    app.extensions["migrate"] = LazyMigrate(db, directory)
    app.cli.add_command(LazyMigrateGroup("db", help="Perform database migrations."))
