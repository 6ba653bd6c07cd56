"""Service errors carry their status: one table of every class, the same status on a page
and in the API for the same failure, and the site's own words on its error pages."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

import situatedqa_server.services as services
from benchmark import GoldSet
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.services.errors import ServiceError

from .conftest import TEST_CONFIG, api_upload, new_token, prediction_file, register

#: Every service error, with the status and code it is answered with.
EXPECTED: dict[str, tuple[int, str]] = {
    "accounts.AccountError": (400, "invalid_account"),
    "accounts.NoSuchUser": (404, "not_found"),
    "accounts.TokenError": (401, "bad_request"),  # its instances carry their own code
    "baselines.BaselineError": (400, "invalid_baseline"),
    "blobs.MissingFile": (503, "file_unavailable"),
    "campaigns.AlreadyAnswered": (409, "already_answered"),
    "campaigns.AnnotationError": (400, "invalid_annotation"),
    "campaigns.CampaignError": (400, "invalid_campaign"),
    "campaigns.TaskNotFound": (404, "not_found"),
    "diagnostics.BadPick": (400, "invalid_pick"),
    "diagnostics.NotComparable": (400, "not_comparable"),
    "diagnostics.PickError": (400, "invalid_pick"),
    "diagnostics.UnscoredPick": (409, "not_scored"),
    "diagnostics.UnseenPick": (404, "not_found"),
    "disputes.AlreadyDecided": (409, "already_decided"),
    "disputes.AlreadyDisputed": (409, "already_disputed"),
    "disputes.DisputeError": (400, "invalid_dispute"),
    "disputes.DisputeNotFound": (404, "not_found"),
    "disputes.UnknownExample": (404, "unknown_example"),
    "duplicates.DuplicateSubmission": (409, "duplicate_submission"),
    "errors.InvalidJson": (400, "invalid_json"),
    "errors.InvalidQuery": (400, "invalid_query"),
    "errors.InvalidRequest": (400, "invalid_request"),
    "errors.MissingToken": (401, "missing_token"),
    "errors.NotFound": (404, "not_found"),
    "errors.UnknownField": (400, "unknown_field"),
    "errors.UnknownTrack": (404, "not_found"),
    "errors.UriTooLong": (414, "uri_too_long"),
    "evaluation.FileTooLarge": (413, "file_too_large"),
    "evaluation.InvalidFile": (400, "invalid_file"),
    "gold_store.GoldUnavailable": (503, "gold_unavailable"),
    "idempotency.ConcurrentRequest": (409, "conflict"),
    "idempotency.KeyReused": (422, "idempotency_key_reused"),
    "input_releases.InvalidReleaseDate": (400, "invalid_release_date"),
    "input_releases.UnknownRelease": (404, "unknown_release"),
    "jobs.JobError": (409, "job_busy"),
    "board.BadBoardQuery": (400, "invalid_query"),
    "board.UnknownVersion": (404, "unknown_version"),
    "quotas.QuotaExceeded": (429, "quota_exceeded"),
    "released.NoReleasedScore": (404, "not_found"),
    "scoring.HiddenSplitError": (404, "hidden_split"),
    "snapshots.SnapshotError": (400, "invalid_snapshot"),
    "versions.UpdateRejected": (400, "invalid_update"),
    "versions.VersionError": (400, "invalid_version"),
    "visibility.NoSuchSubmission": (404, "not_found"),
    "visibility.NotReleased": (409, "not_released"),
}


def service_errors() -> dict[str, type[ServiceError]]:
    """Every ServiceError subclass defined in situatedqa_server.services, by module.Class."""
    for module in pkgutil.iter_modules(services.__path__):
        importlib.import_module(f"{services.__name__}.{module.name}")
    found: dict[str, type[ServiceError]] = {}
    pending: list[type[ServiceError]] = [ServiceError]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub.__module__.startswith(f"{services.__name__}."):
                found[f"{sub.__module__.rsplit('.', 1)[1]}.{sub.__qualname__}"] = sub
    return found


def test_every_service_error_is_listed_with_its_status() -> None:
    found = service_errors()
    assert sorted(found) == sorted(EXPECTED)
    for name, cls in found.items():
        assert (cls.status, cls.code) == EXPECTED[name], name


@pytest.mark.parametrize(("page", "api"), [
    ("/leaderboards/nosuchtrack", "/api/v1/leaderboards/nosuchtrack"),
    ("/leaderboards/temp?version=nosuch", "/api/v1/leaderboards/temp?version=nosuch"),
    ("/leaderboards/temp?sort=nosuch", "/api/v1/leaderboards/temp?sort=nosuch"),
    ("/submissions/999999", "/api/v1/submissions/999999"),
])
def test_a_page_and_the_api_answer_a_failure_with_the_same_status(
        client: FlaskClient, page: str, api: str) -> None:
    on_page, on_api = client.get(page), client.get(api)
    assert on_page.status_code == on_api.status_code >= 400
    assert on_api.get_json()["error"]["code"]
    assert "text/html" in on_page.content_type


def test_a_rejected_file_and_a_duplicate_have_the_same_status_on_both(
        client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "both")
    token = new_token(client)
    dev = release_gold.get("temp", "dev")

    def page_upload(data: bytes) -> Any:
        import io
        import re
        form = client.get("/submissions/new").get_data(as_text=True)
        match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form)
        assert match is not None
        return client.post("/submissions/new", data={
            "csrf_token": match.group(1), "track": "temp", "split": "dev",
            "method_name": "m", "model_type": "other",
            "file": (io.BytesIO(data), "p.jsonl")}, content_type="multipart/form-data")

    bad = b'{"key": "no such key", "prediction": "x"}\n'
    assert page_upload(bad).status_code == api_upload(client, token, dev, bad).status_code == 400
    good = prediction_file(dev)
    assert api_upload(client, token, dev, good).status_code == 201
    assert page_upload(good).status_code == api_upload(client, token, dev, good).status_code \
        == 409


@pytest.fixture
def app_without_gold(database: dict[str, Any], tmp_path: Path) -> Iterator[Flask]:
    """The app on a database at the current schema, with no gold imported yet."""
    application = create_app({**TEST_CONFIG, **database, "CACHE_DIR": str(tmp_path / "c")})
    yield application
    with application.app_context():
        db.engine.dispose()


def test_gold_unavailable_is_503_on_a_page_and_in_the_api(app_without_gold: Flask) -> None:
    client = app_without_gold.test_client()
    page, api = client.get("/leaderboards/temp"), client.get("/api/v1/leaderboards/temp")
    assert page.status_code == api.status_code == 503
    assert api.get_json()["error"]["code"] == "gold_unavailable"


@pytest.mark.parametrize(("path", "method", "status", "words"), [
    ("/no/such/page", "GET", 404, "Page not found"),
    ("/submissions/new", "DELETE", 405, "Not available this way"),
])
def test_error_pages_say_what_happened_and_where_to_go(
        client: FlaskClient, path: str, method: str, status: int, words: str) -> None:
    page = client.open(path, method=method)
    text = page.get_data(as_text=True)
    assert page.status_code == status and words in text
    assert "The leaderboards" in text and "The API documentation" in text
    assert "The requested URL was not found on the server" not in text  # Werkzeug's sentence
    api = client.open(f"/api/v1{path}", method=method)
    assert api.status_code in (404, 405) and api.is_json


def test_an_unexpected_error_is_a_500_page_in_the_sites_words(app: Flask) -> None:
    @app.get("/boom-for-test")
    def boom() -> str:
        raise RuntimeError("secret detail")

    page = app.test_client().get("/boom-for-test")
    text = page.get_data(as_text=True)
    assert page.status_code == 500 and "Something went wrong on our side" in text
    assert "secret detail" not in text
