"""Gunicorn settings: `gunicorn -c python:situatedqa_server.gunicorn_conf app:app`.

Each worker reads the canonical gold once when it starts, so no request pays for it.
"""

from __future__ import annotations

import os
from typing import Any

from .settings import declared

bind = declared("SITUATEDQA_BIND").from_env(os.environ)
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = declared("SITUATEDQA_THREADS").from_env(os.environ)
timeout = 120
# Gunicorn answers a request line longer than limit_request_line itself, with an HTML 414.
# Its cap is raised to the most it allows (8190) so that the app, whose own cap is lower
# (inputs.MAX_URL_LENGTH, 4096), answers long URLs with its JSON error shape. Only lines
# beyond 8190 bytes still get gunicorn's page: a limit of 0 (unbounded) would let one
# request line use unbounded memory, which is worse than an HTML error for a broken client.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190


def post_fork(server: Any, worker: Any) -> None:
    """In the new worker, before its threads exist: fewer malloc arenas (memory.py)."""
    from .memory import limit_arenas

    limit_arenas()


def post_worker_init(worker: Any) -> None:
    """Load the gold and its scoring caches before the worker takes requests, freeze them out
    of the garbage collector's walks; trim when idle."""
    from .memory import TrimWhenIdle, freeze_long_lived
    from .services.gold_store import warm_up

    # Freed upload memory goes back to the system when the worker is idle (memory.py).
    worker.wsgi.wsgi_app = TrimWhenIdle(worker.wsgi.wsgi_app)

    with worker.wsgi.app_context():
        missing = warm_up()
    if missing is not None:
        worker.log.warning("gold not loaded at start: %s", missing)
    # What it loaded lives as long as the worker: out of the collector's full walks.
    freeze_long_lived()
