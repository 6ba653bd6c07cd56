"""Uploads: rejected files change nothing, size caps give 413, quotas hold, also in parallel."""

from __future__ import annotations

import gzip
import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from sqlalchemy import func, select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import (
    GoldVersion,
    QuotaCounter,
    RejectedUpload,
    Score,
    StoredFile,
    Submission,
)
from situatedqa_server.services import blobs

from .conftest import (
    LiveServer,
    api_upload,
    csrf_token,
    make_app,
    new_token,
    prediction_file,
    register,
)


def _counts(app: Flask) -> tuple[int, int, int]:
    with app.app_context():
        return (db.session.scalar(select(func.count()).select_from(Submission)) or 0,
                db.session.scalar(select(func.count()).select_from(Score)) or 0,
                db.session.scalar(select(func.coalesce(func.sum(QuotaCounter.used), 0))) or 0)


def _stored_files(app: Flask) -> list[bytes]:
    """The bytes of every stored upload (stored files other than gold versions)."""
    with app.app_context():
        gold = select(GoldVersion.gold_sha256)
        shas = db.session.scalars(select(StoredFile.sha256).where(
            StoredFile.sha256.not_in(gold))).all()
        return [blobs.get(sha) for sha in shas]


def test_rejected_file_stores_nothing_and_spends_no_quota(app: Flask,
                                                          release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    incomplete = b"".join(prediction_file(gold).splitlines(keepends=True)[:-3])
    response = api_upload(client, token, gold, incomplete)
    assert response.status_code == 400
    problems = response.json["error"]["details"]["problems"]
    assert "have no prediction" in problems[0]["message"]
    assert _counts(app) == (0, 0, 0)
    assert _stored_files(app) == []
    with app.app_context():
        assert db.session.scalar(select(RejectedUpload.count)) == 1


def test_size_caps_give_413(database: dict[str, Any], gold_dir: Path, tmp_path: Path,
                            release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, MAX_CONTENT_LENGTH=200_000,
                   MAX_DECOMPRESSED_BYTES=100_000)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    bomb = gzip.compress(b" " * 50_000_000)  # 50 MB of spaces in ~50 kB
    assert len(bomb) < 200_000
    response = api_upload(client, token, gold, bomb)
    assert response.status_code == 413
    assert "decompressed content is larger than 100000 bytes" in response.json["error"]["message"]
    response = api_upload(client, token, gold, b"x" * 300_000)
    assert response.status_code == 413
    assert "200000 bytes" in response.json["error"]["message"]
    form = {"csrf_token": csrf_token(client, "/submissions/new"), "track": "geo",
            "split": "dev", "method_name": "m", "file": (io.BytesIO(bomb), "bomb.gz")}
    page = client.post("/submissions/new", data=form, content_type="multipart/form-data")
    assert page.status_code == 413 and b"decompressed content is larger" in page.data
    assert _counts(app) == (0, 0, 0) and _stored_files(app) == []


def test_gzip_upload_is_accepted_and_stored_once(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    data = prediction_file(gold, compress=True)
    first = api_upload(client, token, gold, data)
    # The same file from another team is accepted (and flagged); from alice again, a 409.
    bob = app.test_client()
    register(bob, "bob")
    second = api_upload(bob, new_token(bob), gold, data)
    assert first.status_code == second.status_code == 201
    assert first.json["metrics"]["em"] == 100.0
    assert _stored_files(app) == [data]


def test_daily_and_total_quota(database: dict[str, Any], gold_dir: Path, tmp_path: Path,
                               release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=2, TEST_TOTAL_QUOTA=3)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    # Other predictions each time: the same ones twice would be a 409.
    statuses = [api_upload(client, token, gold, prediction_file(gold, n)).status_code
                for n in range(2)]
    assert statuses == [201, 201]
    refused = api_upload(client, token, gold)
    assert refused.status_code == 429
    details = refused.json["error"]["details"]
    assert details["used_today"] == 2 and details["resets_at"].endswith("T00:00:00Z")
    # Deleting gives no quota back; dev uploads and other tracks have their own quota.
    first = client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
    sid = first.json["submissions"][0]["id"]
    assert client.delete(f"/api/v1/submissions/{sid}",
                         headers={"Authorization": f"Bearer {token}"}).status_code == 204
    assert api_upload(client, token, gold).status_code == 429
    assert api_upload(client, token, release_gold.get("geo", "dev")).status_code == 201
    other = release_gold.get("present", "test")
    assert api_upload(client, token, other).status_code == 201
    # Total: a new UTC day would allow 2 more, but the total allows only 1.
    with app.app_context():
        for counter in db.session.scalars(select(QuotaCounter).where(
                QuotaCounter.track == "geo", QuotaCounter.period != "total")):
            counter.period = "2000-01-01"
        db.session.commit()
    assert api_upload(client, token, gold).status_code == 201
    refused = api_upload(client, token, gold)
    assert refused.status_code == 429 and refused.json["error"]["details"]["resets_at"] is None


def test_rejected_uploads_have_their_own_cap(database: dict[str, Any], gold_dir: Path,
                                             tmp_path: Path, release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, REJECTED_DAILY_CAP=2, TEST_DAILY_QUOTA=1)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    statuses = [api_upload(client, token, gold, b"junk\n").status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
    assert _counts(app) == (0, 0, 0)


@pytest.mark.slow
def test_parallel_uploads_never_exceed_the_quota(database: dict[str, Any], gold_dir: Path,
                                                 tmp_path: Path, release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=7, TEST_TOTAL_QUOTA=100,
                   BOOTSTRAP_RESAMPLES=0)
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "test")
    for n in range(2):  # 5 of the 7 left
        assert api_upload(client, token, gold, prediction_file(gold, 100 + n)).status_code == 201
    # Other predictions in every upload (one team's same predictions twice are a 409).
    files = [prediction_file(gold, n) for n in range(50)]

    with LiveServer(app) as server:
        def upload(number: int) -> int:
            response = requests.post(
                f"{server.url}/api/v1/submissions",
                headers={"Authorization": f"Bearer {token}"},
                data={"track": "geo", "split": "test", "method_name": f"parallel {number}"},
                files={"file": ("p.jsonl", files[number])}, timeout=120)
            return response.status_code

        with ThreadPoolExecutor(max_workers=50) as pool:
            statuses = list(pool.map(upload, range(50)))
    assert statuses.count(201) == 5, statuses
    assert statuses.count(429) == 45, statuses
    assert _counts(app) == (7, 7, 14)  # 7 on the day counter and 7 on the total
