"""One source of truth: caches may vanish at any moment; retried uploads are stored once."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

from flask import Flask
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from benchmark import Example, GoldSet, GoldSplit
from situatedqa_server.extensions import db
from situatedqa_server.models import IdempotencyKey, QuotaCounter, Submission
from situatedqa_server.services import gold_store

from .conftest import csrf_token, new_token, prediction_file, register


def upload(client: object, token: str, data: bytes, key: str | None, split: str = "test",
           track: str = "temp") -> object:
    """POST one file (to temp by default), with an Idempotency-Key when given."""
    headers = {"Authorization": f"Bearer {token}"} | ({"Idempotency-Key": key} if key else {})
    return client.post("/api/v1/submissions", headers=headers,  # type: ignore[attr-defined]
                       content_type="multipart/form-data", data={
                           "track": track, "split": split, "method_name": "m",
                           "file": (io.BytesIO(data), "p.jsonl")})


def counts(app: Flask) -> tuple[int, int, int]:
    """Submissions, idempotency keys and test quota units spent."""
    with app.app_context():
        return (db.session.scalar(select(func.count(Submission.id))) or 0,
                db.session.scalar(select(func.count(IdempotencyKey.id))) or 0,
                db.session.scalar(select(func.coalesce(func.sum(QuotaCounter.used), 0)).where(
                    QuotaCounter.period == "total")) or 0)


def test_same_key_twice_is_one_row_and_one_quota_unit(app: Flask,
                                                      release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    data = prediction_file(release_gold.get("temp", "test"))
    first, again = upload(client, token, data, "k-1"), upload(client, token, data, "k-1")
    assert first.status_code == again.status_code == 201  # type: ignore[attr-defined]
    assert first.json == again.json  # type: ignore[attr-defined]
    assert counts(app) == (1, 1, 1)
    other = upload(client, token, prediction_file(release_gold.get("temp", "test"), 5), "k-1")
    assert other.status_code == 422  # type: ignore[attr-defined]
    assert other.json["error"]["code"] == "idempotency_key_reused"  # type: ignore[attr-defined]
    assert counts(app) == (1, 1, 1)
    # With another key, the same predictions are the team's duplicate: 409, nothing spent
    # and no key recorded; other predictions are a new submission.
    assert upload(client, token, data, "k-2").status_code == 409  # type: ignore[attr-defined]
    assert counts(app) == (1, 1, 1)
    data_2 = prediction_file(release_gold.get("temp", "test"), 7)
    assert upload(client, token, data_2, "k-2").status_code == 201  # type: ignore[attr-defined]
    assert counts(app) == (2, 2, 2)
    bad = upload(client, token, data, "x" * 201)
    assert bad.status_code == 400 and counts(app) == (2, 2, 2)  # type: ignore[attr-defined]


def test_a_rejected_upload_records_no_key(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    incomplete = b"".join(prediction_file(release_gold.get("temp", "test")).splitlines(
        keepends=True)[:-1])
    assert upload(client, token, incomplete, "k").status_code == 400  # type: ignore[attr-defined]
    assert counts(app) == (0, 0, 0)
    fixed = prediction_file(release_gold.get("temp", "test"))
    assert upload(client, token, fixed, "k").status_code == 201  # type: ignore[attr-defined]


def test_caches_deleted_mid_run_are_rebuilt(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    response = upload(client, token, prediction_file(release_gold.get("temp", "dev"), 50),
                      None, split="dev")
    sid = response.json["id"]  # type: ignore[attr-defined]
    plot = f"/insight/submissions/{sid}/plots/scores.png"
    first = client.get(plot)
    assert first.status_code == 200
    cache = Path(app.config["CACHE_DIR"])
    assert any(cache.rglob("*.png"))
    for _ in range(2):  # delete every cache: the folder on disk and the parsed gold in memory
        shutil.rmtree(cache)
        gold_store.clear_cache()
        again = client.get(plot)
        assert again.status_code == 200 and again.data == first.data
        examples = client.get(f"/api/v1/submissions/{sid}/examples",
                              headers={"Authorization": f"Bearer {token}"})
        assert examples.status_code == 200
        assert len(examples.json["examples"]) == len(release_gold.get("temp", "dev"))


def test_migration_moves_an_old_deployments_files_in(tmp_path: Path, release_gold: GoldSet,
                                                     monkeypatch: object) -> None:
    import hashlib

    import sqlalchemy as sa
    from flask_migrate import upgrade

    from situatedqa_server import create_app
    from situatedqa_server.services import blobs

    from .conftest import TEST_CONFIG

    uploads, gold = tmp_path / "old-submissions", tmp_path / "old-gold"
    release_gold.save(gold)
    data = prediction_file(release_gold.get("geo", "dev"))
    sha = hashlib.sha256(data).hexdigest()
    (uploads / sha[:2]).mkdir(parents=True)
    (uploads / sha[:2] / sha).write_bytes(data)
    monkeypatch.setenv("SITUATEDQA_SUBMISSIONS_DIR", str(uploads))  # type: ignore[attr-defined]
    monkeypatch.setenv("SITUATEDQA_GOLD_DIR", str(gold))  # type: ignore[attr-defined]
    app = create_app({**TEST_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/old.db",
                      "INSTANCE_DIR": str(tmp_path / "instance")})
    with app.app_context():
        directory = app.extensions["migrate"].directory
        upgrade(directory=directory, revision="0004_integrity")
        for statement in (
                "INSERT INTO team (id, name, created_at) VALUES (1, 'Lab', '2026-01-01')",
                "INSERT INTO user_account (id, username, email, password_hash, team_id, "
                "is_admin, created_at) VALUES (1, 'alice', 'a@x.org', '!', 1, 0, '2026-01-01')",
                "INSERT INTO gold_version (id, name, as_of, fingerprint, changelog, is_active, "
                "created_at) VALUES (1, 'release', '2021-02-01', 'f', '', 1, '2026-01-01')",
                "INSERT INTO submission (id, user_id, team_id, track, split, file_sha256, "
                "filename, format, method_name, description, model_type, fine_tuned, "
                "visibility, hidden, is_baseline, created_at) VALUES (1, 1, 1, 'geo', 'dev', "
                f"'{sha}', 'p.jsonl', 'jsonl', 'm', '', 'other', 0, 'private', 0, 0, "
                "'2026-01-01')"):
            db.session.execute(sa.text(statement))
        db.session.commit()
        upgrade(directory=directory)
        assert blobs.get(sha) == data
        assert len(gold_store.get_gold().get("geo", "dev")) == len(release_gold.get("geo", "dev"))


def test_a_file_for_another_board_leads_with_one_line(app: Flask,
                                                      release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    temp_dev = prediction_file(release_gold.get("temp", "dev"))
    response: Any = upload(client, token, temp_dev, None, split="dev", track="geo")
    assert response.status_code == 400
    lead = "none of these keys belong to geo/dev; they match temp/dev"
    assert response.json["error"]["message"] == lead
    assert response.json["error"]["details"]["problems"]  # then the details
    page = client.post("/submissions/new", content_type="multipart/form-data", data={
        "csrf_token": csrf_token(client, "/submissions/new"), "track": "geo", "split": "dev",
        "method_name": "m", "model_type": "other", "file": (io.BytesIO(temp_dev), "p.jsonl")})
    assert page.status_code == 400 and f"{lead}." in page.get_data(as_text=True)


# --- the stored form of a gold set -----------------------------------------------------------


def test_the_stored_gold_reads_back_as_the_release(release_gold: GoldSet) -> None:
    """deserialize(serialize(gold)) is the gold: every split, example and field, and meta."""
    _, data = gold_store.serialize(release_gold)
    read = gold_store.deserialize(data)
    assert read.meta == release_gold.meta
    assert read.available() == release_gold.available()
    for track, split in release_gold.available():
        assert read.get(track, split).examples == release_gold.get(track, split).examples


@settings(max_examples=60, deadline=None)
@given(examples=st.lists(st.builds(
    lambda number, question, context, answers, extra, partitions, label, source: Example(
        key=f"{number}|{'|'.join(context.values())}", id=number, question=question,
        context=context, answers=tuple(answers) if label is None else (),
        any_answers=tuple(answers + extra) if label is None else (),
        partitions=tuple(partitions), label=label, source=source),
    st.integers(0, 10**12), st.text(max_size=20),
    st.dictionaries(st.sampled_from(["date", "date_type", "location"]), st.text(max_size=8)),
    st.lists(st.text(max_size=10), max_size=3), st.lists(st.text(max_size=10), max_size=2),
    st.lists(st.sampled_from(["static", "sampled", "start", "us", "rare"]), max_size=2,
             unique=True),
    st.one_of(st.none(), st.booleans()), st.one_of(st.none(), st.text(max_size=8))),
    max_size=8, unique_by=lambda e: e.key))
def test_any_stored_split_reads_back_equal(examples: list[Example]) -> None:
    """Any examples, QA or identification, with or without source, read back equal."""
    gold = GoldSet([GoldSplit("temp", "dev", examples)], {"release": "test"})
    read = gold_store.deserialize(gold_store.serialize(gold)[1])
    assert read.get("temp", "dev").examples == tuple(examples) and read.meta == gold.meta
