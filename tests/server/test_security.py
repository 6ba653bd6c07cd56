"""Access control between accounts, CSRF, tokens, headers, cookies, rate limits, error shape."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import ApiToken, AuditLog, Submission, User, utcnow

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


def _setup_two_accounts(app: Flask, release_gold: GoldSet) -> tuple[FlaskClient, str, int, int]:
    """Alice owns a private and a public submission; Bob is logged in and has a token."""
    alice, bob = app.test_client(), app.test_client()
    register(alice, "alice")
    alice_token = new_token(alice)
    gold = release_gold.get("geo", "dev")
    private_id = api_upload(alice, alice_token, gold).json["id"]
    public_id = api_upload(alice, alice_token, gold, prediction_file(gold, 10),
                           public="true").json["id"]
    register(bob, "bob")
    return bob, new_token(bob), private_id, public_id


def _id_routes(app: Flask) -> list[tuple[str, str]]:
    """(method, rule) for every route that takes the id of something an account owns."""
    routes = []
    for rule in app.url_map.iter_rules():
        if not rule.arguments & {"submission_id", "token_id"} or not rule.arguments <= {
                "submission_id", "token_id", "action"}:
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append((method, rule.rule))
    return routes


def test_other_account_cannot_use_any_id_route(app: Flask, release_gold: GoldSet) -> None:
    bob, bob_token, private_id, public_id = _setup_two_accounts(app, release_gold)
    with app.app_context():
        alice_token_id = db.session.scalar(select(ApiToken.id).join(User).where(
            User.username == "alice"))
    routes = _id_routes(app)
    assert len(routes) >= 10
    token = csrf_token(bob, "/auth/account")
    for method, rule in routes:
        for submission_id in (private_id, public_id):
            url = (rule.replace("<int:submission_id>", str(submission_id))
                   .replace("<int:token_id>", str(alice_token_id))
                   .replace("<action>", "hide"))
            headers = {"Authorization": f"Bearer {bob_token}"}
            response = bob.open(url, method=method, headers=headers,
                                data={"csrf_token": token, "reason": "x"})
            # A published submission's pages are public; per-example rows never are.
            public_read = (submission_id == public_id and method == "GET"
                           and "/examples" not in url)
            if public_read:
                assert response.status_code == 200, url
            else:
                assert response.status_code in (403, 404), (method, url, response.status_code)
    with app.app_context():
        alice_subs = db.session.scalars(select(Submission)).all()
        assert all(s.deleted_at is None and not s.hidden for s in alice_subs)
        assert {s.visibility for s in alice_subs} == {"private", "public"}
        assert db.session.get(ApiToken, alice_token_id).revoked_at is None


def test_cross_site_form_post_is_rejected(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    submission_id = api_upload(client, token, release_gold.get("geo", "dev")).json["id"]
    # A form on another site can make the browser send the cookie, but not the CSRF token.
    response = client.post(f"/submissions/{submission_id}/publish", data={},
                           headers={"Origin": "https://evil.example", "Referer":
                                    "https://evil.example/attack.html"})
    assert response.status_code == 400
    assert b"CSRF" in response.data
    with app.app_context():
        assert db.session.get(Submission, submission_id).visibility == "private"
    # GET never changes state.
    assert client.get(f"/submissions/{submission_id}/publish").status_code == 405


def test_revoked_and_expired_tokens_are_rejected(app: Flask, client: FlaskClient,
                                                 release_gold: GoldSet) -> None:
    register(client, "alice")
    revoked, expired = new_token(client), new_token(client)
    headers = {"Authorization": f"Bearer {revoked}"}
    assert client.get("/api/v1/submissions", headers=headers).status_code == 200
    with app.app_context():
        rows = db.session.scalars(select(ApiToken).order_by(ApiToken.id)).all()
        revoked_id = rows[0].id
        rows[1].expires_at = utcnow() - timedelta(seconds=1)
        db.session.commit()
    page_token = csrf_token(client, "/auth/account")
    assert client.post(f"/auth/tokens/{revoked_id}/revoke",
                       data={"csrf_token": page_token}).status_code == 302
    for raw, code in ((revoked, "token_revoked"), (expired, "token_expired"),
                      ("sqa_made_up", "invalid_token")):
        response = api_upload(client, raw, release_gold.get("geo", "dev"))
        assert response.status_code == 401
        assert response.json["error"]["code"] == code
    assert client.get("/api/v1/submissions").json["error"]["code"] == "missing_token"


def test_tokens_are_stored_as_hashes(app: Flask, client: FlaskClient) -> None:
    register(client, "alice")
    raw = new_token(client)
    with app.app_context():
        token = db.session.scalars(select(ApiToken)).one()
        assert raw not in (token.token_hash, token.prefix) and len(token.token_hash) == 64
        assert len(raw) >= 4 + 43  # sqa_ + 256 random bits


def test_security_headers_and_cookie_flags(client: FlaskClient) -> None:
    response = client.get("/auth/login")
    assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" in cookie
    assert "<script>" not in response.get_data(as_text=True).replace(
        '<script src="/static/app.js" defer></script>', "")


def test_login_errors_do_not_reveal_which_part_was_wrong(client: FlaskClient) -> None:
    register(client, "alice")
    client.post("/auth/logout", data={"csrf_token": csrf_token(client, "/")})
    unknown = login(client, "nobody")
    wrong = login(client, "alice", "wrong password, long enough")
    assert unknown.status_code == wrong.status_code == 401
    assert b"wrong user name or password" in unknown.data
    assert login(client, "alice").status_code == 302


def test_session_is_renewed_at_login(client: FlaskClient) -> None:
    register(client, "alice")
    client.post("/auth/logout", data={"csrf_token": csrf_token(client, "/")})
    assert client.get("/auth/account").status_code == 302
    assert login(client, "alice").status_code == 302
    assert client.get("/auth/account").status_code == 200


def test_rate_limits_give_429(database: dict[str, Any], gold_dir: Path, tmp_path: Path,
                              release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, LOGIN_RATE_LIMIT="3 per minute",
                   UPLOAD_RATE_LIMIT="2 per minute", REGISTER_RATE_LIMIT="2 per minute")
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    statuses = [login(client, "alice", "wrong password, long enough").status_code
                for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    gold = release_gold.get("geo", "dev")
    statuses = [api_upload(client, token, gold, prediction_file(gold, n)).status_code
                for n in range(3)]
    assert statuses == [201, 201, 429]
    error = api_upload(client, token, gold).json["error"]
    assert error["code"] == "too_many_requests"
    register(client, "bob")
    other = app.test_client()
    assert other.post("/auth/register", data={
        "csrf_token": csrf_token(other, "/auth/register"), "username": "carol",
        "email": "c@example.org", "password": PASSWORD}).status_code == 429


def test_every_api_error_has_one_shape(database: dict[str, Any], gold_dir: Path,
                                       tmp_path: Path, release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path, MAX_CONTENT_LENGTH=20_000,
                   UPLOAD_RATE_LIMIT="5 per minute")
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    responses = {
        404: client.get("/api/v1/no-such-route"),
        405: client.get("/api/v1/submissions/1/publish"),
        401: client.get("/api/v1/submissions"),
        413: api_upload(client, token, gold, b"x" * 30_000),
        400: api_upload(client, token, gold, b'{"key": "1|nowhere", "prediction": "x"}\n'),
    }
    for _ in range(5):
        responses[429] = api_upload(client, token, gold, b"")
    for status, response in responses.items():
        assert response.status_code == status, (status, response.json)
        assert response.is_json
        error = response.json["error"]
        assert set(response.json) == {"error"} and set(error) == {"code", "message", "details"}
        assert isinstance(error["code"], str) and error["message"]
    assert "limit" in responses[413].json["error"]["message"]
    assert responses[400].json["error"]["details"]["problems"]


def test_user_links_must_be_http(client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    response = api_upload(client, token, gold, paper_url="javascript:alert(1)")
    assert response.status_code == 400
    assert "paper_url" in response.json["error"]["details"]["fields"]
    response = api_upload(client, token, gold, method_name="<script>alert(1)</script>",
                          public="true")
    page = client.get(f"/submissions/{response.json['id']}").get_data(as_text=True)
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page


def test_visibility_changes_and_moderation_are_audited(app: Flask, runner: Any,
                                                       release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    sid = api_upload(client, token, release_gold.get("geo", "dev"), public="true").json["id"]
    client.post(f"/api/v1/submissions/{sid}/withdraw", headers={"Authorization":
                                                                f"Bearer {token}"})
    admin = app.test_client()
    result = runner.invoke(args=["users", "create", "root", "--email", "r@example.org",
                                 "--password", PASSWORD, "--admin"])
    assert result.exit_code == 0, result.output
    login(admin, "root")
    form = csrf_token(admin, "/admin/submissions")
    assert admin.post(f"/admin/submissions/{sid}/flag",
                      data={"csrf_token": form, "reason": "suspicious"}).status_code == 302
    assert admin.post(f"/admin/submissions/{sid}/hide",
                      data={"csrf_token": form, "reason": "duplicate"}).status_code == 302
    with app.app_context():
        actions = [(a.actor, a.action, a.reason) for a in
                   db.session.scalars(select(AuditLog).order_by(AuditLog.id))]
    assert actions == [("alice", "publish", ""), ("alice", "withdraw", ""),
                       ("root", "flag", "suspicious"), ("root", "hide", "duplicate")]
    page = admin.get("/admin/audit").get_data(as_text=True)
    assert "suspicious" in page and "duplicate" in page
    assert client.get("/admin/audit").status_code == 404


@pytest.mark.parametrize("password", ["short", "x" * 14])
def test_short_passwords_are_refused(client: FlaskClient, password: str) -> None:
    response = client.post("/auth/register", data={
        "csrf_token": csrf_token(client, "/auth/register"), "username": "alice",
        "email": "a@example.org", "password": password})
    assert response.status_code == 400
    assert re.search(rb"15 to 256 characters", response.data)


def test_form_upload_shows_problems(client: FlaskClient) -> None:
    register(client, "alice")
    data = {"csrf_token": csrf_token(client, "/submissions/new"), "track": "geo",
            "split": "dev", "method_name": "m",
            "file": (io.BytesIO(b"not json at all\n"), "bad.jsonl")}
    response = client.post("/submissions/new", data=data, content_type="multipart/form-data")
    assert response.status_code == 400
    assert b"nothing was stored" in response.data and b"bad.jsonl" in response.data
