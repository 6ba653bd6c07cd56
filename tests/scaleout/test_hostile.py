"""The hostile-input corpus (tests/hostile.py) against a real gunicorn on PostgreSQL.

Every bomb is refused with its status and a message naming the file; nothing is stored and
no quota is spent; no request answers 500; the server answers normally afterwards. The
CPU and memory each costs are measured by scripts/bench_hostile.py, not here.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests import hostile

from .conftest import Deployment

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _stored(deployment: Deployment) -> tuple[Any, Any]:
    return (deployment.scalar("SELECT count(*) FROM submission"),
            deployment.scalar("SELECT coalesce(sum(used), 0) FROM quota_counter"))


def test_the_hostile_corpus_is_refused_and_nothing_is_spent(deployment: Deployment) -> None:
    """One server for the whole corpus (a deployment costs a migration and a gold import)."""
    url = deployment.web("web")
    before = _stored(deployment)
    for item in hostile.FILES:
        response = requests.post(
            f"{url}/api/v1/submissions",
            headers={"Authorization": f"Bearer {deployment.token}"},
            data={"track": "temp", "split": "test", "method_name": "hostile"},
            files={"file": (item.filename, item.build())}, timeout=120)
        assert response.status_code == item.status, (item.name, response.text[:2000])
        error = response.json()["error"]
        text = error["message"] + " ".join(
            p["message"] for p in (error["details"] or {}).get("problems", []))
        assert item.says in text, (item.name, text[:2000])
        assert item.filename in response.text, item.name
        assert _stored(deployment) == before, item.name
    for route in hostile.ROUTES:
        response = requests.post(f"{url}{route}", data=hostile.NAMELESS_PART,
                                 headers={"Content-Type": hostile.NAMELESS_TYPE}, timeout=30)
        assert response.status_code == 400, (route, response.text[:500])
        for body in hostile.DEEP_BODIES:
            response = requests.post(f"{url}{route}", data=body,
                                     headers={"Content-Type": "application/json"}, timeout=30)
            assert response.status_code == 400, (route, len(body), response.text[:500])
    # Still serving.
    assert requests.get(f"{url}/api/v1/tracks", timeout=10).status_code == 200
    assert _stored(deployment) == before
