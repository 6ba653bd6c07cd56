"""Gunicorn settings: `gunicorn -c python:situatedqa_server.gunicorn_conf app:app`.

Each worker reads the canonical gold once when it starts, so no request pays for it.
"""

from __future__ import annotations

import os
from typing import Any

bind = os.environ.get("SITUATEDQA_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("SITUATEDQA_THREADS", "4"))
timeout = 120


def post_worker_init(worker: Any) -> None:
    """Load the gold and its scoring caches before the worker takes requests."""
    from .services.gold_store import GoldUnavailable, warm_up

    try:
        with worker.wsgi.app_context():
            warm_up()
    except GoldUnavailable as exc:
        worker.log.warning("gold not loaded at start: %s", exc)
