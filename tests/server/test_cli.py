"""Organizer commands, on an empty database as an operator would run them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import inspect, select, update

from benchmark import GoldSet
from situatedqa_server import create_app
from situatedqa_server.extensions import db
from situatedqa_server.models import GoldVersion, Score, Submission, User
from situatedqa_server.services import blobs, gold_store

from .conftest import PASSWORD, TEST_CONFIG, api_upload


def test_db_upgrade_gold_import_users_and_tokens(tmp_path: Path, release_dir: Path,
                                                 release_gold: GoldSet) -> None:
    app = create_app({**TEST_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/e.db",
                      "INSTANCE_DIR": str(tmp_path / "instance"),
                      "SITUATEDQA_DATA": str(release_dir)})
    runner = app.test_cli_runner()
    result = runner.invoke(args=["db", "upgrade"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        assert "submission" in inspect(db.engine).get_table_names()
    result = runner.invoke(args=["gold", "import"])
    assert result.exit_code == 0, result.output
    with app.app_context():  # the gold lives in the database, not in a folder
        version = db.session.scalars(select(GoldVersion)).one()
        assert blobs.exists(version.gold_sha256)
        assert len(gold_store.get_gold().get("temp", "test")) == len(
            release_gold.get("temp", "test"))
    assert not (tmp_path / "instance" / "gold").exists()
    result = runner.invoke(args=["gold", "import", "--from", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and "missing" in result.output
    with app.app_context():
        versions = db.session.scalars(select(GoldVersion)).all()
        assert [(v.name, v.is_active) for v in versions] == [("2021-02, as released", True)]

    result = runner.invoke(args=["users", "create", "alice", "--email", "a@example.org",
                                 "--password", PASSWORD, "--team", "Lab A"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(args=["users", "create", "bob", "--email", "b@example.org",
                                 "--password", PASSWORD, "--team", "Lab A", "--admin"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(args=["users", "create", "carl", "--email", "c@example.org",
                                 "--password", "short"])
    assert result.exit_code == 1 and "15 to 256" in result.output
    result = runner.invoke(args=["tokens", "create", "alice"])
    assert result.exit_code == 0
    token = result.output.strip().splitlines()[-1]
    assert token.startswith("sqa_") and " " not in token
    assert runner.invoke(args=["tokens", "create", "nobody"]).exit_code == 1

    client = app.test_client()
    gold = release_gold.get("geo", "dev")
    response = api_upload(client, token, gold)
    assert response.status_code == 201
    sid = response.json["id"]
    with app.app_context():
        users = db.session.scalars(select(User).order_by(User.id)).all()
        assert users[0].team_id == users[1].team_id and users[1].is_admin

    result = runner.invoke(args=["submissions", "list"])
    assert "test method" in result.output
    assert runner.invoke(args=["submissions", "hide", str(sid), "--reason", "spam"]).exit_code == 0
    assert runner.invoke(args=["submissions", "unhide", str(sid)]).exit_code == 0
    assert runner.invoke(args=["submissions", "hide", "999", "--reason", "x"]).exit_code == 1
    with app.app_context():
        kept = db.session.get_one(Submission, sid).predictions
        # As rows stored before migration 0008 are: no stored predictions.
        db.session.execute(update(Submission).where(Submission.id == sid)
                           .values(predictions=None))
        db.session.commit()
    result = runner.invoke(args=["submissions", "rescore"])
    assert result.exit_code == 0 and "rescored 1 submissions" in result.output
    with app.app_context():
        assert db.session.scalar(select(Score.primary_metric)) == 100.0
        assert db.session.get(Submission, sid).hidden is False
        # Rescoring from the file stores the predictions it read, as a rescore job does.
        assert kept is not None and db.session.get_one(Submission, sid).predictions == kept


def test_production_password_hash_meets_owasp(tmp_path: Path, runner: FlaskCliRunner,
                                              app: Flask) -> None:
    production = create_app({"SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
                             "SQLALCHEMY_ENGINE_OPTIONS": app.config["SQLALCHEMY_ENGINE_OPTIONS"],
                             "SECRET_KEY": "x", "GOLD_DIR": str(tmp_path)})
    assert not production.config["TESTING"]
    result = production.test_cli_runner().invoke(args=[
        "users", "create", "alice", "--email", "a@example.org", "--password", PASSWORD])
    assert result.exit_code == 0, result.output
    with production.app_context():
        stored = db.session.scalar(select(User.password_hash))
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert production.config["SESSION_COOKIE_SECURE"] is True
    assert production.config["SESSION_COOKIE_HTTPONLY"] is True
    assert production.config["SESSION_COOKIE_SAMESITE"] == "Lax"


def test_reported_entries_import(app: Flask, runner: FlaskCliRunner, tmp_path: Path) -> None:
    rows = [{"track": "geo", "split": "test", "method_name": "Paper model",
             "source": "Table 5, row 2", "metrics": {"em": 23.5, "em_common": 30.1},
             "model_type": "retrieval"}]
    path = tmp_path / "reported.json"
    path.write_text(json.dumps(rows))
    result = runner.invoke(args=["reported", "import", str(path)])
    assert result.exit_code == 0, result.output
    board = app.test_client().get("/api/v1/leaderboards/geo?split=test").json
    assert board["entries"][0]["reported"] is True and board["entries"][0]["rank"] is None
    path.write_text(json.dumps([{**rows[0], "track": "nope"}]))
    result = runner.invoke(args=["reported", "import", str(path)])
    assert result.exit_code == 1 and "unknown track" in result.output


def test_setup_is_idempotent(database: dict[str, Any], tmp_path: Path,
                             release_dir: Path) -> None:
    app = create_app({**TEST_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/s.db",
                      "INSTANCE_DIR": str(tmp_path / "instance"),
                      "SITUATEDQA_DATA": str(release_dir)})
    runner = app.test_cli_runner()
    first = runner.invoke(args=["setup"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(args=["setup"])
    assert second.exit_code == 0 and "already imported" in second.output


def test_a_reset_database_beside_an_old_deployments_folders(tmp_path: Path, release_dir: Path,
                                                            release_gold: GoldSet) -> None:
    """The old layout named version folders by database id; a fresh database reused them."""
    instance = tmp_path / "instance"
    for stale in ("gold/versions/2", "gold/versions/.tmp-0123abcd", "plot-cache"):
        (instance / stale).mkdir(parents=True)
        (instance / stale / "meta.json").write_text("{}")
    app = create_app({**TEST_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/r.db",
                      "INSTANCE_DIR": str(instance), "SITUATEDQA_DATA": str(release_dir)})
    runner = app.test_cli_runner()
    for args in (["db", "upgrade"], ["gold", "import"],
                 ["users", "create", "alice", "--email", "a@example.org", "--password",
                  PASSWORD]):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output
    dev = release_gold.get("temp", "dev")
    update = tmp_path / "update.jsonl"
    update.write_text(json.dumps({"track": "temp", "split": "dev", "key": dev.examples[0].key,
                                  "action": "update", "answer": ["new"], "reason": "x"}) + "\n")
    built = runner.invoke(args=["gold", "build", "--from-update", str(update), "--name", "v2",
                                "--as-of", "2026-11-30"])
    assert built.exit_code == 0, built.output
    token = runner.invoke(args=["tokens", "create", "alice"]).output.strip().splitlines()[-1]
    assert api_upload(app.test_client(), token, dev).status_code == 201
    activated = runner.invoke(args=["gold", "activate", "v2"])
    assert activated.exit_code == 0, activated.output
    board = app.test_client().get("/api/v1/leaderboards/temp?split=dev").json
    assert board["gold_version"] == "v2" and board["entries"] == []  # private upload
