"""Planted test-gold changes (a canary answer, a canary key) never leave the server."""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Job, JobStatus

from .conftest import (
    CANARY_ANSWER,
    CANARY_KEY,
    DEV_ADDED_KEY,
    HELD_BACK,
    api_upload,
    csrf_token,
    new_token,
    prediction_file,
)

#: Strings only the update file's test records contain (the reasons are private too).
SECRETS = (CANARY_ANSWER, CANARY_KEY, "990000001", "secret fix", "secret addition",
           "secret retirement", "test added question")


def crawl(client: FlaskClient, urls: list[str], headers: dict[str, str]) -> list[str]:
    """GET every URL and, one level deep, every link of the HTML pages; return the bodies."""
    bodies, seen, queue = [], set(), [(url, 0) for url in urls]
    while queue:
        url, depth = queue.pop(0)
        url = url.replace("&amp;", "&")
        if url in seen or not url.startswith("/") or url.startswith("/static/"):
            continue
        seen.add(url)
        response = client.get(url, headers=headers)
        text = response.get_data().decode("utf-8", "replace")  # some links are images
        bodies.append(f"{url} {response.status_code} {response.headers} {text}")
        if response.mimetype == "text/html" and depth == 0:
            queue += [(link.split('"')[0], 1) for link in text.split('href="')[1:]]
    return bodies


def test_test_changes_never_leak(app: Flask, client: FlaskClient, organizer: FlaskClient,
                                 runner: FlaskCliRunner, update_file: Path,
                                 uploads: dict[str, int], release_gold: GoldSet,
                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    outputs = [runner.invoke(args=["gold", "build", "--from-update", str(update_file),
                                   "--name", "2023-06", "--as-of", "2023-06-01"]).output]
    outputs.append(runner.invoke(args=["gold", "activate", "2023-06", *HELD_BACK]).output)
    outputs += [runner.invoke(args=["gold", "versions"]).output,
                runner.invoke(args=["gold", "diff", "2021-02, as released", "2023-06"]).output,
                runner.invoke(args=["gold", "diff", "2023-06", "2021-02, as released"]).output]
    assert DEV_ADDED_KEY in outputs[0]  # dev changes are public

    # Uploads after the switch: right, missing the retired example, keyed by the canary.
    token = new_token(client)
    test = release_gold.get("temp", "test")
    full = prediction_file(test)
    missing = b"".join(full.splitlines(keepends=True)[2:])
    for data in (full, missing):
        outputs.append(api_upload(client, token, test, data).get_data(as_text=True))
    # A participant who guesses the added key learns nothing: it is as unknown as any key.
    guesses = [api_upload(client, token, test, full + f'{{"key": "{key}", "prediction": "x"}}\n'
                          .encode()).get_data(as_text=True) for key in (CANARY_KEY, "1|2|3")]
    assert guesses[0].replace(CANARY_KEY, "1|2|3") == guesses[1]
    auth = {"Authorization": f"Bearer {token}"}
    urls = ["/", "/versions/", "/versions/2", "/versions/2/changelog.json",
            "/versions/ranks/temp?split=test", "/versions/drift/temp?split=test",
            "/versions/drift/temp.svg?split=test", "/leaderboards/temp?split=test",
            "/leaderboards/temp?split=test&version=2021-02, as released",
            "/leaderboards/temp.csv?split=test&version=2023-06",
            "/api/v1/leaderboards/temp?split=test&version=2023-06",
            "/data/temp/test/blank.jsonl", "/data/temp/test/gold.jsonl",
            "/data/releases", "/data/releases.json", "/data/releases.atom",
            "/api/v1/submissions"]
    for sid in uploads.values():
        urls += [f"/submissions/{sid}", f"/api/v1/submissions/{sid}"]
    # A dispute of the changed and of the retired test example: their pages, the reply
    # and "My disputes" never show the hidden gold (or that the example was retired).
    for example in test.examples[:2]:
        reply = client.post("/api/v1/disputes", headers=auth, data={
            "track": "temp", "split": "test", "key": example.key, "answers": "my guess",
            "evidence": "https://example.org/source"})
        assert reply.status_code == 201, reply.get_json()
        outputs.append(reply.get_data(as_text=True))
        urls.append(f"/data/temp/test/examples/{quote(example.key)}")
    urls += ["/disputes/", "/api/v1/disputes"]
    outputs += crawl(client, urls, auth)
    outputs += crawl(organizer, ["/admin/versions", "/admin/audit",
                                 "/admin/versions/diff?a=2021-02, as released&b=2023-06",
                                 *urls], {})
    assert len(outputs) > 40
    for body in outputs:
        for secret in SECRETS:
            assert secret not in body, (secret, body[:300])
    for secret in SECRETS:
        assert secret not in caplog.text


def test_admin_pages_build_and_activate_in_background(app: Flask, client: FlaskClient,
                                                      organizer: FlaskClient,
                                                      update_file: Path,
                                                      uploads: dict[str, int]) -> None:
    assert client.get("/admin/versions").status_code == 404  # participants: no such page
    form = {"csrf_token": csrf_token(organizer, "/admin/versions"), "name": "2023-06",
            "as_of": "2023-06-01", "note": "errata"}
    bad = organizer.post("/admin/versions", content_type="multipart/form-data", data={
        **form, "update": (update_file.open("rb"), "u.jsonl"), "as_of": "soon"})
    assert bad.status_code == 400
    broken = organizer.post("/admin/versions", content_type="multipart/form-data", data={
        **form, "update": (io.BytesIO(b"{oops\n"), "u.jsonl")})
    assert broken.status_code == 400 and b"u.jsonl:1: malformed JSON" in broken.data
    built = organizer.post("/admin/versions", content_type="multipart/form-data",
                           data={**form, "update": (update_file.open("rb"), "u.jsonl")})
    assert built.status_code == 302
    token = csrf_token(organizer, "/admin/versions")
    started = organizer.post("/admin/versions/2/activate", data={"csrf_token": token})
    assert started.status_code == 302
    with app.app_context():
        for _ in range(200):
            job = db.session.query(Job).one()
            if job.status in (JobStatus.DONE.value, JobStatus.FAILED.value):
                break
            db.session.rollback()
            time.sleep(0.1)
        assert job.status == JobStatus.DONE.value and job.done == job.total == len(uploads)
    page = organizer.get("/admin/versions").get_data(as_text=True)
    assert "done" in page and f'value="{len(uploads)}"' in page
    assert client.get("/api/v1/leaderboards/temp?split=dev").json["gold_version"] == "2023-06"
    audit = organizer.get("/admin/audit").get_data(as_text=True)
    assert "gold_build" in audit and "gold_activated" in audit and "root" in audit
