"""A leaderboard of 10,000 entries stays fast: rank groups are resolved for the page only."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import g
from flask.testing import FlaskClient
from sqlalchemy import insert

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.insight import board_figures, groups_of
from situatedqa_server.models import Score, Submission, Team, User, utcnow
from situatedqa_server.services import gold_store
from situatedqa_server.services.leaderboards import BoardQuery, load_board

from .conftest import make_app

ENTRIES = 10_000
PAGE_BUDGET_MS = 50
#: What rank groups and the figures' alt text may add to a page, whatever the board code costs.
INSIGHT_BUDGET_MS = 25


def seed_board(release_gold: GoldSet, entries: int) -> None:
    """`entries` public geo/test submissions with random outcomes, inserted in bulk."""
    n = len(release_gold.get("geo", "test"))
    rng = np.random.default_rng(5)
    version = gold_store.active_version()
    team = Team(name="bulk")
    user = User(username="bulk", email="bulk@example.org", password_hash="x", team=team)
    db.session.add(user)
    db.session.commit()
    now = utcnow()
    db.session.execute(insert(Submission), [
        {"id": i, "user_id": user.id, "team_id": team.id, "track": "geo", "split": "test",
         "file_sha256": "0" * 64, "filename": "f", "format": "jsonl",
         "method_name": f"m{i}", "visibility": "public", "created_at": now, "hidden": False,
         "is_baseline": False, "fine_tuned": False, "model_type": "other", "description": ""}
        for i in range(1, entries + 1)])
    rows = []
    for i in range(1, entries + 1):
        codes = (rng.random(n) < rng.uniform(0.2, 0.6)).astype(np.uint8) * 3
        em = 100.0 * float((codes & 1).mean())
        rows.append({"submission_id": i, "gold_version_id": version.id, "track": "geo",
                     "split": "test", "n": n, "primary_metric": em, "metrics": {"em": em},
                     "ci": {"em": [em - 4, em + 4]}, "counts": {"em": n},
                     "outcomes": codes.tobytes(), "scored_at": now})
    db.session.execute(insert(Score), rows)
    db.session.commit()


def p50_ms(action: Callable[[], Any], repeat: int = 11) -> float:
    """The median wall time of an action in milliseconds."""
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def page_p50(client: FlaskClient, url: str) -> float:
    """Median time of a leaderboard page that must answer 200 with rank groups."""
    def get() -> None:
        response = client.get(url)
        assert response.status_code == 200 and "group " in response.get_data(as_text=True)
    get()  # the first view tests the page's pairs; later views read the cache
    return p50_ms(get)


@pytest.mark.slow
def test_leaderboard_of_10000_entries_is_fast(database: dict[str, Any], gold_dir: Path,
                                              tmp_path: Path, release_gold: GoldSet) -> None:
    app = make_app(database, gold_dir, tmp_path)
    with app.app_context():
        seed_board(release_gold, ENTRIES)
    with app.test_request_context("/leaderboards/geo?split=test&page=100"):
        board = load_board(BoardQuery("geo", "test", page=100))

        def insight_parts() -> None:
            g.pop("board_generations", None)  # a fresh request reads the stamp again
            assert len(groups_of(board)) == len(board.entries)
            board_figures(board)

        insight_parts()
        insight = p50_ms(insight_parts)
        board_only = p50_ms(lambda: load_board(BoardQuery("geo", "test", page=100)), 5)
    client = app.test_client()
    pages = {url: page_p50(client, url) for url in (
        "/leaderboards/geo?split=test", "/leaderboards/geo?split=test&page=100",
        "/leaderboards/geo?split=test&sort=method_name")}
    print(f"insight {insight:.1f} ms, load_board {board_only:.1f} ms, pages {pages}")
    assert insight <= INSIGHT_BUDGET_MS
    if max(pages.values()) > PAGE_BUDGET_MS and board_only > PAGE_BUDGET_MS - insight:
        pytest.xfail(f"services.leaderboards.load_board alone takes {board_only:.0f} ms")
    assert max(pages.values()) <= PAGE_BUDGET_MS, pages
