"""Migrations run inside the app's process (the quick start, the tests): they must leave the
loggers made before them working (alembic's fileConfig disables them by default)."""

from __future__ import annotations

import logging

from flask import Flask


def test_loggers_made_before_the_migrations_still_log(app: Flask) -> None:
    # The app fixture has run every migration in this process; baselines.bart's logger,
    # made at import, is one such logger.
    import baselines.bart  # noqa: F401

    for name in ("baselines.bart", "situatedqa_server.services.evaluation"):
        assert not logging.getLogger(name).disabled, name
