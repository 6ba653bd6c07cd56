"""The organizers' version pages: errors name the uploaded file, a diff across several
versions keeps every reason, and activating asks for a confirmation first."""

from __future__ import annotations

import io
import json
from pathlib import Path

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import GoldVersion
from situatedqa_server.services.gold_store import FIRST_VERSION_NAME

from .conftest import csrf_token


def post_update(organizer: FlaskClient, body: bytes, filename: str, name: str) -> str:
    token = csrf_token(organizer, "/admin/versions")
    response = organizer.post("/admin/versions", content_type="multipart/form-data", data={
        "csrf_token": token, "name": name, "as_of": "2023-06-01", "note": "",
        "update": (io.BytesIO(body), filename)})
    return response.get_data(as_text=True)


def test_update_errors_name_the_uploaded_file(app: Flask, organizer: FlaskClient) -> None:
    page = post_update(organizer, b'{"track": "temp"}\n{oops\n', "fixes-2023-06.jsonl", "bad")
    assert "fixes-2023-06.jsonl:2" in page and "fixes-2023-06.jsonl:1" in page
    assert "update.jsonl" not in page


def test_diff_across_versions_keeps_the_reasons(app: Flask, runner: FlaskCliRunner,
                                                organizer: FlaskClient, update_file: Path,
                                                release_gold: GoldSet) -> None:
    assert runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                               "v1", "--as-of", "2023-06-01"]).exit_code == 0
    assert runner.invoke(args=["gold", "activate", "v1"]).exit_code == 0
    geo = release_gold.get("geo", "dev").examples[0]
    second = Path(update_file.parent / "second.jsonl")
    second.write_text(json.dumps({"track": "geo", "split": "dev", "key": geo.key,
                                  "action": "retire", "reason": "the border moved"}) + "\n")
    result = runner.invoke(args=["gold", "build", "--from-update", str(second), "--name", "v2",
                                 "--as-of", "2023-07-01"])
    assert result.exit_code == 0, result.output
    page = organizer.get(f"/admin/versions/diff?a={FIRST_VERSION_NAME}&b=v2").get_data(
        as_text=True)
    for reason in ("the fact changed", "new date", "ambiguous", "the border moved"):
        assert reason in page, reason  # v1's reasons as well as v2's
    assert "secret" not in page  # test reasons stay on the server
    back = organizer.get(f"/admin/versions/diff?a=v2&b={FIRST_VERSION_NAME}").get_data(
        as_text=True)
    assert "the border moved" in back and "the fact changed" in back


def test_activation_asks_for_a_confirmation(app: Flask, runner: FlaskCliRunner,
                                            organizer: FlaskClient, update_file: Path,
                                            uploads: dict[str, int]) -> None:
    assert runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                               "v1", "--as-of", "2023-06-01"]).exit_code == 0
    with app.app_context():
        version_id = db.session.scalar(select(GoldVersion.id).where(GoldVersion.name == "v1"))
    listing = organizer.get("/admin/versions").get_data(as_text=True)
    confirm_url = f"/admin/versions/{version_id}/activate"
    assert f'href="{confirm_url}"' in listing  # a link to the confirmation, not a POST
    page = organizer.get(confirm_url)
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert f"{len(uploads)} submissions" in text and "Activate and rescore" in text
    assert "<td>temp</td><td>dev</td><td>all</td>" in text  # the version's change counts
    with app.app_context():  # nothing happened yet
        assert not db.session.get(GoldVersion, version_id).is_active
    token = csrf_token(organizer, confirm_url)
    done = organizer.post(confirm_url, data={"csrf_token": token})
    assert done.status_code == 302
    with app.app_context():
        assert db.session.get(GoldVersion, version_id).is_active
