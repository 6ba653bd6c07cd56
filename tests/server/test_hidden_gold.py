"""A canary planted in a test answer appears in no route, export, error or log line."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from benchmark import Example, GoldSet, GoldSplit

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

CANARY = "zq-canary-7f3e9b1c-answer"


@pytest.fixture(scope="module")
def canary_gold(release_gold: GoldSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release gold with one temp test answer replaced by the canary, saved canonically."""
    splits = []
    for (track, split), gold in release_gold.splits.items():
        examples = list(gold.examples)
        if (track, split) == ("temp", "test"):
            first = examples[0]
            examples[0] = Example(first.key, first.id, first.question, first.context,
                                  (CANARY,), (CANARY, *first.any_answers), first.partitions,
                                  first.label, first.source)
        splits.append(GoldSplit(track, split, examples))
    directory = tmp_path_factory.mktemp("canary-gold")
    GoldSet(splits, release_gold.meta).save(directory)
    return directory


def _crawl(client: FlaskClient, urls: list[str], headers: dict[str, str]) -> list[str]:
    """GET every URL (and the links of every page, one level deep); return the bodies."""
    bodies, seen = [], set()
    queue = [(url, 0) for url in urls]
    while queue:
        url, depth = queue.pop(0)
        url = url.replace("&amp;", "&")
        if url in seen or not url.startswith("/") or url.startswith("/static/"):
            continue
        seen.add(url)
        response = client.get(url, headers=headers)
        text = response.get_data().decode("utf-8", "replace")  # plots are binary
        bodies.append(f"{url} {response.status_code} {response.headers} {text}")
        if response.mimetype == "text/html" and depth == 0:
            queue += [(link.split('"')[0], 1) for link in text.split('href="')[1:]]
    return bodies


def test_canary_never_leaves_the_server(database: dict[str, Any], canary_gold: Path,
                                        tmp_path: Path, release_gold: GoldSet,
                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    app: Flask = make_app(database, canary_gold, tmp_path, REJECTED_DAILY_CAP=1000)
    client = app.test_client()
    runner = app.test_cli_runner()
    runner.invoke(args=["users", "create", "root", "--email", "r@example.org",
                        "--password", PASSWORD, "--admin"])
    register(client, "alice")
    token = new_token(client)
    auth = {"Authorization": f"Bearer {token}"}
    gold = release_gold.get("temp", "test")
    bodies: list[str] = []

    # Right answers everywhere (so the canary example is wrong), the canary itself as a
    # prediction, a file missing the canary example, and a malformed one.
    right = api_upload(client, token, gold, prediction_file(gold), public="true")
    canary_guess = prediction_file(gold).replace(
        json.dumps(gold.examples[0].answers[0]).encode(), json.dumps("a guess").encode(), 1)
    guess = api_upload(client, token, gold, canary_guess, public="true")
    missing = b"".join(prediction_file(gold).splitlines(keepends=True)[1:])
    wrong_keys = prediction_file(release_gold.get("temp", "dev"))
    for response in (right, guess, api_upload(client, token, gold, missing),
                     api_upload(client, token, gold, wrong_keys),
                     api_upload(client, token, gold, b'{"key": 1}\n'),
                     api_upload(client, token, gold, prediction_file(gold, compress=True)[:50])):
        bodies.append(response.get_data(as_text=True))
    form = {"csrf_token": csrf_token(client, "/submissions/new"), "track": "temp",
            "split": "test", "method_name": "m",
            "file": (io.BytesIO(missing), "missing.jsonl")}
    bodies.append(client.post("/submissions/new", data=form,
                              content_type="multipart/form-data").get_data(as_text=True))
    ids = [right.json["id"], guess.json["id"]]
    assert right.json["metrics"]["em"] < 100.0  # the canary example counts as wrong

    urls = ["/", "/api/v1/tracks", "/api/v1/submissions", "/api/v1/quota",
            "/leaderboards/temp?split=test", "/leaderboards/temp.csv?split=test",
            "/api/v1/leaderboards/temp?split=test", "/data/temp/test/blank.jsonl",
            "/data/temp/test/gold.jsonl", "/data/temp/dev/gold.jsonl",
            "/leaderboards/temp?split=test&sort=em_static&order=asc",
            "/leaderboards/temp.csv?split=test&per_page=1000"]
    for sid in ids:
        urls += [f"/submissions/{sid}", f"/submissions/{sid}/examples",
                 f"/api/v1/submissions/{sid}", f"/api/v1/submissions/{sid}/examples"]
    bodies += _crawl(client, urls, auth)
    admin = app.test_client()
    login(admin, "root")
    bodies += _crawl(admin, ["/admin/submissions", "/admin/audit", *urls], {})
    result = runner.invoke(args=["submissions", "list"])
    bodies.append(result.output)
    result = runner.invoke(args=["submissions", "rescore"])
    bodies.append(result.output)

    assert len(bodies) > 40
    for body in bodies:
        assert CANARY not in body, body[:300]
    assert CANARY not in caplog.text
