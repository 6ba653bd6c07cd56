"""Counts read as English: one entry, two entries."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet

from .conftest import api_upload, new_token, register


def test_the_counted_filter(app: Flask) -> None:
    counted = app.jinja_env.filters["counted"]
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(0, "entry", "entries") == "0 entries"
    assert counted(2000, "entry", "entries") == "2000 entries"


def test_a_board_of_one_entry_says_one_entry(client: FlaskClient,
                                             release_gold: GoldSet) -> None:
    register(client, "solo")
    gold = release_gold.get("temp", "dev")
    response = api_upload(client, new_token(client), gold, public="true", method_name="solo")
    assert response.status_code == 201, response.get_json()
    page = client.get("/leaderboards/temp?split=dev").get_data(as_text=True)
    assert "1 entry ·" in page and "1 entries" not in page
