"""Incremental rescoring in the server: the rows equal a full rescore's, column for column.

An update that changes answers and any_answer, adds and retires examples on a QA board and
flips, adds and retires labels on an identification board; the uploads' parent rows and
stored predictions give every row without reading a file, and rows stored before either
existed fall back to reading the file (which stores what was missing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import select, update

from benchmark import GoldSet, GoldSplit
from benchmark.tracks import TRACK_INFO
from situatedqa_server.extensions import db
from situatedqa_server.models import GoldVersion, Score, Submission
from situatedqa_server.services import evaluation, jobs, versions

from .conftest import api_upload, new_token, register, update_records

COLUMNS = ("submission_id", "gold_version_id", "track", "split", "n", "metrics", "ci",
           "counts", "primary_metric", "outcomes", "f1")
ID_ADDED = TRACK_INFO["temp-id"].key(990000005, {})


def id_file(gold: GoldSplit, seed: int, *, scores: bool) -> bytes:
    """Random identification predictions, with random scores if asked."""
    rng = np.random.default_rng(seed)
    lines = []
    for example in gold.examples:
        line: dict[str, Any] = {"key": example.key, "label": bool(rng.random() < 0.5)}
        if scores:
            line["score"] = float(rng.random())
        lines.append(line)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def lenient_file(gold: GoldSplit, seed: int) -> bytes:
    """QA predictions right, partly right (token F1 between 0 and 1) or wrong at random."""
    rng = np.random.default_rng(seed)
    lines = []
    for example in gold.examples:
        pick = rng.integers(3)
        answer = example.answers[0]
        text = answer if pick == 0 else f"maybe {answer} or so" if pick == 1 else "unknown"
        lines.append({"key": example.key, "prediction": text})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.fixture
def update_file(release_gold: GoldSet, tmp_path: Path) -> Path:
    """The temp update of conftest plus label flips, an addition and a retirement on temp-id."""
    ident = release_gold.get("temp-id", "dev").examples
    records = update_records(release_gold) + [
        {"track": "temp-id", "split": "dev", "key": ident[0].key, "action": "update",
         "answer": not ident[0].label, "reason": "relabelled"},
        {"track": "temp-id", "split": "dev", "key": ident[1].key, "action": "update",
         "answer": not ident[1].label, "reason": "relabelled"},
        {"track": "temp-id", "split": "dev", "key": ident[2].key, "action": "retire",
         "reason": "unclear"},
        {"track": "temp-id", "split": "dev", "key": ID_ADDED, "action": "add",
         "question": "added identification question?", "answer": True,
         "source": "nq.open", "reason": "new"},
        {"track": "temp", "split": "dev",
         "key": release_gold.get("temp", "dev").examples[2].key, "action": "update",
         "any_answer": ["another answer"], "reason": "any_answer only"},
    ]
    path = tmp_path / "update.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def more_uploads(client: FlaskClient, uploads: dict[str, int],
                 release_gold: GoldSet) -> dict[str, int]:
    """The uploads of conftest plus identification files (with and without scores) and
    QA files with partial token F1."""
    register(client, "bob")
    token = new_token(client)
    ident, dev, test = (release_gold.get("temp-id", "dev"), release_gold.get("temp", "dev"),
                        release_gold.get("temp", "test"))
    files = {"id_scores": (ident, id_file(ident, 1, scores=True)),
             "id_labels": (ident, id_file(ident, 2, scores=False)),
             "dev_lenient": (dev, lenient_file(dev, 3)),
             "test_lenient": (test, lenient_file(test, 4))}
    ids = dict(uploads)
    for name, (gold, data) in files.items():
        response = api_upload(client, token, gold, data, public="true", method_name=name)
        assert response.status_code == 201, response.json
        ids[name] = response.json["id"]
    return ids


def build(runner: FlaskCliRunner, update_file: Path) -> GoldVersion:
    """`gold build` through the CLI; the version (call inside an app context)."""
    result = runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                                 "2023-06", "--as-of", "2023-06-01"])
    assert result.exit_code == 0, result.output
    version = versions.version_named("2023-06", published_only=False)
    assert version is not None
    return version


def comparable(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples of every column but ids and timestamps."""
    return sorted(tuple((name, repr(bytes(row[name]) if isinstance(row[name], memoryview)
                                    else row[name])) for name in COLUMNS) for row in rows)


def stored_rows(version: GoldVersion) -> list[dict[str, Any]]:
    """The version's score rows as written."""
    return [dict(zip(COLUMNS, row, strict=True)) for row in db.session.execute(
        select(*(getattr(Score, c) for c in COLUMNS)).where(Score.gold_version_id == version.id))]


@dataclass
class Scored:
    """What score_into found, with the score rows it gives."""

    rows: list[dict[str, Any]]
    from_outcomes: int
    predictions: list[dict[str, Any]]


def scored(version: GoldVersion, stored: list[Submission], *,
           incremental: bool = True) -> Scored:
    """The rows the evaluation room gives for stored submissions (nothing written)."""
    found = evaluation.score_into(version, stored, incremental=incremental)
    rows = [evaluation.score_values(s.id, version.id, r)
            for s, r in zip(stored, found.results, strict=True) if r is not None]
    return Scored(rows, found.from_outcomes, found.predictions)


def rescore_into(version: GoldVersion, stored: list[Submission]) -> None:
    """Score stored submissions into a version, incrementally, and write them."""
    evaluation.store(evaluation.score_into(version, stored), stored)


def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the submissions whose files are read from now on."""
    read: list[int] = []
    real = evaluation.read_stored

    def counting(submission: Submission, *args: Any, **kwargs: Any) -> Any:
        read.append(submission.id)
        return real(submission, *args, **kwargs)

    monkeypatch.setattr(evaluation, "read_stored", counting)
    return read


def test_incremental_rows_equal_full_rows_on_qa_and_identification(
        app: Flask, runner: FlaskCliRunner, update_file: Path, more_uploads: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    read = reads(monkeypatch)
    with app.app_context():
        version = build(runner, update_file)
        parent = db.session.get_one(GoldVersion, version.parent_id)
        changed = {board for board in versions.gold_of(version).splits
                   if board not in evaluation.unchanged_boards(version, parent)}
        assert changed == {("temp", "dev"), ("temp", "test"), ("temp-id", "dev")}
        stored = jobs.unscored(version)
        full = scored(version, stored, incremental=False)
        assert full.from_outcomes == 0 and len(read) == len(stored) == len(more_uploads)
        assert full.predictions == []  # every upload stored its predictions as parsed
        read.clear()
        on_changed = [s for s in stored if (s.track, s.split) in changed]
        changed_ids = {s.id for s in on_changed}
        incremental = scored(version, on_changed)
        assert incremental.from_outcomes == len(on_changed) and read == []
        rescore_into(version, stored)
        db.session.commit()
        written = stored_rows(version)
    assert read == []
    assert comparable(incremental.rows) == comparable(
        [r for r in full.rows if r["submission_id"] in changed_ids])
    assert comparable(written) == comparable(full.rows)
    by_id = {row["submission_id"]: row for row in written}
    # The update changed what the rows hold: the test is not comparing two copies.
    assert by_id[more_uploads["id_scores"]]["metrics"]["auc"] is not None
    assert by_id[more_uploads["dev_lenient"]]["f1"] is not None
    assert by_id[more_uploads["id_labels"]]["f1"] is None


def test_rows_stored_without_f1_or_predictions_are_read_in_full(
        app: Flask, runner: FlaskCliRunner, update_file: Path, more_uploads: dict[str, int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    read = reads(monkeypatch)
    no_f1, no_predictions = more_uploads["dev_lenient"], more_uploads["id_scores"]
    with app.app_context():
        version = build(runner, update_file)
        parent = db.session.get_one(GoldVersion, version.parent_id)
        stored = jobs.unscored(version)
        full = scored(version, stored, incremental=False)
        read.clear()
        kept = db.session.scalar(select(Submission.predictions).where(
            Submission.id == no_predictions))
        # As rows stored before migration 0008 are.
        db.session.execute(update(Score).where(Score.submission_id == no_f1,
                                               Score.gold_version_id == parent.id)
                           .values(f1=None))
        db.session.execute(update(Submission).where(Submission.id == no_predictions)
                           .values(predictions=None))
        db.session.execute(update(Submission).where(Submission.id == more_uploads["id_labels"])
                           .values(predictions=b"not zlib"))
        db.session.commit()
        rescore_into(version, jobs.unscored(version))
        db.session.commit()
        written = stored_rows(version)
        filled = db.session.scalar(select(Submission.predictions).where(
            Submission.id == no_predictions))
        repaired = db.session.scalar(select(Submission.predictions).where(
            Submission.id == more_uploads["id_labels"]))
    assert sorted(read) == sorted([no_f1, no_predictions, more_uploads["id_labels"]])
    assert comparable(written) == comparable(full.rows)
    # Reading a file in full stores (or repairs) its predictions for the next rescore.
    assert filled == kept and repaired is not None and repaired != b"not zlib"


def test_a_job_rescores_incrementally_and_activates(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, update_file: Path,
        more_uploads: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    read = reads(monkeypatch)
    app.config.update(RESCORE_BATCH_SIZE=2)
    with app.app_context():
        version = build(runner, update_file)
        stored = jobs.unscored(version)
        full = comparable(scored(version, stored, incremental=False).rows)
        read.clear()
    result = runner.invoke(args=["gold", "activate", "2023-06"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        version = versions.version_named("2023-06")
        assert version is not None and version.is_active
        assert comparable(stored_rows(version)) == full
    assert read == []
    response = client.get("/api/v1/leaderboards/temp-id?split=dev")
    assert response.status_code == 200 and response.json["gold_version"] == "2023-06"


def test_batches_count_carried_rows_as_cheap(app: Flask, runner: FlaskCliRunner,
                                             update_file: Path,
                                             more_uploads: dict[str, int]) -> None:
    app.config.update(RESCORE_BATCH_SIZE=1)
    with app.app_context():
        version = build(runner, update_file)
        full = jobs.start_activation(version, None, incremental=False)
        assert [b.size for b in full.batches] == [1] * len(more_uploads)
        incremental = jobs.start_activation(version, None, restart=True)
        # geo/dev (the 4th upload) is only copied: it shares a batch with the next upload.
        assert [b.size for b in incremental.batches] == [1, 1, 1, 2] + [1] * 4
        assert sum(b.size for b in incremental.batches) == len(more_uploads)
