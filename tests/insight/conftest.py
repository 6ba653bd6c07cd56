"""Fixtures for the insight tests: the server's app/client/runner plus seeded boards."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from flask import Flask

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Score, Submission, User, Visibility, utcnow
from situatedqa_server.services import accounts, blobs, gold_store
from tests.server.conftest import (  # noqa: F401  (pytest finds fixtures by name)
    PASSWORD,
    TEST_CONFIG,
    LiveServer,
    api_upload,
    app,
    client,
    csrf_token,
    database,
    gold_dir,
    login,
    make_app,
    new_token,
    pg_config,
    prediction_file,
    register,
    runner,
    sqlite_template,
)


def add_user(username: str, *, admin: bool = False) -> User:
    """A committed user in a team of its own."""
    user = accounts.create_user(username, f"{username}@example.org", PASSWORD,
                                is_admin=admin)
    db.session.commit()
    return user


def add_scored(user: User, track: str, split: str, outcomes: np.ndarray, *,
               name: str = "method", public: bool = True, primary: str = "em",
               metrics: dict[str, float | None] | None = None,
               minutes_ago: int = 0) -> Submission:
    """A submission with a hand-made score row (outcome codes as stored), committed."""
    now = utcnow() - timedelta(minutes=minutes_ago)
    submission = Submission(
        user_id=user.id, team_id=user.team_id, track=track, split=split,
        file_sha256=blobs.put(b"hand-made score: no file behind it\n"),
        filename="hand.jsonl", format="jsonl", method_name=name, created_at=now,
        visibility=(Visibility.PUBLIC if public else Visibility.PRIVATE).value,
        published_at=now if public else None)
    codes = np.asarray(outcomes, dtype=np.uint8)
    value = 100.0 * float((codes & 1).mean()) if metrics is None else metrics[primary]
    score = Score(submission=submission, gold_version=gold_store.active_version(), track=track,
                  split=split, n=len(codes), primary_metric=value,
                  metrics=metrics or {primary: value}, ci={primary: [value - 1, value + 1]},
                  counts={primary: len(codes)}, outcomes=codes.tobytes(), scored_at=now)
    db.session.add_all([submission, score])
    db.session.commit()
    return submission


@pytest.fixture
def seeded(app: Flask, release_gold: GoldSet) -> dict[str, Any]:  # noqa: F811
    """Two public uploads each on temp/test and temp/dev by alice, and a private one."""
    browser = app.test_client()
    register(browser, "alice")
    token = new_token(browser)
    ids: dict[str, int] = {}
    for split in ("test", "dev"):
        gold = release_gold.get("temp", split)
        for label, correct in (("strong", len(gold) // 2), ("weak", len(gold) // 5)):
            response = api_upload(browser, token, gold, prediction_file(gold, correct),
                                  method_name=f"{label} {split}", public="true")
            assert response.status_code == 201, response.get_data(as_text=True)
            ids[f"{label}-{split}"] = response.json["id"]
    gold = release_gold.get("temp", "test")
    private = api_upload(browser, token, gold, prediction_file(gold, 10), method_name="hidden")
    ids["private"] = private.json["id"]
    return {"client": browser, "token": token, "ids": ids}

