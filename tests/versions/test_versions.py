"""Building, activating and reading gold versions: rescoring, atomic switch, crash, history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import AuditLog, GoldVersion, Job, JobStatus, Score, StoredFile
from situatedqa_server.services import accounts, evaluation, gold_store, jobs, versions

from .conftest import CANARY_KEY, DEV_ADDED_KEY, HELD_BACK, api_upload, prediction_file

FIRST = gold_store.FIRST_VERSION_NAME


def build(runner: FlaskCliRunner, update_file: Path, name: str = "2023-06") -> Any:
    """`gold build` through the CLI."""
    return runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                               name, "--as-of", "2023-06-01", "--note", "errata"])


def board(client: FlaskClient, track: str, split: str, version: str | None = None) -> Any:
    """The API leaderboard, keyed by method name."""
    query = f"/api/v1/leaderboards/{track}?split={split}" + (
        f"&version={version}" if version else "")
    response = client.get(query)
    assert response.status_code == 200, response.json
    return response.json["gold_version"], {e["method_name"]: e for e in response.json["entries"]}


def score_count(app: Flask, version_name: str) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count(Score.id)).join(GoldVersion).where(
            GoldVersion.name == version_name)) or 0


def test_build_activate_rescores_everything(app: Flask, client: FlaskClient,
                                            runner: FlaskCliRunner, update_file: Path,
                                            uploads: dict[str, int],
                                            release_gold: GoldSet) -> None:
    before = board(client, "temp", "test")[1]
    result = build(runner, update_file)
    assert result.exit_code == 0, result.output
    assert "temp     test  all            added 1, changed 1, retired 1" in result.output
    assert DEV_ADDED_KEY in result.output and CANARY_KEY not in result.output
    assert "job" not in runner.invoke(args=["gold", "versions"]).output
    # Built but not active: not selectable yet.
    response = client.get("/api/v1/leaderboards/temp?split=test&version=2023-06")
    assert response.status_code == 404 and response.json["error"]["code"] == "unknown_version"

    result = runner.invoke(args=["gold", "activate", "2023-06"])
    assert result.exit_code == 0, result.output
    assert score_count(app, "2023-06") == score_count(app, FIRST) == len(uploads)

    # The paper's metrics on the release's examples the version keeps (one retired): the
    # changed answer wrong; the added example is fresh, in no submission's Total.
    n = len(release_gold.get("temp", "test")) - 1
    name, after = board(client, "temp", "test")
    assert name == "2023-06"
    assert after["test_all"]["metrics"]["em"] == pytest.approx(100 * (n - 1) / n)
    assert board(client, "temp", "test", FIRST)[1] == before  # old scores stay readable
    assert board(client, "geo", "dev")[1]["geo_dev"]["metrics"]["em"] == 100.0
    dev = board(client, "temp", "dev")[1]
    assert dev["dev_seer"]["rank"] == 1 and dev["dev_all"]["rank"] == 2
    with app.app_context():
        actions = db.session.scalars(select(AuditLog.action)).all()
    assert {"gold_build", "gold_activate", "gold_activated"} <= set(actions)
    assert "ACTIVE" in runner.invoke(args=["gold", "versions"]).output
    diff = runner.invoke(args=["gold", "diff", FIRST, "2023-06"])
    assert "temp     dev   all" in diff.output and CANARY_KEY not in diff.output


def test_bad_update_builds_nothing(app: Flask, runner: FlaskCliRunner, tmp_path: Path,
                                   update_file: Path) -> None:
    lines = update_file.read_text().splitlines()
    broken = json.loads(lines[0]) | {"answer": []}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[2], json.dumps(broken), "{oops"]) + "\n")
    result = build(runner, bad)
    assert result.exit_code == 1
    assert "bad.jsonl:2: 'answer' must be a non-empty list" in result.output
    assert broken["key"] in result.output and "bad.jsonl:3: malformed JSON" in result.output
    assert _versions_and_files(app) == (1, 1)
    assert "exists already" in build(runner, update_file, FIRST).output


def _versions_and_files(app: Flask) -> tuple[int, int]:
    with app.app_context():
        return (db.session.scalar(select(func.count(GoldVersion.id))) or 0,
                db.session.scalar(select(func.count(StoredFile.sha256))) or 0)


def test_failed_build_stores_nothing(app: Flask, runner: FlaskCliRunner, update_file: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(versions.audit, "record_event", broken)
    assert build(runner, update_file).exit_code != 0
    # Neither the version's row nor its gold file: they commit together or not at all.
    assert _versions_and_files(app) == (1, 1)


def test_crash_halfway_keeps_the_old_version(app: Flask, client: FlaskClient,
                                             runner: FlaskCliRunner, update_file: Path,
                                             uploads: dict[str, int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert build(runner, update_file).exit_code == 0
    before = board(client, "temp", "test")
    real, calls = evaluation.score_values, []

    def crashing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("worker died")
        return real(*args, **kwargs)

    # Every rescored row passes here, incremental or read in full.
    monkeypatch.setattr(evaluation, "score_values", crashing)
    # Leases that pass at once stand in for the minutes after a worker's death.
    app.config.update(RESCORE_BATCH_SIZE=1, JOB_LEASE_SECONDS=0)
    with app.app_context():
        job = jobs.start_activation(versions.version_named("2023-06", published_only=False),
                                    None)
        with pytest.raises(RuntimeError):
            jobs.run_inline(job.id)
        # The process died mid-batch: the job is still running, its batch leased.
        job = db.session.get_one(Job, job.id)
        assert job.status == JobStatus.RUNNING.value and job.done == 2
        assert gold_store.active_version().name == FIRST
    partial_ids = _score_ids(app, "2023-06")
    assert len(partial_ids) == 2
    assert board(client, "temp", "test") == before
    assert client.get("/api/v1/leaderboards/temp?version=2023-06").status_code == 404
    page = client.get(f"/submissions/{uploads['test_all']}").get_data(as_text=True)
    assert "2023-06" not in page
    # A second activation is refused while the job can still resume.
    refused = runner.invoke(args=["gold", "activate", "2023-06"])
    assert refused.exit_code == 1 and "resumes by itself" in refused.output

    # Once the lease passes, a sweep hands the rest out again: partial scores are kept.
    monkeypatch.setattr(evaluation, "score_values", real)
    assert runner.invoke(args=["jobs", "sweep"]).exit_code == 0
    assert partial_ids <= _score_ids(app, "2023-06")
    assert len(_score_ids(app, "2023-06")) == len(uploads)
    assert board(client, "temp", "test")[0] == "2023-06"
    listing = runner.invoke(args=["jobs", "list"]).output
    assert "rescore    done" in listing and f"{len(uploads)}/{len(uploads)}" in listing


def _score_ids(app: Flask, version_name: str) -> set[int]:
    with app.app_context():
        return set(db.session.scalars(select(Score.id).join(GoldVersion).where(
            GoldVersion.name == version_name)))


def test_uploads_during_rescore_and_atomic_switch(app: Flask, client: FlaskClient,
                                                  runner: FlaskCliRunner, update_file: Path,
                                                  uploads: dict[str, int],
                                                  release_gold: GoldSet) -> None:
    assert build(runner, update_file).exit_code == 0
    test = release_gold.get("temp", "test")
    seen: list[Any] = []
    # A team per mid-run upload: one team's same predictions twice would be a 409.
    with app.app_context():
        tokens = []
        for number in range(len(uploads) + 2):
            user = accounts.create_user(f"late{number}", f"late{number}@example.org",
                                        "a long enough password")
            tokens.append(accounts.create_token(user, "late")[1])
        db.session.commit()

    def mid_run(done: int, total: int) -> None:
        # While the rescore runs, leaderboards still show the old version...
        seen.append(board(client, "temp", "test"))
        # ...and an upload is scored for the active version and the one being rescored.
        response = api_upload(client, tokens[len(seen)], test, prediction_file(test),
                              public="true", method_name=f"late {done}")
        assert response.status_code == 201
        with app.app_context():
            scores = db.session.scalars(select(Score).where(
                Score.submission_id == response.json["id"])).all()
            assert len(scores) == 2
            if len(seen) == 1:  # an upload the rescore must catch in its final pass
                db.session.delete(next(s for s in scores if s.gold_version.name == "2023-06"))
                db.session.commit()

    app.config["RESCORE_BATCH_SIZE"] = 2
    with app.app_context():
        job = jobs.start_activation(versions.version_named("2023-06", published_only=False),
                                    None)
        jobs.run_inline(job.id, progress=mid_run)
    assert seen and all(name == FIRST for name, _ in seen)
    assert all(entries["test_all"]["metrics"]["em"] == 100.0 for _, entries in seen)
    name, entries = board(client, "temp", "test")
    assert name == "2023-06"
    late = [e for method, e in entries.items() if method.startswith("late")]
    assert late and all(e["metrics"] == entries["test_all"]["metrics"] for e in late)
    total = len(uploads) + len(seen)
    assert score_count(app, "2023-06") == score_count(app, FIRST) == total


def test_history_ranks_and_drift(app: Flask, client: FlaskClient, runner: FlaskCliRunner,
                                 update_file: Path, uploads: dict[str, int]) -> None:
    assert build(runner, update_file).exit_code == 0
    assert runner.invoke(args=["gold", "activate", "2023-06"]).exit_code == 0
    page = client.get(f"/submissions/{uploads['test_all']}").get_data(as_text=True)
    assert "Score history across gold versions" in page
    assert f'data-version="{FIRST}">100.00' in page and 'data-version="2023-06">' in page
    ranks = client.get("/versions/ranks/temp?split=dev").get_data(as_text=True)
    assert "▲ 1" in ranks and "▼ 1" in ranks and "-0.06" in ranks
    older = client.get(f"/versions/ranks/temp?split=dev&from=2023-06&to={FIRST}")
    assert older.status_code == 200
    assert client.get("/versions/ranks/temp?from=nope").status_code == 404
    drift = client.get("/versions/drift/temp?split=test")
    assert drift.status_code == 200 and b"test_all" in drift.data
    svg = client.get("/versions/drift/temp.svg?split=test")
    assert svg.status_code == 200 and svg.mimetype == "image/svg+xml"
    assert client.get("/versions/drift/geo?split=test").status_code == 404
    assert client.get("/versions/drift/present.svg?split=dev").status_code == 200


def test_dev_inputs_follow_the_active_version(app: Flask, client: FlaskClient,
                                              runner: FlaskCliRunner, update_file: Path,
                                              uploads: dict[str, int]) -> None:
    assert build(runner, update_file).exit_code == 0
    assert runner.invoke(args=["gold", "activate", "2023-06", *HELD_BACK]).exit_code == 0
    assert DEV_ADDED_KEY.encode() in client.get("/data/temp/dev/blank.jsonl").data
    assert CANARY_KEY.encode() not in client.get("/data/temp/test/blank.jsonl").data
    # A dev file uploaded before the added example still has per-example rows.
    examples = client.get(f"/submissions/{uploads['dev_all']}/examples")
    assert examples.status_code == 200
    changelog = client.get("/versions/2.json")
    assert changelog.status_code == 404
    body = client.get("/versions/2/changelog.json").json
    assert body["counts"]["temp"]["test"]["all"] == {"added": 1, "changed": 1, "retired": 1}
    assert {e["split"] for e in body["examples"]} == {"dev"}
    assert [e["answers"] for e in body["examples"] if e["kind"] == "changed"] == [
        ["dev new answer"]]


def test_incremental_and_full_rescoring_give_identical_rows(
        app: Flask, runner: FlaskCliRunner, update_file: Path, uploads: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert build(runner, update_file).exit_code == 0
    real, read = evaluation.read_stored, []

    def counting(submission: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(submission.track)
        return real(submission, *args, **kwargs)

    monkeypatch.setattr(evaluation, "read_stored", counting)
    columns = ("submission_id", "gold_version_id", "track", "split", "n", "metrics", "ci",
               "counts", "primary_metric", "outcomes", "f1")
    with app.app_context():
        version = versions.version_named("2023-06", published_only=False)
        assert version is not None
        stored = jobs.unscored(version)
        found = evaluation.score_into(version, stored, incremental=False)
        full = [evaluation.score_values(s.id, version.id, r)
                for s, r in zip(stored, found.results, strict=True) if r is not None]
        assert len(read) == len(stored)
        read.clear()
        evaluation.store(evaluation.score_into(version, stored), stored)
        db.session.commit()
        incremental = [dict(zip(columns, row, strict=True)) for row in db.session.execute(
            select(*(getattr(Score, c) for c in columns)).where(
                Score.gold_version_id == version.id))]
        parent = db.session.get_one(GoldVersion, version.parent_id)
        assert ("geo", "dev") in evaluation.unchanged_boards(version, parent)
        assert ("temp", "dev") not in evaluation.unchanged_boards(version, parent)
    # The update touches temp only: the geo upload was carried over, and the temp ones were
    # rescored from their parent rows and stored predictions: no file was read.
    assert read == []

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sorted((k, repr(bytes(v) if isinstance(v, memoryview) else v))
                            for k, v in row.items() if k in columns))
    assert sorted(map(key, incremental)) == sorted(map(key, full))
    assert len(incremental) == len(uploads)
