"""Redis killed under load: every committed upload got its 201, and nothing answered 500.

A Redis of the test's own holds the rate limits of a real gunicorn; eight clients upload
(test and dev splits) while it is killed with SIGKILL. Uploads are scored in the request
and need no broker: they go on without their limit (fail open), logins answer 503 (fail
closed). The job broker stays the machine's Redis: only the limiter's storage dies.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass

import pytest
import redis
import requests

from benchmark import GoldSet
from tests.server.conftest import prediction_file

from .conftest import PASSWORD, Deployment, free_port, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
CLIENTS = 8


@dataclass
class Outcome:
    """One upload as its client saw it."""

    method_name: str
    split: str
    status: int | None  # None: no answer at all (a connection error)
    submission_id: int | None
    sent_at: float


def _uploader(url: str, token: str, gold: GoldSet, client: int, stop: threading.Event,
              outcomes: list[Outcome]) -> None:
    session = requests.Session()
    attempt = 0
    while not stop.is_set():
        attempt += 1
        split = "test" if attempt % 2 else "dev"
        split_gold = gold.get("geo", split)
        name = f"client {client} upload {attempt}"
        # Other predictions each time: a team's identical predictions are refused (409).
        data = prediction_file(split_gold, attempt % len(split_gold), wrong=name)
        sent_at = time.monotonic()
        try:
            response = session.post(
                f"{url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"},
                data={"track": "geo", "split": split, "method_name": name},
                files={"file": ("p.jsonl", data)}, timeout=60)
        except requests.RequestException:
            outcomes.append(Outcome(name, split, None, None, sent_at))
            continue
        identifier = response.json().get("id") if response.status_code == 201 else None
        outcomes.append(Outcome(name, split, response.status_code, identifier, sent_at))


def test_killing_the_limiters_redis_mid_load(deployment: Deployment,
                                             release_gold: GoldSet) -> None:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    store = deployment.start([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], "redis", "redis.log")
    wait_for(lambda: _pings(port), 20, "the test's Redis")
    deployment.env["SITUATEDQA_RATELIMIT_STORAGE_URI"] = f"redis://127.0.0.1:{port}/0"
    deployment.env["SITUATEDQA_TEST_DAILY_QUOTA"] = "100000"
    deployment.env["SITUATEDQA_TEST_TOTAL_QUOTA"] = "100000"
    url = deployment.web("web")
    assert _login(url) == 200  # the limit is checked while its storage is up

    stop = threading.Event()
    outcomes: list[Outcome] = []
    threads = [threading.Thread(target=_uploader, daemon=True, args=(
        url, deployment.token, release_gold, client, stop, outcomes)) for client in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: sum(o.status == 201 for o in outcomes) >= CLIENTS, 120,
                 "uploads before the kill")
        deployment.kill(store)
        killed_at = time.monotonic()
        wait_for(lambda: sum(o.status == 201 and o.sent_at > killed_at for o in outcomes)
                 >= 2 * CLIENTS, 120, "uploads answered 201 after the kill")
        login_status = _login(url)
    finally:
        stop.set()
        for thread in threads:
            thread.join(90)

    assert all(o.status is not None and o.status < 500 for o in outcomes), _summary(outcomes)
    answered = {o.submission_id: o for o in outcomes if o.status == 201}
    with deployment.engine.connect() as connection:
        stored = dict(connection.exec_driver_sql(
            "SELECT id, method_name FROM submission").all())
    # Every stored upload was answered 201 with its id; and every 201 names a stored one.
    assert set(stored) == set(answered), (len(stored), len(answered))
    assert all(answered[i].method_name == name for i, name in stored.items())
    tests = sum(o.split == "test" for o in answered.values())
    assert deployment.scalar(
        "SELECT coalesce(sum(used), 0) FROM quota_counter WHERE period = 'total'") == tests
    assert login_status == 503  # logins fail closed while the limit cannot be checked


def _summary(outcomes: list[Outcome]) -> dict[int | None, int]:
    counts: dict[int | None, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return counts


def _pings(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def _login(url: str) -> int:
    """A login attempt through the form (its CSRF token from the page)."""
    session = requests.Session()
    page = session.get(f"{url}/auth/login", timeout=30).text
    token = page.split('name="csrf_token" type="hidden" value="', 1)[1].split('"', 1)[0]
    response = session.post(f"{url}/auth/login", data={
        "csrf_token": token, "username": "alice", "password": PASSWORD},
        allow_redirects=False, timeout=30)
    return int(response.status_code) if response.status_code != 302 else 200
