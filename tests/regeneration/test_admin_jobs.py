"""Regeneration from the admin pages: a job with progress, an uploaded run and its fingerprint."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from situatedqa_server.extensions import db
from situatedqa_server.models import Job, Submission, User
from situatedqa_server.services import baselines as svc
from tests.server.conftest import csrf_token, register

from .conftest import write_qa_output


def organizer(app: Flask) -> FlaskClient:
    """A logged-in client of an admin account."""
    client = app.test_client()
    register(client, "boss")
    with app.app_context():
        db.session.execute(update(User).where(User.username == "boss").values(is_admin=True))
        db.session.commit()
    return client


def upload(client: FlaskClient, output: Path, sidecar: bytes) -> Any:
    """POST the upload form of /admin/jobs."""
    token = csrf_token(client, "/admin/jobs")
    return client.post("/admin/jobs/regenerate-from-file", data={
        "csrf_token": token, "file": (io.BytesIO(output.read_bytes()), output.name),
        "sidecar": (io.BytesIO(sidecar), output.name + ".meta.json")},
        content_type="multipart/form-data", follow_redirects=True)


def test_an_uploaded_gpu_run_becomes_the_entry_and_shows_its_fingerprint(
        app: Flask, release_dir: Path, tmp_path: Path) -> None:
    client = organizer(app)
    output = write_qa_output(release_dir, tmp_path / "bart.geo.dev.jsonl", "bart", "geo")
    sidecar = output.with_name(output.name + ".meta.json").read_bytes()
    page = upload(client, output, sidecar).get_data(as_text=True)
    assert "bart:geo:dev from an uploaded run" in page
    with app.app_context():
        job = db.session.scalars(select(Job)).one()
        # the job ran (eagerly here): one scoring step and the replacing transaction
        assert (job.status, job.done, job.total) == ("done", 2, 2)
        assert job.params["step"].startswith("replacing 1 entries")
        entry = db.session.scalars(select(Submission)).one()
        assert (entry.baseline_runner, entry.track, entry.split) == ("bart", "geo", "dev")
        assert entry.is_baseline and entry.is_public
        assert entry.method_name == "BART (query-modified)"
        record = entry.baseline_settings or {}
        assert record["code_version"] == "git:gpu-box-1234"
        assert record["fingerprints"]["corpus"]["sha256"] == "cd" * 32
        entry_id = entry.id
    # the jobs page and the entry's page show the run's fingerprints
    jobs_page = client.get("/admin/jobs").get_data(as_text=True)
    assert "ab" * 6 in jobs_page and "git:gpu-box-1234" in jobs_page
    detail = app.test_client().get(f"/submissions/{entry_id}").get_data(as_text=True)
    assert "cd" * 6 in detail and "psgs_w100.tsv" in detail and "git:gpu-box-1234" in detail


def test_an_upload_without_fingerprints_or_rejected_by_the_scorer_starts_no_job(
        app: Flask, release_dir: Path, tmp_path: Path) -> None:
    client = organizer(app)
    output = write_qa_output(release_dir, tmp_path / "bart.geo.dev.jsonl", "bart", "geo")
    meta = json.loads(output.with_name(output.name + ".meta.json").read_text())
    page = upload(client, output, json.dumps({**meta, "fingerprints": {}}).encode())
    assert "key &#39;fingerprints&#39; is missing or empty" in page.get_data(as_text=True)
    # a sidecar saying temp for a geo file: the scorer rejects the records
    page = upload(client, output, json.dumps({**meta, "track": "temp"}).encode())
    assert "the scorer rejects the file" in page.get_data(as_text=True)
    page = upload(client, output, b"{not json")
    assert "not readable JSON" in page.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(select(Job)).all() == []
        assert db.session.scalars(select(Submission)).all() == []


def test_the_reference_job_reports_every_step(app: Flask) -> None:
    client = organizer(app)
    token = csrf_token(client, "/admin/jobs")
    client.post("/admin/jobs/regenerate/reference", data={"csrf_token": token})
    files = svc.discover(svc.REFERENCE_DIR)
    with app.app_context():
        job = db.session.scalars(select(Job)).one()
        assert (job.status, job.total, job.done) == ("done", len(files) + 1, len(files) + 1)
        assert job.params["step"] == f"replacing {len(files)} entries in one transaction"
        entries = db.session.scalars(select(Submission)).all()
        committed = {svc.read_sidecar(path)["runner"] for _, path in files}
        assert {s.baseline_runner for s in entries} == committed
        assert {"id-random", "id-tfidf", "nn-train"} <= committed
        nearest = [s for s in entries if s.baseline_runner == "nn-train"]
        # the quick start's QA reference: every QA board, dev and test, public baselines
        assert sorted((s.track, s.split) for s in nearest) == sorted(
            (t, p) for t in ("temp", "geo", "present", "curprev") for p in ("dev", "test"))
        for entry in nearest:
            assert entry.is_baseline and entry.is_public and len(entry.scores) == 1
            assert entry.method_name == "Nearest training question (query-modified, MiniLM)"
            assert (entry.baseline_settings or {})["settings"]["embedder"] == "minilm"
            assert entry.scores[0].n > 0
