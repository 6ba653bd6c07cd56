"""The app starts, migrates and serves its home page on every backend."""

from __future__ import annotations

from flask.testing import FlaskClient


def test_home_page(client: FlaskClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert b"SituatedQA leaderboards" in response.data
