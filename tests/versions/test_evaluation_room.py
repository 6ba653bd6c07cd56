"""The evaluation room: every path to a score row gives the same row, and writes every column.

The paths: an upload made while a version is being rescored, a rescore job (incremental and
full), `flask submissions rescore`, and a baseline regeneration of the same predictions.
Rows are compared on every column of the score table (read from the model, so a column
added later is compared too), ids and times aside.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import inspect, select
from sqlalchemy.orm import MANYTOONE

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Job, Score, Submission
from situatedqa_server.services import evaluation, gold_store, jobs, scoring, versions

from .conftest import api_upload, new_token, register

#: Columns that name a row or say when it was written, not what it holds.
IDENTITY = {"id", "submission_id", "scored_at"}


def row_of(submission_id: int, version_name: str) -> dict[str, Any]:
    """Every column of a submission's score under a version, ids and times aside."""
    version = versions.version_named(version_name, published_only=False)
    assert version is not None
    row = db.session.scalar(select(Score).where(Score.submission_id == submission_id,
                                                Score.gold_version_id == version.id))
    assert row is not None, (submission_id, version_name)
    values = {}
    for column in Score.__table__.columns:
        if column.key not in IDENTITY:
            value = getattr(row, column.key)
            values[column.key] = bytes(value) if isinstance(value, memoryview) else value
    return values


def uploaded(client: FlaskClient, name: str, data: bytes, gold: GoldSet) -> int:
    """A new team's API upload of the file on temp dev; its submission id."""
    client.get("/auth/logout")
    register(client, name)
    response = api_upload(client, new_token(client), gold.get("temp", "dev"), data)
    assert response.status_code == 201, response.get_json()
    return int(response.get_json()["id"])


def test_every_path_to_a_score_row_gives_the_same_row(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        release_gold: GoldSet, tmp_path: Path) -> None:
    dev = release_gold.get("temp", "dev")
    lines = [{"key": e.key, "prediction": e.answers[0] if i % 3 else "the 1990s"}
             for i, e in enumerate(dev.examples)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    first = uploaded(client, "first", data, release_gold)
    built = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                "2023-06", "--as-of", "2023-06-01"])
    assert built.exit_code == 0, built.output
    with app.app_context():
        version = versions.version_named("2023-06", published_only=False)
        assert version is not None
        job = jobs.start_activation(version, None)
        job_id = job.id
    # Uploaded while 2023-06 is being rescored: scored against it in the upload.
    during = uploaded(client, "during", data, release_gold)
    with app.app_context():
        by_upload = row_of(during, "2023-06")
        # The error classes and the horizon are among the columns compared below.
        assert by_upload["error_classes"] is not None and by_upload["horizon"] is not None
        assert "outdated_rate_static" in by_upload["metrics"]
        assert jobs.run_inline(job_id).status == "done"
        by_job = row_of(first, "2023-06")  # incremental: from the parent's outcomes
        assert by_job == by_upload
        assert by_job["outcomes"] != row_of(first, versions.all_versions()[0].name)["outcomes"]
    full = runner.invoke(args=["submissions", "rescore", "--full"])
    assert full.exit_code == 0, full.output
    with app.app_context():
        assert row_of(first, "2023-06") == by_upload
    again = runner.invoke(args=["submissions", "rescore"])
    assert again.exit_code == 0, again.output
    with app.app_context():
        assert row_of(first, "2023-06") == by_upload
        rescores = db.session.scalars(select(Job).where(Job.kind == "rescore")
                                      .order_by(Job.id)).all()
        assert [j.params.get("incremental", True) for j in rescores] == [True, False, True]
        assert gold_store.active_version().name == "2023-06"
    # A baseline regeneration of the same predictions (a runner output with its sidecar).
    output = tmp_path / "nn-train.temp.dev.jsonl"
    output.write_bytes(data)
    output.with_name(output.name + ".meta.json").write_text(json.dumps(
        {"runner": "nn-train", "track": "temp", "split": "dev", "setting": "query-modified",
         "settings": {}, "seed": 0, "fingerprints": {"model": "test"}}))
    regenerated = runner.invoke(args=["baselines", "regenerate", "--confirm-differences",
                                      "--from-file", f"nn-train:temp:dev:{output}"])
    assert regenerated.exit_code == 0, regenerated.output
    with app.app_context():
        baseline = db.session.scalar(select(Submission.id).where(
            Submission.is_baseline.is_(True), Submission.baseline_runner == "nn-train"))
        assert baseline is not None
        assert row_of(baseline, "2023-06") == by_upload


def test_the_upload_shortcut_writes_every_column(app: Flask, client: FlaskClient,
                                                 release_gold: GoldSet,
                                                 monkeypatch: Any) -> None:
    """scoring._store bypasses the ORM's unit of work: every column of a Submission or
    Score it stores must be in the database as the upload set it, and every column the
    upload leaves unset must have a default (a column added to a model that the upload
    forgets, or that the shortcut drops, fails here)."""
    real, stored = scoring._store, []

    def recording(instance: Any) -> None:
        written = {c.key: getattr(instance, c.key) for c in type(instance).__table__.columns
                   if c.key in instance.__dict__}
        for relationship in inspect(type(instance)).relationships:  # foreign keys set by object
            target = instance.__dict__.get(relationship.key)
            if relationship.direction is MANYTOONE and target is not None:
                for local, remote in relationship.local_remote_pairs:
                    written[str(local.key)] = getattr(target, str(remote.key))
        real(instance)
        stored.append((type(instance), instance.id, written))

    monkeypatch.setattr(scoring, "_store", recording)
    data = b"".join(json.dumps({"key": e.key, "prediction": e.answers[0]}).encode() + b"\n"
                    for e in release_gold.get("temp", "dev").examples)
    uploaded(client, "shortcut", data, release_gold)
    assert {model for model, _, _ in stored} == {Submission, Score}
    with app.app_context():
        for model, ident, written in stored:
            row = db.session.get_one(model, ident)
            for column in model.__table__.columns:
                if column.key in written:
                    value = getattr(row, column.key)
                    value = bytes(value) if isinstance(value, memoryview) else value
                    assert value == written[column.key], (model.__name__, column.key)
                else:
                    assert (column.default is not None or column.server_default is not None
                            or column.primary_key or column.nullable), (model.__name__,
                                                                        column.key)


def test_carried_rows_copy_every_column() -> None:
    """A row carried over from the parent copies every column that holds a score (the
    database computes the rest from them)."""
    held = {c.key for c in Score.__table__.columns if c.computed is None} - {
        "id", "gold_version_id", "scored_at"}
    assert set(evaluation.COPIED_COLUMNS) == held


def test_a_version_never_active_is_activated_not_rescored(
        app: Flask, runner: FlaskCliRunner, update_file: Path) -> None:
    built = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                "2023-06", "--as-of", "2023-06-01"])
    assert built.exit_code == 0, built.output
    refused = runner.invoke(args=["submissions", "rescore", "--gold-version", "2023-06"])
    assert refused.exit_code == 1 and "has never been active" in refused.output
    with app.app_context():
        assert db.session.scalars(select(Job)).all() == []  # no job was started


FIGURES = ("unreleased", "released", "contamination_gap")


def version_id(name: str) -> int:
    """A version's id (in an app context)."""
    version = versions.version_named(name, published_only=False)
    assert version is not None
    return version.id


def test_every_path_gives_the_same_provenance_figures_on_test(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        release_gold: GoldSet, tmp_path: Path) -> None:
    """The version's test changes (an answer changed to a new one, an example added) make
    two unreleased examples: the upload, the incremental job, the full and the incremental
    rescore, and a row carried to a later version that leaves test alone, all store the
    same figures; the release's rows have none."""
    test = release_gold.get("temp", "test")
    lines = [{"key": e.key, "prediction": e.answers[0] if i % 3 else "the 1990s"}
             for i, e in enumerate(test.examples)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()

    def upload(name: str) -> int:
        client.get("/auth/logout")
        register(client, name)
        response = api_upload(client, new_token(client), test, data)
        assert response.status_code == 201, response.get_json()
        return int(response.get_json()["id"])

    first = upload("first")
    with app.app_context():
        assert "unreleased" not in row_of(first, versions.all_versions()[0].name)["metrics"]
    built = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                "2023-06", "--as-of", "2023-06-01"])
    assert built.exit_code == 0, built.output
    with app.app_context():
        version = versions.version_named("2023-06", published_only=False)
        assert version is not None
        job_id = jobs.start_activation(version, None).id
    during = upload("during")
    with app.app_context():
        by_upload = row_of(during, "2023-06")
        metrics, counts = by_upload["metrics"], by_upload["counts"]
        # Unreleased: test[0] (answered "the 1990s"); the added example is fresh, and the
        # file was not given it (its input release is made at the switch): in no figure.
        assert counts["unreleased"] == 1 and metrics["unreleased"] == 0.0
        assert counts["released"] == by_upload["n"] - 2
        assert counts["em"] == by_upload["n"] - 1  # the paper's: the release's examples
        assert metrics["contamination_gap"] == metrics["released"] - metrics["unreleased"]
        assert all(by_upload["ci"][name] is not None
                   for name in ("unreleased", "released", "contamination_gap"))
        assert jobs.run_inline(job_id).status == "done"
        assert row_of(first, "2023-06") == by_upload  # the job, from the parent's outcomes
    for args in (["submissions", "rescore", "--full"], ["submissions", "rescore"]):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output
        with app.app_context():
            assert row_of(first, "2023-06") == by_upload
    # A later version that changes dev only: the test rows carry over, figures included.
    dev = release_gold.get("temp", "dev").examples
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"track": "temp", "split": "dev", "key": dev[3].key,
                                 "action": "update", "answer": ["later"],
                                 "reason": "dev only"}) + "\n")
    with app.app_context():  # as if scored before the figures existed
        old = db.session.scalar(select(Score).where(
            Score.submission_id == during, Score.gold_version_id == by_upload[
                "gold_version_id"]))
        assert old is not None
        old.metrics = {k: v for k, v in old.metrics.items() if k not in FIGURES}
        old.ci = {k: v for k, v in old.ci.items() if k not in FIGURES}
        old.counts = {k: v for k, v in old.counts.items() if k not in FIGURES}
        db.session.commit()
    built = runner.invoke(args=["gold", "build", "--from-update", str(later), "--name",
                                "2023-09", "--as-of", "2023-09-01"])
    assert built.exit_code == 0, built.output
    with app.app_context():
        version = versions.version_named("2023-09", published_only=False)
        assert version is not None
        assert jobs.run_inline(jobs.start_activation(version, None).id).status == "done"
        carried = row_of(first, "2023-09")
        healed = row_of(during, "2023-09")  # not carried without them: scored again
        assert carried.pop("gold_version_id") != by_upload.pop("gold_version_id")
        assert carried == by_upload
        assert healed.pop("gold_version_id") == version_id("2023-09")
        assert healed == by_upload


def test_a_rescore_batch_enters_the_gold_store_once(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        release_gold: GoldSet, monkeypatch: Any) -> None:
    """The rescore job's path is a straight line: each batch takes the gold it needs from
    the gold store in one entry, then scores from stored outcomes and stores."""
    dev = release_gold.get("temp", "dev")
    for n, name in enumerate(("one", "two", "three")):
        lines = [{"key": e.key, "prediction": e.answers[0] if i % (n + 2) else "the 1990s"}
                 for i, e in enumerate(dev.examples)]
        uploaded(client, name, "".join(json.dumps(line) + "\n" for line in lines).encode(),
                 release_gold)
    built = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                "2023-06", "--as-of", "2023-06-01"])
    assert built.exit_code == 0, built.output
    entries: list[str] = []
    depth = [0]

    def counted(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if depth[0] == 0:  # an entry from outside, not the store's own calls
                entries.append(name)
            depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    with app.app_context():
        version = versions.version_named("2023-06", published_only=False)
        assert version is not None
        job = jobs.start_activation(version, None)
        batch_ids = [b.id for b in job.batches]
        assert batch_ids
        for name, function in list(vars(gold_store).items()):
            if (not name.startswith("_") and callable(function)
                    and getattr(function, "__module__", None)
                    == gold_store.__name__ and not isinstance(function, type)):
                monkeypatch.setattr(gold_store, name, counted(name, function))
        for batch_id in batch_ids:
            entries.clear()
            assert jobs.run_batch(batch_id)
            assert len(entries) == 1, str(entries)
