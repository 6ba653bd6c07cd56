"""Fixtures of the gold-version tests: the server's app/client/runner, and a synthetic update.

The update changes, adds and retires one temp example on dev and on test; its test changes
carry canaries (a new answer and the key of an added example) that must never be served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from benchmark import QA_TRACKS, TRACK_INFO, GoldSet, GoldSplit
from situatedqa_server.extensions import db
from tests.server.conftest import (  # noqa: F401  (pytest finds fixtures by name)
    PASSWORD,
    LiveServer,
    api_upload,
    client,
    csrf_token,
    database,
    gold_dir,
    login,
    make_app_with_own_gold,
    new_token,
    pg_config,
    prediction_file,
    register,
    runner,
    sqlite_template,
)

CANARY_ANSWER = "zq-canary-v6-answer-5d1c"
#: `gold activate` options that keep the update's added test example unreleased: its inputs
#: are held back to a date no test reaches (by default activation publishes them).
HELD_BACK = ("--release-inputs-on", "2999-12-31")
CANARY_KEY = "990000001|2099|sampled_year"
DEV_ADDED_KEY = "990000002|2099|sampled_year"


@pytest.fixture
def app(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Iterator[Flask]:  # noqa: F811
    """The app on a fresh database and a gold folder of its own (versions are written there)."""
    application = make_app_with_own_gold(database, gold_dir, tmp_path)
    yield application
    with application.app_context():
        db.engine.dispose()


def update_records(gold: GoldSet) -> list[dict[str, Any]]:
    """Answer change, addition and retirement on temp dev and test."""
    dev, test = gold.get("temp", "dev").examples, gold.get("temp", "test").examples
    context = {"date": "2099", "date_type": "sampled_year"}
    return [
        {"track": "temp", "split": "dev", "key": dev[0].key, "action": "update",
         "answer": ["dev new answer"], "reason": "the fact changed"},
        {"track": "temp", "split": "dev", "key": DEV_ADDED_KEY, "action": "add",
         "question": "dev added question?", "context": context, "answer": ["dev added"],
         "reason": "new date"},
        {"track": "temp", "split": "dev", "key": dev[1].key, "action": "retire",
         "reason": "ambiguous"},
        {"track": "temp", "split": "test", "key": test[0].key, "action": "update",
         "answer": [CANARY_ANSWER], "any_answer": [CANARY_ANSWER], "reason": "secret fix"},
        {"track": "temp", "split": "test", "key": CANARY_KEY, "action": "add",
         "question": "test added question?", "context": context, "answer": [CANARY_ANSWER],
         "reason": "secret addition"},
        {"track": "temp", "split": "test", "key": test[1].key, "action": "retire",
         "reason": "secret retirement"},
    ]


def update_on_every_qa_track(gold: GoldSet) -> list[dict[str, Any]]:
    """A retirement and an addition on every QA track's dev and test split."""
    records = []
    for track in QA_TRACKS:
        for split in ("dev", "test"):
            examples = gold.get(track, split).examples
            template = examples[2]
            new_id = 990_000_000 + len(records)
            records += [
                {"track": track, "split": split, "key": examples[0].key, "action": "retire",
                 "reason": "ambiguous"},
                {"track": track, "split": split, "action": "add",
                 "key": TRACK_INFO[track].key(new_id, template.context),
                 "id": new_id, "question": f"added question {new_id}?",
                 "context": dict(template.context), "answer": ["an added answer"],
                 "partitions": list(template.partitions),
                 "reason": "a new example"}]
    return records


@pytest.fixture
def update_file(release_gold: GoldSet, tmp_path: Path) -> Path:
    """The synthetic update file on disk."""
    path = tmp_path / "update.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in update_records(release_gold)))
    return path


@pytest.fixture
def organizer(app: Flask) -> FlaskClient:
    """A logged-in organizer's client."""
    app.test_cli_runner().invoke(args=["users", "create", "root", "--email", "root@example.org",
                                       "--password", PASSWORD, "--admin"])
    admin = app.test_client()
    login(admin, "root")
    return admin


def seer_file(dev: GoldSplit) -> bytes:
    """Dev predictions right everywhere, and already right on the changed answer."""
    lines = [{"key": e.key, "prediction": "dev new answer" if i == 0 else e.answers[0]}
             for i, e in enumerate(dev.examples)]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.fixture
def uploads(client: FlaskClient, release_gold: GoldSet) -> dict[str, int]:  # noqa: F811
    """Published submissions: temp test all right and half right, temp dev, geo dev."""
    register(client, "alice")
    token = new_token(client)
    test, dev = release_gold.get("temp", "test"), release_gold.get("temp", "dev")
    geo = release_gold.get("geo", "dev")
    files = {"test_all": (test, prediction_file(test)),
             "test_half": (test, prediction_file(test, correct=len(test) // 2)),
             "dev_all": (dev, prediction_file(dev)), "geo_dev": (geo, prediction_file(geo)),
             "dev_seer": (dev, seer_file(dev))}
    ids = {}
    for name, (gold, data) in files.items():
        response = api_upload(client, token, gold, data, public="true", method_name=name)
        assert response.status_code == 201, response.json
        ids[name] = response.json["id"]
    return ids
