"""Issue 11 and 12: NUL and invisible characters, redirects, sessions, caching, error codes."""

from __future__ import annotations

import io
import logging
import re
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from flask import Flask, request
from flask.testing import FlaskClient
from sqlalchemy import func, select, text

from benchmark import SPLITS, TRACKS, GoldSet
from situatedqa_server import gunicorn_conf
from situatedqa_server.extensions import db
from situatedqa_server.inputs import MAX_URL_LENGTH
from situatedqa_server.models import Submission, Team
from situatedqa_server.services.board import sortable_columns

from .conftest import PASSWORD, api_upload, csrf_token, login, new_token, prediction_file, register


def _count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission)) or 0


def _page_upload(client: FlaskClient, gold: Any, **fields: Any) -> Any:
    """POST the upload page's form with a valid file and the given fields."""
    data = {"csrf_token": csrf_token(client, "/submissions/new"), "track": gold.track,
            "split": gold.split, "method_name": "page method", "public": "no", **fields}
    data.setdefault("file", (io.BytesIO(prediction_file(gold)), "predictions.jsonl"))
    return client.post("/submissions/new", data=data, content_type="multipart/form-data")


def _logout(client: FlaskClient) -> None:
    client.post("/auth/logout", data={"csrf_token": csrf_token(client, "/")})


def assert_error(response: Any, status: int, code: str, field: str | None = None) -> None:
    """The API's one error shape with this status and code (and a problem for field)."""
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    error = response.json["error"]
    assert set(error) == {"code", "message", "details"} and error["code"] == code
    if field is not None:
        assert field in error["details"]["fields"], error


# --- 1. NUL characters ----------------------------------------------------------------------

def test_nul_in_query_path_and_form_gets_400_not_500(app: Flask, client: FlaskClient,
                                                     release_gold: GoldSet) -> None:
    assert_error(client.get("/api/v1/leaderboards/temp?version=%00"), 400, "invalid_query",
                 "version")
    for url in ("/leaderboards/temp?version=%00", "/versions/ranks/temp?from=%00",
                "/leaderboards/temp?split=dev%00", "/snapshots/a%00b"):
        response = client.get(url)
        assert response.status_code == (404 if "%00b" in url else 400), url
        assert "NUL" in response.get_data(as_text=True)
    assert_error(client.get("/api/v1/submissions/1%00"), 404, "not_found")
    plot = client.get("/insight/leaderboards/geo/plots/top.svg?version=no-such-version")
    assert plot.status_code == 404 and b"no-such-version" in plot.data
    token = csrf_token(client, "/auth/login")
    response = client.post("/auth/login", data={"csrf_token": token, "username": "al\x00ice",
                                                "password": PASSWORD})
    assert response.status_code == 400 and b"username" in response.data


def test_nul_in_upload_fields_and_file_name_changes_nothing(app: Flask, client: FlaskClient,
                                                            release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    assert_error(api_upload(client, token, gold, method_name="a\x00b"), 400,
                 "invalid_request", "method_name")
    assert_error(api_upload(client, token, gold, description="x\x00"), 400,
                 "invalid_request", "description")
    response = client.post("/api/v1/submissions", data={
        "track": "geo", "split": "dev", "method_name": "m",
        "file": (io.BytesIO(prediction_file(gold)), "pred\x00.jsonl")},
        headers={"Authorization": f"Bearer {token}"}, content_type="multipart/form-data")
    assert_error(response, 400, "invalid_request", "file")
    page = _page_upload(client, gold, method_name="page\x00method")
    assert page.status_code == 400 and b"method_name" in page.data
    assert _count(app) == 0


def test_server_errors_never_log_request_data(app: Flask, client: FlaskClient,
                                              caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Alembic's logging setup (run by the fixtures) disables loggers created before it.
    monkeypatch.setattr(logging.getLogger("situatedqa_server.errors"), "disabled", False)
    def explode() -> str:
        secret = request.args["q"]
        db.session.execute(text("SELECT no_such_column FROM team WHERE name = :n"),
                           {"n": secret})
        return "unreachable"

    app.add_url_rule("/explode", view_func=explode)
    with caplog.at_level(logging.ERROR):
        response = client.get("/explode?q=secret-method-name")
    assert response.status_code == 500
    assert "secret-method-name" not in caplog.text
    assert re.search(r"unhandled \w+Error", caplog.text)  # the exception class is logged
    with app.app_context():
        assert db.engine.hide_parameters


# --- 2. open redirect -----------------------------------------------------------------------

@pytest.mark.parametrize("target", ["/\t/evil.example", "/\\evil.example", "\\/evil.example",
                                    " //evil.example", "/\n/evil.example", "//evil.example",
                                    "https://evil.example/", "/\t\\evil.example"])
def test_next_after_login_never_leaves_the_site(client: FlaskClient, target: str) -> None:
    register(client, "alice")
    _logout(client)
    url = "/auth/login?" + urlencode({"next": target})
    response = client.post(url, data={"csrf_token": csrf_token(client, url),
                                      "username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    location = response.headers["Location"]
    assert "evil.example" not in location and not location.startswith("//")


def test_next_after_login_keeps_a_local_path(client: FlaskClient) -> None:
    register(client, "alice")
    _logout(client)
    url = "/auth/login?" + urlencode({"next": "/submissions/"})
    response = client.post(url, data={"csrf_token": csrf_token(client, url),
                                      "username": "alice", "password": PASSWORD})
    assert urlsplit(response.headers["Location"]).path == "/submissions/"


# --- 3. huge numbers ------------------------------------------------------------------------

def test_parameter_count_out_of_range_is_a_clear_400(app: Flask, client: FlaskClient,
                                                     release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    for value in ("99999999999999999999999999999T", "1001T", "0"):
        response = api_upload(client, token, gold, parameter_count=value)
        assert_error(response, 400, "invalid_request", "parameter_count")
        assert "1000T" in str(response.json["error"]["details"]["fields"]["parameter_count"])
    page = _page_upload(client, gold, parameter_count="99999999999999999999999999999T")
    assert page.status_code == 400 and b"1000T" in page.data
    assert _count(app) == 0
    assert api_upload(client, token, gold, parameter_count="1.5B").json[
        "parameter_count"] == 1_500_000_000


def test_huge_page_numbers_are_a_clear_400(client: FlaskClient) -> None:
    for url in ("/leaderboards/geo?page=99999999999999999999",
                "/leaderboards/geo.csv?page=99999999999999999999"):
        response = client.get(url)
        assert response.status_code == 400 and b"1000000" in response.data, url
    assert_error(client.get("/api/v1/leaderboards/geo?page=99999999999999999999"), 400,
                 "invalid_query", "page")


# --- 5. sessions end on logout and password change ------------------------------------------

def _copy_session(app: Flask, source: FlaskClient) -> FlaskClient:
    cookie = source.get_cookie("session")
    assert cookie is not None
    copy = app.test_client()
    copy.set_cookie("session", cookie.value)
    return copy


def test_logout_ends_every_copy_of_the_session(app: Flask, client: FlaskClient) -> None:
    register(client, "alice")
    stolen = _copy_session(app, client)
    assert stolen.get("/auth/account").status_code == 200
    _logout(client)
    assert stolen.get("/auth/account").status_code == 302
    assert login(client, "alice").status_code == 302
    assert client.get("/auth/account").status_code == 200
    assert stolen.get("/auth/account").status_code == 302


def test_password_change_ends_other_sessions(app: Flask, client: FlaskClient) -> None:
    register(client, "alice")
    other = app.test_client()
    assert login(other, "alice").status_code == 302
    new = "another long passphrase here"
    token = csrf_token(client, "/auth/account")
    wrong = client.post("/auth/password", data={"csrf_token": token,
                                                "current_password": "not the password!!",
                                                "new_password": new})
    assert wrong.status_code == 400 and other.get("/auth/account").status_code == 200
    response = client.post("/auth/password", data={"csrf_token": token,
                                                   "current_password": PASSWORD,
                                                   "new_password": new})
    assert response.status_code == 302
    assert client.get("/auth/account").status_code == 200
    assert other.get("/auth/account").status_code == 302
    assert login(other, "alice", PASSWORD).status_code == 401
    assert login(other, "alice", new).status_code == 302


# --- 6. invisible and direction-changing characters ------------------------------------------

@pytest.mark.parametrize("name", ["Evil\u202eTPG-4 ecnamrofrep", "\u2067GPT-5\u2069\u200b",
                                  "\x1b[31mred\x1b[0m", "zero\ufeffwidth", "two\u2028lines"])
def test_method_names_with_hidden_characters_are_refused(app: Flask, client: FlaskClient,
                                                         release_gold: GoldSet,
                                                         name: str) -> None:
    register(client, "alice")
    response = api_upload(client, new_token(client), release_gold.get("geo", "dev"),
                          method_name=name)
    assert_error(response, 400, "invalid_request", "method_name")
    assert "U+" in str(response.json["error"]["details"]["fields"]["method_name"])
    assert _count(app) == 0


def test_names_are_nfc_and_team_names_refuse_hidden_characters(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice", team="Cafe\u0301 team")
    response = api_upload(client, new_token(client), release_gold.get("geo", "dev"),
                          method_name="Cafe\u0301  net")
    assert response.json["method_name"] == "Caf\u00e9 net"
    with app.app_context():
        assert db.session.scalar(select(Team.name)) == "Caf\u00e9 team"
    other = app.test_client()
    for team, message in (("Caf\u00e9 team", "taken"), ("Te\u200bam", "U+200B")):
        page = other.post("/auth/register", data={
            "csrf_token": csrf_token(other, "/auth/register"), "username": "bob",
            "email": "bob@example.org", "password": PASSWORD, "team": team})
        assert page.status_code == 400 and message in page.get_data(as_text=True)
    page = other.post("/auth/register", data={
        "csrf_token": csrf_token(other, "/auth/register"), "username": "b\u202eob",
        "email": "bob@example.org", "password": PASSWORD})
    assert page.status_code == 400 and "U+202E" in page.get_data(as_text=True)


# --- 7. no-store ----------------------------------------------------------------------------

def test_private_pages_and_api_answers_are_not_stored(app: Flask, client: FlaskClient,
                                                      release_gold: GoldSet) -> None:
    assert "no-store" not in client.get("/leaderboards/geo").headers.get("Cache-Control", "")
    register(client, "alice")
    token_page = client.post("/auth/tokens", data={
        "csrf_token": csrf_token(client, "/auth/account"), "name": "t"})
    assert token_page.headers["Cache-Control"] == "no-store"
    token = new_token(client)
    submission_id = api_upload(client, token, release_gold.get("geo", "dev")).json["id"]
    for url in ("/auth/account", f"/submissions/{submission_id}", "/submissions/"):
        assert client.get(url).headers["Cache-Control"] == "no-store", url
    api = app.test_client()
    answer = api.get(f"/api/v1/submissions/{submission_id}",
                     headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store"


# --- 8. real dates --------------------------------------------------------------------------

def test_knowledge_date_must_be_a_calendar_date(app: Flask, client: FlaskClient,
                                                release_gold: GoldSet) -> None:
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    for value in ("2021-13-45", "2021-02-29", "2021-00", "21-01-01"):
        assert_error(api_upload(client, token, gold, knowledge_date=value), 400,
                     "invalid_request", "knowledge_date")
    assert _count(app) == 0
    for correct, value in enumerate(("2020-02-29", "2021-12", "2018")):
        # Other predictions each time: one team's same predictions twice are a 409.
        assert api_upload(client, token, gold, prediction_file(gold, correct),
                          knowledge_date=value).json["knowledge_date"] == value


# --- 9. long URLs, the OpenAPI description ---------------------------------------------------

def test_too_long_url_gets_the_json_error_shape(client: FlaskClient) -> None:
    response = client.get("/api/v1/leaderboards/geo?x=" + "a" * MAX_URL_LENGTH)
    assert_error(response, 414, "uri_too_long")
    # gunicorn must let such a URL through to the app rather than answer with its own page.
    assert gunicorn_conf.limit_request_line > MAX_URL_LENGTH + len("GET  HTTP/1.1")


def test_openapi_sort_columns_are_right_for_each_split(app: Flask,
                                                       client: FlaskClient) -> None:
    spec = client.get("/api/v1/openapi.json").json
    for track in TRACKS:
        parameters = spec["paths"][f"/api/v1/leaderboards/{track}"]["get"]["parameters"]
        sort = next(p for p in parameters if p["name"] == "sort")
        with app.app_context():
            expected = {split: sortable_columns(track, split) for split in SPLITS}
        assert sort["x-columns-by-split"] == expected
        for split in SPLITS:
            for column in set(sort["schema"]["enum"]) - set(expected[split]):
                response = client.get(f"/api/v1/leaderboards/{track}?split={split}&sort={column}")
                assert_error(response, 400, "invalid_query", "sort")


# --- issue 12: messages and error codes -------------------------------------------------------

def test_login_page_says_why_it_is_shown(client: FlaskClient) -> None:
    response = client.get("/submissions/new", follow_redirects=True)
    assert "Log in to upload." in response.get_data(as_text=True)


def test_upload_after_logout_elsewhere_keeps_what_was_typed(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice")
    gold = release_gold.get("geo", "dev")
    form = {"csrf_token": csrf_token(client, "/submissions/new"), "track": "geo",
            "split": "dev", "method_name": "my typed method", "description": "typed words",
            "public": "no", "file": (io.BytesIO(prediction_file(gold)), "p.jsonl")}
    _logout(client)  # in another tab
    response = client.post("/submissions/new", data=form, content_type="multipart/form-data")
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "Your session expired; log in again." in page and "CSRF" not in page
    url = "/auth/login?next=/submissions/new"
    assert f'action="{url}"' in page
    assert login_at(client, url).headers["Location"].endswith("/submissions/new")
    again = client.get("/submissions/new").get_data(as_text=True)
    assert 'value="my typed method"' in again and "typed words" in again
    assert _count(app) == 0
    _logout(client)  # a form posted from another site leaves no text behind
    client.post("/submissions/new", data={"method_name": "planted", "track": "geo"},
                headers={"Origin": "https://evil.example"})
    login_at(client, url)
    assert "planted" not in client.get("/submissions/new").get_data(as_text=True)


def test_upload_after_logout_on_another_device_keeps_what_was_typed(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "alice")
    laptop = _copy_session(app, client)
    token = csrf_token(laptop, "/submissions/new")
    _logout(client)  # on another device: the laptop's session is void, its CSRF token is not
    gold = release_gold.get("geo", "dev")
    response = laptop.post("/submissions/new", data={
        "csrf_token": token, "track": "geo", "split": "dev", "method_name": "laptop method",
        "file": (io.BytesIO(prediction_file(gold)), "p.jsonl")},
        content_type="multipart/form-data", follow_redirects=True)
    assert "Your session expired; log in again." in response.get_data(as_text=True)
    login_at(laptop, "/auth/login?next=/submissions/new")
    assert 'value="laptop method"' in laptop.get("/submissions/new").get_data(as_text=True)
    assert _count(app) == 0


def login_at(client: FlaskClient, url: str) -> Any:
    """Log in as alice through the login form at url."""
    return client.post(url, data={"csrf_token": csrf_token(client, url), "username": "alice",
                                  "password": PASSWORD})


def test_register_says_what_to_do_next(client: FlaskClient) -> None:
    token = csrf_token(client, "/auth/register")
    page = client.post("/auth/register", data={
        "csrf_token": token, "username": "alice", "email": "a@example.org",
        "password": PASSWORD}, follow_redirects=True).get_data(as_text=True)
    assert "Your account was created" in page and "API token" in page and "upload" in page


def test_api_error_codes_are_consistent(app: Flask, client: FlaskClient,
                                        release_gold: GoldSet) -> None:
    assert_error(client.get("/api/v1/leaderboards/nope"), 404, "not_found")
    assert_error(client.get("/api/v1/tracks/nope"), 404, "not_found")
    assert_error(client.get("/api/v1/leaderboards/geo?split=bogus"), 400, "invalid_query")
    for url in ("/leaderboards/geo?split=bogus", "/versions/ranks/geo?split=bogus",
                "/versions/drift/temp?split=bogus"):
        page = client.get(url)
        assert page.status_code == 400 and "choose one of train, dev, test" in page.get_data(
            as_text=True), url
    assert client.get("/versions/ranks/nope").status_code == 404
    register(client, "alice")
    response = api_upload(client, new_token(client), release_gold.get("geo", "dev"),
                          track="temporal", split="nope", model_type="x")
    assert_error(response, 400, "invalid_request")
    fields = response.json["error"]["details"]["fields"]
    assert "temp" in str(fields["track"]) and "geo-id" in str(fields["track"])
    assert "dev" in str(fields["split"]) and "closed-book" in str(fields["model_type"])
