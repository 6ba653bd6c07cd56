"""A rate-limit storage that cannot be reached: uploads go on, password routes answer 503.

In process, with a Redis URL where nothing listens; tests/scaleout/test_redis_outage.py
kills a real Redis under a real gunicorn while clients upload.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission, User
from situatedqa_server.ratelimits import failures_of
from situatedqa_server.services import accounts

from .conftest import (
    PASSWORD,
    api_upload,
    csrf_token,
    make_app,
    new_token,
    prediction_file,
    register,
)


def _dead_redis() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"  # closed again: connections are refused


@pytest.fixture
def pair(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Any:
    """A working app (memory storage) to register on, and the same database behind an app
    whose limiter storage is down."""
    working = make_app(database, gold_dir, tmp_path)
    browser = working.test_client()
    register(browser, "alice")
    token = new_token(browser)
    broken = make_app(database, gold_dir, tmp_path / "broken",
                      RATELIMIT_STORAGE_URI=_dead_redis())
    yield broken, token
    for app in (working, broken):
        with app.app_context():
            db.engine.dispose()


def test_uploads_are_scored_and_answered_201(pair: Any, release_gold: GoldSet) -> None:
    app, token = pair
    client = app.test_client()
    gold = release_gold.get("geo", "test")
    response = api_upload(client, token, gold, prediction_file(gold, 10))
    assert response.status_code == 201, response.get_data(as_text=True)
    # The limit could not be read: no X-RateLimit-* header, rather than an error.
    assert "X-RateLimit-Remaining" not in response.headers
    with app.app_context():
        assert db.session.get(Submission, response.json["id"]) is not None
    assert failures_of(app).counts["check"] >= 1


@pytest.mark.parametrize("route", ["/auth/login", "/auth/register"])
def test_password_routes_fail_closed_with_503(pair: Any, route: str) -> None:
    app, _token = pair
    client = app.test_client()
    response = client.post(route, data={
        "csrf_token": csrf_token(client, route), "username": "alice", "password": PASSWORD,
        "email": "a2@example.org"})
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "30"
    assert "cannot check its limit" in response.get_data(as_text=True)
    # The page itself (GET) is not limited, so it still shows.
    assert client.get(route).status_code == 200


def test_headers_when_the_storage_works(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "bob")
    gold = release_gold.get("geo", "test")
    response = api_upload(client, new_token(client), gold, prediction_file(gold, 10))
    assert response.status_code == 201
    assert response.headers["X-RateLimit-Limit"] == "10000"
    assert int(response.headers["X-RateLimit-Remaining"]) == 9999
    assert failures_of(app).counts == {"check": 0, "headers": 0}


def test_organizers_see_the_failures(pair: Any, release_gold: GoldSet) -> None:
    app, token = pair
    client = app.test_client()
    gold = release_gold.get("geo", "test")
    assert api_upload(client, token, gold, prediction_file(gold, 11)).status_code == 201
    with app.app_context():
        accounts.create_user("root", "root@example.org", PASSWORD, is_admin=True)
        db.session.commit()
    # Logging in needs the limit (closed): the organizer's session is made directly.
    with client.session_transaction() as session, app.app_context():
        root = db.session.scalars(select(User).where(User.username == "root")).one()
        session["user_id"] = root.id
        session["generation"] = root.session_generation
    page = client.get("/admin/jobs").get_data(as_text=True)
    assert 'id="ratelimit-failures"' in page
