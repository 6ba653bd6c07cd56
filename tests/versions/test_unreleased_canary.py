"""A canary planted in unreleased test gold (a changed answer, an added example) never
leaves the server, even where the provenance figures computed on it are shown: the boards
with those columns picked, the CSV, the exports, a snapshot of the board, the submission's
pages and API, the blank files, a rejected upload's errors, the CLI and the logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from benchmark import GoldSet
from situatedqa_server import client as situatedqa_cli
from situatedqa_server.extensions import db
from situatedqa_server.models import User
from situatedqa_server.services import snapshots

from .conftest import CANARY_ANSWER, CANARY_KEY, HELD_BACK, api_upload, new_token, register
from .test_versions_canary import crawl

#: Only the update file's test records hold these (the reasons are private too).
SECRETS = (CANARY_ANSWER, CANARY_KEY, "990000001", "secret fix", "secret addition",
           "test added question")
SHOW = "show=unreleased&show=released&show=contamination_gap"


def test_unreleased_answers_never_leave_with_their_figures(
        app: Flask, client: FlaskClient, organizer: FlaskClient, runner: FlaskCliRunner,
        update_file: Path, release_gold: GoldSet, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    outputs = [runner.invoke(args=["gold", "build", "--from-update", str(update_file),
                                   "--name", "2023-06", "--as-of", "2023-06-01"]).output,
               runner.invoke(args=["gold", "activate", "2023-06", *HELD_BACK]).output]
    register(client, "carol")
    token = new_token(client)
    test = release_gold.get("temp", "test")
    lines = [{"key": e.key, "prediction": e.answers[0]} for e in test.examples]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    created = api_upload(client, token, test, data, public="true", method_name="canary run")
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    # The figures are there, on the changed canary (the added one is held back: unknown).
    assert body["counts"]["unreleased"] == 1
    sid = body["id"]
    outputs.append(created.get_data(as_text=True))
    # A rejected upload that names the added key is told no more than for any unknown key
    # (the message repeats the key it was sent, nothing else).
    guesses = [api_upload(client, token, test, data + json.dumps(
        {"key": key, "prediction": "guess"}).encode() + b"\n").get_data(as_text=True)
        for key in (CANARY_KEY, "1|2|3")]
    assert '"invalid_file"' in guesses[0]
    assert guesses[0].replace(CANARY_KEY, "1|2|3") == guesses[1]
    with app.app_context():
        root = db.session.scalar(select(User).where(User.username == "root"))
        assert root is not None
        slug = snapshots.freeze("temp", "test", "with the figures", "", root).slug
    auth = {"Authorization": f"Bearer {token}"}
    urls = ["/", f"/leaderboards/temp?split=test&{SHOW}",
            f"/leaderboards/temp?split=test&{SHOW}&sort=unreleased",
            f"/leaderboards/temp.csv?split=test&{SHOW}",
            "/api/v1/leaderboards/temp?split=test&sort=contamination_gap",
            "/insight/leaderboards/temp.json?split=test", "/metrics/temp",
            f"/submissions/{sid}", f"/api/v1/submissions/{sid}",
            f"/api/v1/submissions/{sid}/examples", f"/submissions/{sid}/examples",
            f"/insight/submissions/{sid}/pwc.json",
            f"/insight/submissions/{sid}/model-index.yaml",
            f"/snapshots/{slug}", f"/snapshots/{slug}.json", f"/snapshots/{slug}.csv",
            f"/snapshots/{slug}.bib", "/data/temp/test/blank.jsonl", "/data/releases",
            "/data/releases.json", "/data/releases.atom",
            "/data/temp/test/gold.jsonl", "/api/v1/submissions"]
    crawled = crawl(client, urls, auth)
    for url in urls:  # every page was served (test per-example pages and gold are refused)
        status = 200 if "examples" not in url and "gold" not in url else None
        assert any(c.startswith(f"{url} {status or ''}") for c in crawled), url
        if status is None:
            assert not any(c.startswith(f"{url} 200 ") for c in crawled), url
    outputs += crawled
    outputs += crawl(organizer, urls, {})
    api = client.get(f"/api/v1/submissions/{sid}", headers=auth).get_json()
    assert api["metrics"]["unreleased"] is not None
    situatedqa_cli.print_scores(api)
    outputs.append(capsys.readouterr().out)
    assert any("contamination_gap" in o for o in outputs)
    assert len(outputs) > 30
    for text in outputs:
        for secret in SECRETS:
            assert secret not in text, (secret, text[:300])
    for secret in SECRETS:
        assert secret not in caplog.text
