"""Fixtures of the regeneration tests: the server's app on a gold folder of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from situatedqa_server.extensions import db
from situatedqa_server.models import (
    AuditLog,
    GoldVersion,
    ReportedEntry,
    Score,
    StoredFile,
    Submission,
)
from tests.server.conftest import (  # noqa: F401  (pytest finds fixtures by name)
    api_upload,
    database,
    gold_dir,
    make_app_with_own_gold,
    new_token,
    pg_config,
    prediction_file,
    register,
    sqlite_template,
)


@pytest.fixture
def app(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Iterator[Flask]:  # noqa: F811
    """The app on a fresh database and its own gold folder (gold versions are written there)."""
    application = make_app_with_own_gold(database, gold_dir, tmp_path)
    yield application
    with application.app_context():
        db.engine.dispose()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    """Runs the organizer commands."""
    return app.test_cli_runner()


@pytest.fixture
def regenerate(runner: FlaskCliRunner, release_dir: Path) -> Any:
    """`flask baselines regenerate ARGS --data RELEASE`, returning the click result."""
    def invoke(*args: str) -> Any:
        return runner.invoke(args=["baselines", "regenerate", *args, "--data", str(release_dir)])
    return invoke


def database_state(app: Flask) -> dict[str, Any]:
    """Every baseline, score, reported row and audit entry, by id, and the stored files."""
    with app.app_context():
        return {
            "submissions": db.session.execute(select(
                Submission.id, Submission.baseline_runner, Submission.track, Submission.split,
                Submission.file_sha256).order_by(Submission.id)).all(),
            "scores": db.session.execute(select(
                Score.id, Score.submission_id, Score.gold_version_id, Score.metrics)
                .order_by(Score.id)).all(),
            "reported": db.session.execute(select(
                ReportedEntry.id, ReportedEntry.source, ReportedEntry.metrics)
                .order_by(ReportedEntry.id)).all(),
            "audit": db.session.scalars(select(AuditLog.id).order_by(AuditLog.id)).all(),
            "files": sorted(db.session.scalars(select(StoredFile.sha256).where(
                StoredFile.sha256.not_in(select(GoldVersion.gold_sha256))))),
        }


CONTEXT_FIELDS = {"temp": ("date", "date_type"), "geo": ("location",)}


#: What a run in the paper's setup records (BERT-base DPR over the ~21M-passage Wikipedia;
#: BART-large), beside its fingerprints.
PAPER_SETUPS: dict[str, dict[str, Any]] = {
    "dpr": {"corpus": "psgs_w100.tsv", "corpus_passages": 21_015_324, "top_k": 100,
            "read_k": 50, "device_used": "cuda:0", "precision_used": "float32",
            "architectures": {"reader": {"hidden_size": 768, "num_hidden_layers": 12},
                              "question_encoder": {"hidden_size": 768,
                                                   "num_hidden_layers": 12}}},
    "bart": {"device": "cuda:0", "precision": "float32", "architectures": {
        "model": {"d_model": 1024, "encoder_layers": 12, "decoder_layers": 12}}},
}


def write_qa_output(release_dir: Path, out: Path, runner: str, track: str,
                    setting: str = "query-modified") -> Path:
    """A dev file as the DPR/BART runners write it: qa_data records without gold + pred_answer.

    Every other answer is right; the sidecar is what a GPU machine's run would leave.
    """
    lines = []
    rows = (release_dir / "qa_data" / f"{track}.dev.jsonl").read_text(encoding="utf-8")
    for position, line in enumerate(rows.splitlines()):
        record = json.loads(line)
        answer = record["answer"][0] if position % 2 == 0 else "no idea"
        lines.append({"id": record["id"], "question": record["question"],
                      **{name: record[name] for name in CONTEXT_FIELDS[track]},
                      "pred_answer": answer})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    meta = {"runner": runner, "track": track, "split": "dev", "setting": setting,
            "settings": {"setting": setting, "batch_size": 16, **PAPER_SETUPS.get(runner, {})},
            "seed": 0, "code_version": "git:gpu-box-1234",
            "fingerprints": {"reader": {"path": "ckpt/reader", "sha256": "ab" * 32},
                             "corpus": {"path": "psgs_w100.tsv", "sha256": "cd" * 32}}}
    out.with_name(out.name + ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return out
