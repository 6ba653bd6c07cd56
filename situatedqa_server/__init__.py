"""The SituatedQA evaluation server: a Flask app factory over the benchmark core."""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from .settings import settings_from_env
from .wrappers import AppRequest

REPO_ROOT = Path(__file__).resolve().parent.parent


def templates_dir() -> Path:
    """The page templates: inside the package when installed from the wheel (setup.py maps
    the checkout's top-level templates/ there), else the checkout's templates/."""
    installed = Path(__file__).resolve().parent / "templates"
    return installed if installed.is_dir() else REPO_ROOT / "templates"


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Build the app: settings from the environment (or test_config), extensions, blueprints."""
    settings = settings_from_env()
    instance = (test_config or {}).get("INSTANCE_DIR") or settings["INSTANCE_DIR"]
    app = Flask(__name__, instance_relative_config=True, instance_path=(
        str(Path(instance).resolve()) if instance else None),
                template_folder=str(templates_dir()))
    app.request_class = AppRequest
    app.config.update(settings)
    if test_config is not None:
        app.config.update(test_config)
    _derive_config(app)
    _init_extensions(app)
    _register_blueprints(app)
    return app


def _derive_config(app: Flask) -> None:
    """Fill in defaults that depend on the instance folder, and fixed security settings."""
    config = app.config
    instance = Path(app.instance_path)
    # Made only when something is written there at once (the default SQLite file, the key,
    # the embedded broker), so that an app configured with all three (every test's) leaves
    # no folder in the checkout; the plot cache makes its own folders when it writes.
    if not (config["SQLALCHEMY_DATABASE_URI"] and config["SECRET_KEY"]
            and (config["BROKER_URL"] or config["JOBS_EAGER"])):
        instance.mkdir(parents=True, exist_ok=True)
    config["SQLALCHEMY_DATABASE_URI"] = (
        config["SQLALCHEMY_DATABASE_URI"] or f"sqlite:///{instance / 'situatedqa.db'}")
    config["CACHE_DIR"] = config["CACHE_DIR"] or str(instance / "cache")
    config["RATELIMIT_STORAGE_URI"] = config["RATELIMIT_STORAGE_URI"] or (
        config["BROKER_URL"] if str(config["BROKER_URL"] or "").startswith("redis")
        else "memory://")
    config["SECRET_KEY"] = config["SECRET_KEY"] or _instance_secret_key(instance)
    engine_options = dict(config.get("SQLALCHEMY_ENGINE_OPTIONS") or {"pool_pre_ping": True})
    # SQLAlchemy's error messages quote the statement's parameters, i.e. request data.
    config["SQLALCHEMY_ENGINE_OPTIONS"] = {**engine_options, "hide_parameters": True}
    config["SESSION_COOKIE_HTTPONLY"] = True
    config["SESSION_COOKIE_SAMESITE"] = "Lax"
    config["PERMANENT_SESSION_LIFETIME"] = timedelta(hours=config["SESSION_LIFETIME_HOURS"])
    config["RATELIMIT_HEADERS_ENABLED"] = True
    if config["PROXY_HOPS"]:
        hops = config["PROXY_HOPS"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore[method-assign]


def _instance_secret_key(instance: Path) -> str:
    """A random key kept in the instance folder, for single-host setups without SECRET_KEY."""
    path = instance / "secret_key"
    if not path.exists():
        try:
            with path.open("x") as out:  # "x": two workers starting at once keep one key
                path.chmod(0o600)
                out.write(secrets.token_hex(32))
        except FileExistsError:
            pass
        logging.getLogger(__name__).warning(
            "SECRET_KEY is not set: using %s (set SECRET_KEY when running several hosts)", path)
    return path.read_text().strip()


def _init_extensions(app: Flask) -> None:
    """Bind the database, migrations, CSRF, rate limits, security headers and error pages."""
    # Imported here, not at the top, so that `situatedqa_server.client` (the participants'
    # command) and `settings` load without the app's modules; no cycle hides behind this
    # (tests/server/test_import_graph.py counts these imports too).
    from . import errors, inputs, tasks
    from .extensions import configure_engine, csrf, db, init_migrations, limiter

    db.init_app(app)
    with app.app_context():
        for engine in db.engines.values():
            configure_engine(engine)
    init_migrations(app, str(Path(__file__).parent / "migrations"))
    # The input check first: the CSRF check reads every form field name (a multipart part
    # without a name is a TypeError there), and a refused request spends no rate limit.
    inputs.init_app(app)
    csrf.init_app(app)
    limiter.init_app(app)
    errors.init_app(app)
    tasks.celery_init_app(app)


def _register_blueprints(app: Flask) -> None:
    """Attach every surface of the server and the organizer commands."""
    from . import (
        admin,
        api,
        auth,
        campaigns,
        cli,
        data,
        disputes,
        leaderboards,
        metrics,
        submissions,
        versions,
    )
    from .converters import IdConverter
    from .extensions import csrf

    # Before any route: ids too large for the database are 404s, not driver errors.
    app.url_map.converters["int"] = IdConverter
    app.register_blueprint(auth.bp)
    app.register_blueprint(submissions.bp)
    app.register_blueprint(leaderboards.bp)
    app.register_blueprint(data.bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(versions.bp)
    app.register_blueprint(campaigns.bp)
    app.register_blueprint(disputes.bp)
    # The API authenticates with bearer tokens, never cookies, so it needs no CSRF token.
    csrf.exempt(api.bp)
    app.register_blueprint(api.bp)
    _register_insight(app)
    cli.init_app(app)
    app.add_url_rule("/", endpoint="index", view_func=leaderboards.index)


def _register_insight(app: Flask) -> None:
    """Plots, rank groups, comparisons, exports, snapshots and the API description."""
    from . import insight, openapi, snapshots

    app.register_blueprint(insight.bp)
    app.register_blueprint(snapshots.bp)
    app.register_blueprint(openapi.bp)
