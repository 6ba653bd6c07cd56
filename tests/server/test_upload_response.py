"""The upload's 201 body is built before the commit: it must equal the stored submission."""

from __future__ import annotations

import io

import pytest
from flask import Flask

from benchmark import TRACK_INFO, GoldSet

from .conftest import new_token, prediction_file, register


@pytest.mark.parametrize(("split", "public", "key"), [("test", "true", None),
                                                      ("dev", "false", "key-1")])
def test_the_201_body_equals_what_is_stored(app: Flask, release_gold: GoldSet, split: str,
                                            public: str, key: str | None) -> None:
    client = app.test_client()
    register(client, "alice")
    headers = {"Authorization": f"Bearer {new_token(client)}"}
    gold = release_gold.get("geo", split)
    response = client.post(
        "/api/v1/submissions", headers={**headers, **({"Idempotency-Key": key} if key else {})},
        content_type="multipart/form-data",
        data={"track": "geo", "split": split, "method_name": "m", "public": public,
              "file": (io.BytesIO(prediction_file(gold, 40)), "p.jsonl")})
    assert response.status_code == 201, response.get_data(as_text=True)
    body = response.json or {}
    stored = client.get(f"/api/v1/submissions/{body['id']}", headers=headers).json or {}
    # The error figures' CIs are completed after the response (not in the paper): the body
    # has the figures with null CIs, the stored row has them all.
    for name in TRACK_INFO["geo"].error_metrics:
        assert body["ci"][name] is None and body["metrics"][name] == stored["metrics"][name]
        stored["ci"][name] = None
    assert body == stored
    assert body["team"] and body["metrics"]
    assert body["visibility"] == ("public" if public == "true" else "private")
