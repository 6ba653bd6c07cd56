"""The pages' words and links: metrics pages from the metric card's source, their links,
scores on My submissions, moderation search and paging, job times, labelled headers, a
submission's chart in groups, and the empty board's sentence under filters."""

from __future__ import annotations

import html
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from benchmark import metric_card
from situatedqa_server import admin
from situatedqa_server.extensions import db
from situatedqa_server.models import Job, Submission

from .test_snapshots import freeze, organizer

CARD = Path(__file__).resolve().parents[2] / "benchmark" / "README.md"


def test_metric_card_section_is_generated_from_the_same_source() -> None:
    text = CARD.read_text(encoding="utf-8")
    assert metric_card.markdown() in text


def test_metrics_page_defines_every_column(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    page = client.get("/metrics/temp").get_data(as_text=True)
    for metric in ("em", "em_static", "em_sampled", "em_start", "em_any", "em_equiv_static",
                   "f1_any"):
        assert f'id="{metric}"' in page
    assert metric_card.NORMALIZATION in page and "Unicode NFD" in page
    assert "<strong>20 resamples</strong>" in page  # the server's BOOTSTRAP_RESAMPLES
    assert "seed 20211107" in page and "p &gt;= 0.05" in page  # CI method, rank groups
    test_row = re.search(r"<tr><td>test</td>.*?</tr>", page, re.S)
    assert test_row is not None
    row = test_row.group(0)
    assert "2,795" in row and "400" in row and "1,482" in row and "1,472 in the paper" in row
    assert "923 in the paper" in row
    geo = client.get("/metrics/geo-id").get_data(as_text=True)
    assert 'id="f1"' in geo and "harmonic mean" in geo
    assert client.get("/metrics/nope").status_code == 404


def test_metrics_are_linked_from_headers_home_and_api(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    board = html.unescape(client.get("/leaderboards/temp?split=test").get_data(as_text=True))
    assert 'href="/metrics/temp#em_static"' in board and 'href="/metrics/temp#em"' in board
    assert 'title="em"' not in board  # the tooltip is the definition, not the key
    assert f'title="{metric_card.definition("temp", "em")} (sort by EM)"' in board
    home = client.get("/").get_data(as_text=True)
    for href in ('/metrics/"', '/insight/compare"', '/snapshots/"', '/versions/"',
                 '/docs/api"'):
        assert href in home, href
    assert 'href="/metrics/temp"' in home
    assert "/metrics/" in client.get("/api/v1/openapi.json").json["info"]["description"]


def test_my_submissions_show_the_score(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    page = client.get("/submissions/").get_data(as_text=True)
    strong = client.get(f"/api/v1/submissions/{seeded['ids']['strong-dev']}",
                        headers={"Authorization": f"Bearer {seeded['token']}"}).json
    assert f"EM {strong['metrics']['em']:.2f}" in page
    assert page.count('class="num score">EM ') == 5  # every scored submission


def test_moderation_search_and_paging(seeded: dict[str, Any],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = organizer(seeded)
    found = root.get("/admin/submissions?q=strong").get_data(as_text=True)
    assert "2 submissions matching" in found
    assert "strong dev" in found and "weak dev" not in found
    assert "1 submission matching" in root.get(
        f"/admin/submissions?q={seeded['ids']['private']}").get_data(as_text=True)
    assert "0 submissions" in root.get("/admin/submissions?q=50%25_x").get_data(as_text=True)
    monkeypatch.setattr(admin, "PAGE_SIZE", 2)
    first = root.get("/admin/submissions?q=e").get_data(as_text=True)
    assert "page 1 of 3" in first and 'href="/admin/submissions?page=2&amp;q=e"' in first
    last = root.get("/admin/submissions?q=e&page=3").get_data(as_text=True)
    assert "page 3 of 3" in last and ">older<" not in last and ">newer<" in last


def test_job_times_are_seconds_in_utc(seeded: dict[str, Any]) -> None:
    root = organizer(seeded)
    with root.application.app_context():
        db.session.add(Job(kind="regenerate", actor="root", params={"mode": "reference"},
                           status="done", started_at=datetime(2026, 3, 4, 5, 6, 7, 891011),
                           finished_at=datetime(2026, 3, 4, 5, 9, 1, 5)))
        db.session.commit()
    page = root.get("/admin/jobs").get_data(as_text=True)
    assert "2026-03-04 05:06:07 UTC" in page and "2026-03-04 05:09:01 UTC" in page
    assert "891011" not in page


def test_snapshot_and_rank_change_headers_are_labelled(seeded: dict[str, Any]) -> None:
    root = organizer(seeded)
    page = root.get(freeze(root)).get_data(as_text=True)
    assert ">Static</th>" in page and ">em_static</th>" not in page
    ranks = seeded["client"].get("/versions/ranks/temp?split=test").get_data(as_text=True)
    assert ">em (" not in ranks


def test_submission_chart_groups_the_papers_metrics_first(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    page = html.unescape(client.get(f"/submissions/{seeded['ids']['strong-dev']}").get_data(
        as_text=True))
    table = page.split('class="plot-data"')[1].split("</table>")[0]
    groups = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td>", table)
    names = [group for group, _ in groups]
    assert names[:5] == ["the paper's metrics"] * 5
    assert [label for _, label in groups[:5]] == ["EM", "Static", "Sampled", "Start", "EM Any"]
    assert names[5:] == ["EM equiv (not in the paper)"] * 5 + ["token F1 (not in the paper)"] * 5


def test_empty_board_under_filters_says_so(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    with client.application.app_context():
        for name in ("strong-test", "weak-test"):
            db.session.get(Submission, seeded["ids"][name]).is_baseline = True
        db.session.commit()
    hidden = client.get("/leaderboards/temp?split=test&hide_baselines=1").get_data(as_text=True)
    assert "No entries match these filters." in hidden and "No published entries yet" not in hidden
    assert "No entries match these filters: the charts follow" in hidden  # no chart of them
    assert 'src="/insight/leaderboards/temp/plots/top.png' not in hidden
    empty = client.get("/leaderboards/geo?split=test").get_data(as_text=True)
    assert "No published entries yet." in empty
    shown = client.get("/leaderboards/temp?split=test").get_data(as_text=True)
    assert "/insight/leaderboards/temp/plots/top.png?split=test" in shown
