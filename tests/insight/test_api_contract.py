"""The API's description covers every route, and every error path has the one error shape."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from benchmark import TRACKS, GoldSet
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.models import ApiToken, utcnow

from .conftest import TEST_CONFIG, api_upload, make_app, new_token, prediction_file, register


def documented(app: Flask) -> set[tuple[str, str]]:
    """(method, path) of every operation in /api/v1/openapi.json."""
    spec = app.test_client().get("/api/v1/openapi.json").json
    return {(method.upper(), path) for path, item in spec["paths"].items() for method in item}


def test_every_api_route_is_documented(app: Flask) -> None:
    operations = documented(app)
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1"):
            continue
        path = rule.rule.replace("<int:", "{").replace("<", "{").replace(">", "}")
        paths = ([path.replace("{track}", t) for t in TRACKS] if "{track}" in path else [path])
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            for one in paths:
                assert (method, one) in operations, f"{method} {one} is not in the description"


def test_reference_page_is_rendered_without_script(client: FlaskClient) -> None:
    page = client.get("/docs/api")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "<script>" not in html and " style=" not in html
    assert "POST /api/v1/submissions" in html and 'id="schema-Error"' in html
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]


def assert_error_shape(response: Any, status: int, code: str | None = None) -> None:
    """The one shape: {"error": {"code", "message", "details"}} and nothing else."""
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert response.mimetype == "application/json"
    body = response.json
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert isinstance(body["error"]["code"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code


def test_every_error_path_has_one_shape(database: dict[str, Any], gold_dir: Path,
                                        tmp_path: Path, release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=1, MAX_CONTENT_LENGTH=200_000)
    client = app.test_client()
    register(client, "erin")
    token = new_token(client)
    auth = {"Authorization": f"Bearer {token}"}
    dev, test = release_gold.get("geo", "dev"), release_gold.get("geo", "test")
    own = api_upload(client, token, test, prediction_file(test)).json["id"]
    api = app.test_client()  # no session cookie: the API alone

    assert_error_shape(api.get("/api/v1/submissions"), 401, "missing_token")
    assert_error_shape(api.get("/api/v1/submissions", headers={"Authorization": "Bearer x"}),
                       401, "invalid_token")
    assert_error_shape(api.get("/api/v1/quota", headers={"Authorization": "Basic x"}), 401)
    assert_error_shape(api.get("/api/v1/submissions/999", headers=auth), 404, "not_found")
    assert_error_shape(api.get("/api/v1/submissions/99999999999"), 404)
    assert_error_shape(api.get(f"/api/v1/submissions/{own}/examples", headers=auth), 404,
                       "hidden_split")
    assert_error_shape(api.post(f"/api/v1/submissions/{own + 1}/publish", headers=auth), 404)
    assert_error_shape(api.get("/api/v1/nowhere"), 404)
    assert_error_shape(api.put("/api/v1/tracks"), 405)
    assert_error_shape(api.get("/api/v1/leaderboards/nope"), 404, "not_found")
    assert_error_shape(api.get("/api/v1/tracks/nope"), 404, "not_found")
    assert_error_shape(api.get("/api/v1/leaderboards/geo?split=x"), 400, "invalid_query")
    assert_error_shape(api.get("/api/v1/leaderboards/geo?per_page=x"), 400, "invalid_query")
    assert_error_shape(api.get("/api/v1/leaderboards/geo?version=none"), 404)
    assert_error_shape(api.post("/api/v1/submissions", headers=auth, data={"track": "geo"}),
                       400, "invalid_request")
    bad = api_upload(api, token, dev, b'{"key": 1}\n')
    assert_error_shape(bad, 400, "invalid_file")
    assert bad.json["error"]["details"]["problems"]
    big = api_upload(api, token, dev, b"x" * 300_000)
    assert_error_shape(big, 413)
    quota = api_upload(api, token, test, prediction_file(test))
    assert_error_shape(quota, 429, "quota_exceeded")
    assert quota.json["error"]["details"]["resets_at"].endswith("Z")
    assert quota.headers["Retry-After"]
    with app.app_context():
        db.session.execute(update(ApiToken).values(expires_at=utcnow()))
        db.session.commit()
    assert_error_shape(api.get("/api/v1/quota", headers=auth), 401, "token_expired")
    assert_error_shape(api.post("/api/v1/submissions", headers=auth, data={
        "file": (io.BytesIO(b""), "x")}, content_type="multipart/form-data"), 401)


def test_missing_gold_is_503_in_the_shape(database: dict[str, Any], gold_dir: Path,
                                          tmp_path: Path) -> None:
    app = create_app({**TEST_CONFIG, **database})  # no gold imported into this database
    assert_error_shape(app.test_client().get("/api/v1/leaderboards/temp-id"), 503,
                       "gold_unavailable")
