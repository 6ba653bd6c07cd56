"""Several instances and job workers on one database: shared state, kill -9, retries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from benchmark import GoldSet
from tests.server.conftest import prediction_file
from tests.versions.conftest import update_records

from .conftest import Deployment, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def write_update(deployment: Deployment, gold: GoldSet) -> Path:
    """The synthetic gold update of the version tests, as a file."""
    path = deployment.root / "update.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in update_records(gold)))
    return path


def job_state(deployment: Deployment) -> tuple[str, int, int]:
    """Status, done and total of the newest job."""
    with deployment.engine.connect() as connection:
        row = connection.exec_driver_sql(
            "SELECT status, done, total FROM job ORDER BY id DESC LIMIT 1").one()
    return str(row[0]), int(row[1]), int(row[2])


def test_two_instances_share_uploads_versions_and_jobs(deployment: Deployment,
                                                       release_gold: GoldSet) -> None:
    a, b = deployment.web("a"), deployment.web("b")
    deployment.worker()
    dev = release_gold.get("temp", "dev")
    uploaded = deployment.upload(a, prediction_file(dev, correct=len(dev) // 2), "temp", "dev")
    assert uploaded.status_code == 201, uploaded.text
    sid = uploaded.json()["id"]
    auth = {"Authorization": f"Bearer {deployment.token}"}
    # B has never seen the file: its per-example rows, plots and exports come from the database.
    examples = requests.get(f"{b}/api/v1/submissions/{sid}/examples", headers=auth, timeout=60)
    assert examples.status_code == 200 and len(examples.json()["examples"]) == len(dev)
    for path in (f"/insight/submissions/{sid}/plots/scores.png",
                 "/insight/leaderboards/temp.csv?split=dev", f"/insight/submissions/{sid}/pwc.json",
                 "/insight/leaderboards/temp/plots/top.svg?split=dev"):
        assert requests.get(b + path, timeout=60).status_code == 200, path
    test = release_gold.get("temp", "test")
    assert deployment.upload(a, prediction_file(test), "temp", "test").status_code == 201

    # A builds and activates a version; the worker rescores; B serves it.
    update = write_update(deployment, release_gold)
    deployment.flask("gold", "build", "--from-update", str(update), "--name", "v2",
                     "--as-of", "2023-06-01", instance="a")
    deployment.flask("gold", "activate", "v2", "--background", instance="a")
    wait_for(lambda: job_state(deployment)[0] == "done", 120, "the rescore job")
    board = requests.get(f"{b}/api/v1/leaderboards/temp?split=dev", timeout=30).json()
    assert board["gold_version"] == "v2"
    assert deployment.scalar(
        "SELECT count(*) FROM submission s WHERE NOT EXISTS (SELECT 1 FROM score x JOIN "
        "gold_version v ON v.id = x.gold_version_id WHERE x.submission_id = s.id AND "
        "v.name = 'v2')") == 0
    listing = deployment.flask("jobs", "list", instance="b")
    assert "rescore" in listing and "done" in listing and "v2" in listing


def test_kill_9_of_the_job_worker_mid_rescore(deployment: Deployment,
                                              release_gold: GoldSet) -> None:
    url = deployment.web("a", workers=1)
    dev = release_gold.get("temp", "dev")
    first = deployment.upload(url, prediction_file(dev, correct=100), "temp", "dev")
    assert first.status_code == 201, first.text
    with deployment.engine.begin() as connection:  # 239 more submissions of the same file
        connection.exec_driver_sql(
            "INSERT INTO submission (user_id, team_id, track, split, file_sha256, filename, "
            "format, method_name, description, model_type, fine_tuned, visibility, hidden, "
            "is_baseline, created_at) SELECT user_id, team_id, track, split, file_sha256, "
            "filename, format, method_name || ' ' || g, description, model_type, fine_tuned, "
            "visibility, hidden, is_baseline, created_at FROM submission, "
            f"generate_series(1, 239) g WHERE submission.id = {first.json()['id']}")
    total = deployment.scalar("SELECT count(*) FROM submission")
    assert total >= 200
    update = write_update(deployment, release_gold)
    deployment.flask("gold", "build", "--from-update", str(update), "--name", "v2",
                     "--as-of", "2023-06-01")
    worker = deployment.worker()
    deployment.flask("gold", "activate", "v2", "--background")
    wait_for(lambda: job_state(deployment)[1] >= 30, 120, "30 submissions rescored")
    deployment.kill(worker)
    status, done, _ = job_state(deployment)
    assert status == "running" and done < total

    deployment.worker("worker-2")
    wait_for(lambda: job_state(deployment)[0] == "done", 180, "the job to finish")
    assert job_state(deployment) == ("done", total, total)
    per_submission = deployment.scalar(
        "SELECT count(*) FROM (SELECT s.id FROM submission s JOIN score x ON "
        "x.submission_id = s.id JOIN gold_version v ON v.id = x.gold_version_id "
        "WHERE v.name = 'v2' GROUP BY s.id HAVING count(*) = 1) one")
    assert per_submission == total
    assert deployment.scalar("SELECT name FROM gold_version WHERE is_active") == "v2"


def test_kill_9_of_web_workers_mid_upload(deployment: Deployment, release_gold: GoldSet) -> None:
    url = deployment.web("a", workers=2)
    process = deployment.processes[-1]
    dev = release_gold.get("geo", "dev")
    created: list[int] = []
    failures: list[str] = []

    def client(index: int) -> None:
        for attempt in range(6):
            data = prediction_file(dev, correct=index * 10 + attempt)
            try:
                response = deployment.upload(url, data, "geo", "dev")
            except requests.RequestException as exc:
                failures.append(type(exc).__name__)
                continue
            if response.status_code == 201:
                created.append(response.json()["id"])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for _ in range(3):  # kill -9 the web workers (the master starts new ones)
        time.sleep(0.7)
        children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True,
                                  text=True).stdout.split()
        for pid in children:
            os.kill(int(pid), signal.SIGKILL)
    for thread in threads:
        thread.join(120)
    assert created, f"no upload succeeded ({failures})"
    # Every 201 has its row, its score and its file; no file or row stands without the other.
    ids = ",".join(map(str, created))
    assert deployment.scalar(f"SELECT count(*) FROM submission WHERE id IN ({ids})") == len(created)
    assert deployment.scalar(
        f"SELECT count(DISTINCT submission_id) FROM score WHERE submission_id IN ({ids})"
    ) == len(created)
    assert deployment.scalar(
        "SELECT count(*) FROM submission s LEFT JOIN stored_file f ON f.sha256 = s.file_sha256 "
        "WHERE f.sha256 IS NULL") == 0
    assert deployment.scalar(
        "SELECT count(*) FROM stored_file f WHERE NOT EXISTS (SELECT 1 FROM submission s "
        "WHERE s.file_sha256 = f.sha256) AND NOT EXISTS (SELECT 1 FROM gold_version v WHERE "
        "v.gold_sha256 = f.sha256)") == 0


def test_rate_limits_count_across_workers(deployment: Deployment) -> None:
    env_limit = "10 per minute"
    deployment.env["SITUATEDQA_LOGIN_RATE_LIMIT"] = env_limit
    url = deployment.web("a", workers=4)
    session = requests.Session()
    statuses = []
    for _ in range(30):
        page = session.get(f"{url}/auth/login", timeout=10)
        token = page.text.split('name="csrf_token" type="hidden" value="')[1].split('"')[0]
        statuses.append(session.post(f"{url}/auth/login", data={
            "csrf_token": token, "username": "alice", "password": "wrong password!!"},
            timeout=10).status_code)
    assert statuses.count(429) == 20, statuses


def test_idempotency_key_on_a_real_server(deployment: Deployment,
                                          release_gold: GoldSet) -> None:
    url = deployment.web("a")
    key = uuid.uuid4().hex
    test = release_gold.get("geo", "test")
    data = prediction_file(test)
    headers = {"Idempotency-Key": key}

    def upload(payload: bytes) -> Any:
        return requests.post(f"{url}/api/v1/submissions", headers={
            "Authorization": f"Bearer {deployment.token}", **headers},
            data={"track": "geo", "split": "test", "method_name": "m"},
            files={"file": ("p.jsonl", payload)}, timeout=60)

    first, again = upload(data), upload(data)
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    other = upload(prediction_file(test, correct=3))
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert deployment.scalar("SELECT count(*) FROM submission") == 1
    assert deployment.scalar("SELECT sum(used) FROM quota_counter WHERE period = 'total'") == 1
