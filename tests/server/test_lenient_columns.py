"""The lenient metrics (em_equiv, token F1; issue 15) on the server: secondary, never ranking.

Two submissions where the lenient metric reverses the paper's order: the board still ranks
by EM; the lenient columns are off by default on the page, labelled "not in the paper" with
a tooltip saying what they accept, switched on by the column picker; API and CSV carry them
under their own names; a score stored before they existed still shows.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from benchmark import GoldSet, GoldSplit
from benchmark.equivalence import LENIENT_RULES, gold_keys
from situatedqa_server.extensions import db
from situatedqa_server.models import Score
from situatedqa_server.services import board_cache

from .conftest import api_upload, new_token, register


def _json(client: FlaskClient, url: str) -> dict[str, Any]:
    """A JSON response body as a dict."""
    body = client.get(url).get_json()
    assert isinstance(body, dict)
    return body


def _iso_date(answer: str) -> str | None:
    """A full-date gold answer written as ISO 8601 (EM wrong, em_equiv right), else None."""
    full = [k for k in gold_keys(answer) if k.startswith("d:") and k.count("-") == 2]
    return full[0][2:] if full else None


def _files(gold: GoldSplit) -> tuple[bytes, bytes, int, int]:
    """A: every non-date example exact, dates wrong. B: every date in ISO form, fewer exact.

    Returns both files and the counts (date examples, non-date examples B gets right).
    """
    dates = {e.key: _iso_date(e.answers[0]) for e in gold.examples}
    date_count = sum(v is not None for v in dates.values())
    others = len(gold) - date_count
    keep = max(0, others - date_count + 1)  # B: EM below A's, em_equiv above it
    a, b, kept = [], [], 0
    for e in gold.examples:
        iso = dates[e.key]
        a.append({"key": e.key, "prediction": "wrong a" if iso else e.answers[0]})
        if iso:
            b.append({"key": e.key, "prediction": iso})
        else:
            b.append({"key": e.key, "prediction": e.answers[0] if kept < keep else "wrong b"})
            kept += 1
    lines = [("".join(json.dumps(r) + "\n" for r in f)).encode() for f in (a, b)]
    return lines[0], lines[1], date_count, keep


def test_lenient_columns_are_secondary(app: Flask, release_gold: GoldSet) -> None:
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    file_a, file_b, date_count, keep = _files(gold)
    assert date_count >= 2 and keep < len(gold) - date_count  # the premise of the test
    ids = {name: api_upload(client, token, gold, data, method_name=name,
                            public="true").json["id"]
           for name, data in (("A", file_a), ("B", file_b))}

    board = _json(client, "/api/v1/leaderboards/temp?split=dev")
    assert board["columns"][:5] == ["em", "em_static", "em_sampled", "em_start", "em_any"]
    assert {"em_equiv", "em_equiv_any", "f1", "f1_static", "f1_any"} <= set(board["columns"])
    entries = {e["method_name"]: e for e in board["entries"]}
    a, b = entries["A"]["metrics"], entries["B"]["metrics"]
    assert a["em"] > b["em"] and b["em_equiv"] > a["em_equiv"]  # the lenient order differs
    assert a["em_equiv"] == a["em"]  # A has no date answers right: nothing to add
    assert b["em_equiv"] == 100.0 * (date_count + keep) / len(gold)
    assert entries["A"]["rank"] == 1 and entries["B"]["rank"] == 2  # ranked by EM only
    assert entries["B"]["ci"]["em_equiv"] and entries["B"]["ci"]["f1"]

    by_equiv = _json(client, "/api/v1/leaderboards/temp?split=dev&sort=em_equiv")
    assert [e["method_name"] for e in by_equiv["entries"]] == ["B", "A"]
    assert [e["rank"] for e in by_equiv["entries"]] == [2, 1]  # sorting never re-ranks

    page = client.get("/leaderboards/temp?split=dev").get_data(as_text=True)
    assert 'data-column="em_equiv"' not in page and "lenient" not in page  # off by default
    assert re.search(r'<th class="num sorted" data-column="em" aria-sort="descending">',
                     page)  # EM shown, sorted
    assert 'name="show" value="em_equiv"' in page and 'value="f1_any"' in page  # picker

    shown = client.get("/leaderboards/temp?split=dev&show=em_equiv&show=f1").get_data(
        as_text=True)
    header = re.search(r'<th class="num lenient" data-column="em_equiv">(.*?)</th>',
                       shown, re.S)
    assert header is not None
    assert "not in the paper" in header.group(1)
    assert LENIENT_RULES["em_equiv"].split(".")[0] in header.group(1)  # the tooltip
    assert re.search(r'<th class="num lenient" data-column="f1">', shown)
    assert 'data-column="f1_any"' not in shown  # not picked: not rendered
    # Each row has one cell per shown column: 5 paper columns and the 2 picked.
    first_row = shown[shown.index("<tbody"):].split("</tr>")[0]
    assert first_row.count('<td class="num') == 7
    assert first_row.count('<td class="num lenient"') == 2
    sorted_by = client.get("/leaderboards/temp?split=dev&sort=f1_any").get_data(as_text=True)
    assert re.search(r'<th class="num sorted lenient" data-column="f1_any" aria-sort="\w+">',
                     sorted_by)
    assert 'value="em_equiv" checked' in shown
    assert "show=em_equiv" in shown  # sort and page links keep the picked columns

    rows = list(csv.DictReader(io.StringIO(
        client.get("/leaderboards/temp.csv?split=dev").get_data(as_text=True))))
    assert rows[0]["method_name"] == "A"
    assert float(rows[1]["em_equiv"]) == b["em_equiv"] and rows[1]["em_equiv_lo"]
    assert "f1_any_hi" in rows[0]

    # A score stored before the lenient metrics existed: shown as n/a, nothing breaks.
    with app.app_context():
        row = db.session.scalar(select(Score).where(Score.submission_id == ids["A"]))
        assert row is not None
        row.metrics = {k: v for k, v in row.metrics.items() if k.startswith("em")
                       and not k.startswith("em_equiv")}
        board_cache.bump(db.session(), [("temp", "dev")])
        db.session.commit()
    page = client.get("/leaderboards/temp?split=dev&show=em_equiv").get_data(as_text=True)
    assert "n/a" in page


def test_identification_boards_have_no_lenient_columns(app: Flask) -> None:
    client = app.test_client()
    board = _json(client, "/api/v1/leaderboards/temp-id?split=dev")
    assert "em_equiv" not in board["columns"] and "f1" in board["columns"]
    page = client.get("/leaderboards/temp-id?split=dev").get_data(as_text=True)
    assert "not in the paper" not in page and "column-picker" not in page


def test_rescore_backfills_scores_stored_before_the_lenient_metrics(
        app: Flask, release_gold: GoldSet) -> None:
    """`flask submissions rescore` adds em_equiv / f1 to an old row; EM stays identical."""
    client = app.test_client()
    register(client, "alice")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    file_a, _, _, _ = _files(gold)
    upload = api_upload(client, token, gold, file_a, public="true")
    upload.close()  # sent: the error figures' CIs are completed (as a WSGI server closes it)
    submission_id = upload.json["id"]
    with app.app_context():
        row = db.session.scalar(select(Score).where(Score.submission_id == submission_id))
        assert row is not None and not row.errors_pending
        before = dict(row.metrics), dict(row.ci)
        # As stored before issue 15: no lenient metric, no lenient bits in the codes.
        paper = [k for k in row.metrics if k.startswith("em") and not k.startswith("em_equiv")]
        row.metrics = {k: row.metrics[k] for k in paper}
        row.ci = {k: row.ci[k] for k in paper}
        row.outcomes = bytes(b & 3 for b in row.outcomes)
        db.session.commit()
    result = app.test_cli_runner().invoke(args=["submissions", "rescore"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        row = db.session.scalar(select(Score).where(Score.submission_id == submission_id))
        assert row is not None
        assert row.metrics == before[0] and row.ci == before[1]  # EM identical, lenient back
        assert "em_equiv_any" in row.metrics and "f1_start" in row.metrics
        assert all(b & 16 for b in row.outcomes)
