"""The embedded default: SQLite and the SQLite broker, one job worker, no other server.

The SQLAlchemy transport loses a message whose worker is killed; the job still completes
after a restart because its progress lives in the database and the sweep resends it.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from pathlib import Path

import sqlalchemy as sa

from benchmark import GoldSet
from tests.server.conftest import prediction_file

from .conftest import PASSWORD, Deployment, wait_for
from .test_scaleout import job_state, write_update


def embedded(tmp_path: Path, release_dir: Path) -> Deployment:
    """A deployment on an SQLite file with no broker setting."""
    database = tmp_path / "embedded.db"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("SITUATEDQA_") and key != "DATABASE_URL"}
    env |= {"DATABASE_URL": f"sqlite:///{database}", "SECRET_KEY": secrets.token_hex(16),
            "SITUATEDQA_DATA": str(release_dir), "SITUATEDQA_BOOTSTRAP_RESAMPLES": "2000",
            "SITUATEDQA_JOB_LEASE_SECONDS": "3", "SITUATEDQA_JOB_SWEEP_SECONDS": "1",
            "SITUATEDQA_RESCORE_BATCH_SIZE": "5"}
    deployment = Deployment(tmp_path, env, sa.create_engine(f"sqlite:///{database}"))
    deployment.flask("db", "upgrade")
    deployment.flask("gold", "import")
    deployment.flask("users", "create", "alice", "--email", "a@example.org", "--password",
                     PASSWORD)
    deployment.token = deployment.flask("tokens", "create", "alice").strip().splitlines()[-1]
    return deployment


def test_embedded_worker_resumes_after_kill_9(tmp_path: Path, release_dir: Path,
                                              release_gold: GoldSet) -> None:
    deployment = embedded(tmp_path, release_dir)
    try:
        url = deployment.web("instance", workers=1)
        dev = release_gold.get("temp", "dev")
        first = deployment.upload(url, prediction_file(dev, correct=7), "temp", "dev")
        assert first.status_code == 201, first.text
        with sqlite3.connect(tmp_path / "embedded.db") as connection:  # 59 more rows
            for n in range(59):
                connection.execute(
                    "INSERT INTO submission (user_id, team_id, track, split, file_sha256, "
                    "filename, format, method_name, description, model_type, fine_tuned, "
                    "visibility, hidden, is_baseline, created_at) SELECT user_id, team_id, "
                    "track, split, file_sha256, filename, format, method_name || ?, "
                    "description, model_type, fine_tuned, visibility, hidden, is_baseline, "
                    "created_at FROM submission WHERE id = ?", (f" {n}", first.json()["id"]))
        update = write_update(deployment, release_gold)
        deployment.flask("gold", "build", "--from-update", str(update), "--name", "v2",
                         "--as-of", "2023-06-01")
        worker = deployment.worker("instance")
        deployment.flask("gold", "activate", "v2", "--background")
        wait_for(lambda: job_state(deployment)[1] >= 5, 120, "a first batch")
        deployment.kill(worker)
        status, done, total = job_state(deployment)
        assert status == "running" and done < total  # killed mid-job
        deployment.worker("instance")
        wait_for(lambda: job_state(deployment)[0] == "done", 180, "the job to finish")
        assert job_state(deployment) == ("done", 60, 60)
        assert deployment.scalar("SELECT name FROM gold_version WHERE is_active = 1") == "v2"
        assert deployment.scalar(
            "SELECT count(*) FROM score JOIN gold_version v ON v.id = score.gold_version_id "
            "WHERE v.name = 'v2'") == 60
        listing = json.dumps(deployment.flask("jobs", "list"))
        assert "done" in listing
    finally:
        for process in deployment.processes:
            if process.poll() is None:
                deployment.kill(process)
        deployment.engine.dispose()
