"""A canary planted as a test answer never appears in a plot, comparison, analysis or export."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from benchmark import GoldSet
from tests.server.test_hidden_gold import CANARY, canary_gold  # noqa: F401  (fixture)

from .conftest import (
    PASSWORD,
    api_upload,
    csrf_token,
    login,
    make_app,
    new_token,
    prediction_file,
    register,
)


def test_canary_never_leaves_through_insight(database: dict[str, Any], canary_gold: Path,  # noqa: F811
                                             tmp_path: Path, release_gold: GoldSet,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    app = make_app(database, canary_gold, tmp_path)
    client = app.test_client()
    app.test_cli_runner().invoke(args=["users", "create", "root", "--email", "r@example.org",
                                       "--password", PASSWORD, "--admin"])
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("temp", "test")
    right = prediction_file(gold)  # right per the release: the canary example counts wrong
    guess = right.replace(json.dumps(gold.examples[0].answers[0]).encode(),
                          json.dumps("a guess").encode(), 1)
    ids = [api_upload(client, token, gold, data, public="true", method_name=name).json["id"]
           for name, data in (("right", right), ("guess", guess))]
    dev = release_gold.get("temp", "dev")
    dev_id = api_upload(client, token, dev, prediction_file(dev, 100), public="true").json["id"]

    root = app.test_client()
    login(root, "root")
    frozen = root.post("/snapshots/", data={
        "csrf_token": csrf_token(root, "/snapshots/"), "track": "temp", "split": "test",
        "title": "Canary check"}).headers["Location"]

    urls = ["/leaderboards/temp?split=test", "/insight/compare",
            f"/insight/compare?a={ids[0]}&b={ids[1]}", f"/insight/compare?a={ids[1]}&b={ids[0]}",
            f"/insight/compare?a={ids[0]}&b={dev_id}",
            "/insight/leaderboards/temp.json?split=test",
            "/insight/leaderboards/temp.csv?split=test",
            "/snapshots/", frozen, frozen + ".json", frozen + ".csv", frozen + ".bib",
            "/api/v1/openapi.json", "/docs/api", "/api/v1/leaderboards/temp?split=test&per_page=x"]
    for kind in ("top", "sota"):
        urls += [f"/insight/leaderboards/temp/plots/{kind}.{fmt}?split=test"
                 for fmt in ("png", "svg")]
    for sid in ids:
        urls += [f"/submissions/{sid}", f"/insight/submissions/{sid}/diagnostics",
                 f"/insight/submissions/{sid}/diagnostics?only=any_not_one",
                 f"/insight/submissions/{sid}/pwc.json",
                 f"/insight/submissions/{sid}/model-index.yaml"]
        urls += [f"/insight/submissions/{sid}/plots/{kind}.{fmt}"
                 for kind in ("scores", "years", "groups") for fmt in ("png", "svg")]
    bodies = []
    for browser in (client, root, app.test_client()):
        for url in urls:
            response = browser.get(url)
            assert response.status_code < 500, url
            bodies.append(url.encode() + bytes(str(response.headers), "utf-8") + response.data)
    assert len(bodies) > 90
    for body in bodies:
        assert CANARY.encode() not in body, body[:200]
    assert CANARY not in caplog.text
