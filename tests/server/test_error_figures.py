"""The situated error figures and the knowledge horizon on the server (not in the paper).

An upload stores them with its score, equal to the benchmark's own score of the same file
with the split's error tables, and leaves the paper's metrics as they were. They are in the
submission API (with the horizon's curve), the board JSON, the CSV and the OpenAPI columns;
the board page shows them only when picked; the submission page draws them per partition,
on the test split too (aggregates only); the compare page gives their paired differences.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Mapping
from html import unescape
from types import SimpleNamespace
from typing import Any

from flask import Flask, render_template, url_for
from flask.testing import FlaskClient
from sqlalchemy import select

from benchmark import TRACK_INFO, GoldSet, parse_predictions, score
from benchmark.error_classes import error_tables
from benchmark.situations import date_span
from situatedqa_server.extensions import db
from situatedqa_server.models import Score

from .conftest import TEST_CONFIG, api_upload, new_token, register


def earliest_answer_file(gold: GoldSet, split: str) -> bytes:
    """temp: every example answered with the answer of its question's earliest dated context
    (a stale model: the later contexts' answers come out outdated or right)."""
    examples = gold.get("temp", split).examples
    first: dict[int, str] = {}
    since: dict[int, int] = {}
    for example in examples:
        span = date_span(example.context["date"])
        if span is not None and span[0] < since.get(example.id, 1 << 62):
            since[example.id], first[example.id] = span[0], example.answers[0]
    for example in examples:
        first.setdefault(example.id, example.answers[0])
    return "".join(json.dumps({"key": e.key, "prediction": first[e.id]}) + "\n"
                   for e in examples).encode()


def us_answer_file(gold: GoldSet, split: str) -> bytes:
    """geo: every example answered with its question's United States answer where it has
    one, else its own first answer."""
    examples = gold.get("geo", split).examples
    us: dict[int, str] = {}
    for example in examples:
        if example.context["location"].lower() == "united states":
            us[example.id] = example.answers[0]
    by_id: dict[int, list[str]] = defaultdict(list)
    for example in examples:
        by_id[example.id].append(us.get(example.id, example.answers[0]))
    return "".join(json.dumps({"key": e.key, "prediction": us.get(e.id, e.answers[0])}) + "\n"
                   for e in examples).encode()


def expected(release_gold: GoldSet, track: str, split: str, data: bytes) -> object:
    """The benchmark's score of a file with the split's error tables (the server's resamples)."""
    gold = release_gold.get(track, split)
    predictions = parse_predictions(data, gold, filename="predictions.jsonl")
    return score(gold, predictions, resamples=TEST_CONFIG["BOOTSTRAP_RESAMPLES"],
                 errors=error_tables(release_gold, track, split))


def test_an_upload_stores_the_benchmarks_error_figures_and_horizon(
        client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "stale")
    token = new_token(client)
    data = earliest_answer_file(release_gold, "dev")
    upload = api_upload(client, token, release_gold.get("temp", "dev"), data, public="true")
    assert upload.status_code == 201, upload.get_json()
    body = upload.get_json()
    want = expected(release_gold, "temp", "dev", data)
    info = TRACK_INFO["temp"]
    # The upload's own response has the figures; their CIs follow it (complete_errors).
    for name in info.error_metrics:
        assert body["metrics"][name] == want.metrics[name], name  # type: ignore[attr-defined]
        assert body["ci"][name] is None, name
    assert body["metrics"]["outdated_rate"] > 20  # the crafted file is mostly stale
    # The response is not closed: a read of the submission completes the row itself.
    body = client.get(f"/api/v1/submissions/{body['id']}",
                      headers={"Authorization": f"Bearer {token}"}).get_json()
    for name in info.error_metrics:
        assert body["metrics"][name] == want.metrics[name], name  # type: ignore[attr-defined]
        ci = want.ci[name]  # type: ignore[attr-defined]
        assert body["ci"][name] == (list(ci) if ci else None), name
        assert body["counts"][name] == want.counts[name], name  # type: ignore[attr-defined]
    # The paper's metrics are those of a score without error tables, bit for bit.
    plain = score(release_gold.get("temp", "dev"),
                  parse_predictions(data, release_gold.get("temp", "dev"),
                                    filename="predictions.jsonl"),
                  resamples=TEST_CONFIG["BOOTSTRAP_RESAMPLES"])
    for name in info.metrics:
        assert body["metrics"][name] == plain.metrics[name], name
    horizon = want.horizon.to_json()  # type: ignore[attr-defined]
    assert body["horizon"] == horizon
    assert body["metrics"]["horizon"] == horizon["year"]
    assert body["ci"]["horizon"] == horizon["ci"]
    # The same on the submission's own endpoint.
    again = client.get(f"/api/v1/submissions/{body['id']}",
                       headers={"Authorization": f"Bearer {token}"}).get_json()
    assert again["horizon"] == horizon and again["metrics"] == body["metrics"]


def test_the_board_shows_error_columns_only_when_picked(client: FlaskClient,
                                                        release_gold: GoldSet) -> None:
    register(client, "placer")
    token = new_token(client)
    gold = release_gold.get("geo", "dev")
    data = us_answer_file(release_gold, "dev")
    upload = api_upload(client, token, gold, data, public="true")
    assert upload.status_code == 201, upload.get_json()
    upload.close()  # as a WSGI server does once it has sent it: the CIs are completed then
    want = expected(release_gold, "geo", "dev", data)
    us_default = want.metrics["us_default_rate"]  # type: ignore[attr-defined]
    assert us_default and us_default > 5

    page = client.get("/leaderboards/geo?split=dev").get_data(as_text=True)
    assert 'data-column="us_default_rate"' not in page  # off by default
    assert 'value="us_default_rate"' in page and "Error classes" in page  # in the picker
    picked = client.get("/leaderboards/geo?split=dev&show=us_default_rate").get_data(
        as_text=True)
    assert 'data-column="us_default_rate"' in picked
    assert f"{us_default:.2f}" in picked

    board = client.get("/api/v1/leaderboards/geo?split=dev&sort=us_default_rate").get_json()
    assert set(TRACK_INFO["geo"].error_metrics) <= set(board["columns"])
    entry = next(e for e in board["entries"] if e["id"] == upload.get_json()["id"])
    assert entry["metrics"]["us_default_rate"] == us_default
    assert entry["rank"] is not None  # sorting by it does not change what ranks the board

    rows = list(csv.DictReader(io.StringIO(
        client.get("/leaderboards/geo.csv?split=dev").get_data(as_text=True))))
    mine = next(r for r in rows if r["method_name"] == "test method")
    assert float(mine["us_default_rate"]) == round(us_default, 2) or abs(
        float(mine["us_default_rate"]) - us_default) < 1e-6
    assert mine["us_default_rate_lo"] != ""


def test_the_openapi_lists_the_error_columns_and_the_horizon(client: FlaskClient) -> None:
    spec = client.get("/api/v1/openapi.json").get_json()
    text = json.dumps(spec)
    assert "outdated_rate_static" in text and "us_default_share_common" in text
    assert "Horizon" in spec["components"]["schemas"]


def test_the_submission_page_draws_the_classes_and_the_horizon_on_test(
        client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "tester")
    token = new_token(client)
    data = earliest_answer_file(release_gold, "test")
    upload = api_upload(client, token, release_gold.get("temp", "test"), data)
    assert upload.status_code == 201, upload.get_json()
    page = client.get(f"/submissions/{upload.get_json()['id']}").get_data(as_text=True)
    assert 'id="error-classes"' in page and "How the answers are wrong" in page
    assert page.count('<figure class="error-bar">') == len(TRACK_INFO["temp"].error_partitions)
    assert 'id="horizon-value"' in page
    # The main table keeps the paper's and the lenient metrics; error figures are apart.
    assert 'data-metric="outdated_rate_static"' not in page
    # Aggregates only on test: no per-example browser.
    examples = client.get(f"/submissions/{upload.get_json()['id']}/examples")
    assert examples.status_code == 404


def test_compare_gives_the_paired_difference_of_each_error_figure(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    register(client, "pair")
    token = new_token(client)
    gold = release_gold.get("temp", "dev")
    stale = api_upload(client, token, gold, earliest_answer_file(release_gold, "dev"),
                       public="true").get_json()
    right = api_upload(client, token, gold, method_name="right").get_json()
    page = client.get(f"/insight/compare?a={stale['id']}&b={right['id']}")
    assert page.status_code == 200, page.get_data(as_text=True)[:500]
    text = page.get_data(as_text=True)
    assert "Outdated % of examples" in text


def test_a_completed_upload_row_is_the_row_a_full_rescore_writes(
        app: Flask, client: FlaskClient, release_gold: GoldSet) -> None:
    """The upload defers the error CIs and the horizon's test; completed, its row is every
    column of what scoring the file in full gives (the rescore rewrites it in place)."""
    register(client, "deferred")
    token = new_token(client)
    upload = api_upload(client, token, release_gold.get("temp", "dev"),
                        earliest_answer_file(release_gold, "dev"))
    assert upload.status_code == 201, upload.get_json()
    with app.app_context():
        row = db.session.scalar(select(Score).where(Score.submission_id == upload.get_json()["id"]))
        assert row is not None and row.errors_pending
        assert row.horizon is None  # the horizon waits for its test
    upload.close()
    with app.app_context():
        completed = columns_of_score(upload.get_json()["id"])
        first_at = db.session.scalar(select(Score.scored_at).where(
            Score.submission_id == upload.get_json()["id"]))
        assert completed["errors_pending"] is False
        assert completed["horizon"]["p_value"] is not None
    rescored = app.test_cli_runner().invoke(args=["submissions", "rescore", "--full"])
    assert rescored.exit_code == 0, rescored.output
    with app.app_context():
        assert db.session.scalar(select(Score.scored_at).where(
            Score.submission_id == upload.get_json()["id"])) != first_at  # written again
        assert columns_of_score(upload.get_json()["id"]) == completed


def columns_of_score(submission_id: int) -> dict[str, object]:
    """Every column of a submission's (only) score row, ids and times aside."""
    row = db.session.scalar(select(Score).where(Score.submission_id == submission_id))
    assert row is not None
    values: dict[str, object] = {}
    for column in Score.__table__.columns:
        if column.key not in {"id", "scored_at"}:
            value = getattr(row, column.key)
            values[column.key] = bytes(value) if isinstance(value, memoryview) else value
    return values


def test_the_geo_error_table_follows_its_bar(client: FlaskClient,
                                             release_gold: GoldSet) -> None:
    """US default is part of wrong place: indented under it, so the other rows' shares of
    the errors sum to 100 on every partition, as the bar's segments do."""
    register(client, "tabler")
    token = new_token(client)
    upload = api_upload(client, token, release_gold.get("geo", "dev"),
                        us_answer_file(release_gold, "dev"), public="true")
    assert upload.status_code == 201, upload.get_json()
    upload.close()
    page = client.get(f"/submissions/{upload.get_json()['id']}").get_data(as_text=True)
    table = page[page.index('<table class="scores errors">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr( class="subclass")?><td>([^<]+)</td><td>(.*?)</td>.*?'
                      r'<td class="num">([^<]*)</td><td>', table, re.S)
    shares: dict[str, float] = {}
    for sub, partition, label, share in rows:
        assert bool(sub) == ("US default" in label), label
        if not sub and share.strip() not in ("", "—", "n/a"):
            shares[partition] = shares.get(partition, 0.0) + float(share)
    assert shares and all(abs(total - 100.0) < 0.05 for total in shares.values()), shares
    assert "Indented rows are part of the class above them" in page


def test_the_us_answer_flows_as_us_default_does(app: Flask, client: FlaskClient,
                                                release_gold: GoldSet) -> None:
    """US answer (geo's mark beside the classes) is stored with the score and reaches the
    submission API and page, the board's JSON, CSV and picker, the model-index export, the
    OpenAPI columns and the metrics page, wherever US default does."""
    register(client, "yankee")
    token = new_token(client)
    headers = {"Authorization": f"Bearer {token}"}
    gold = release_gold.get("geo", "dev")
    upload = api_upload(client, token, gold, us_answer_file(release_gold, "dev"),
                        public="true")
    assert upload.status_code == 201, upload.get_json()
    upload.close()
    submission_id = upload.get_json()["id"]
    want = expected(release_gold, "geo", "dev", us_answer_file(release_gold, "dev"))
    us_answer = want.metrics["us_answer_rate"]  # type: ignore[attr-defined]
    assert us_answer and us_answer > want.metrics["us_default_rate"]  # type: ignore[attr-defined]

    body = client.get(f"/api/v1/submissions/{submission_id}", headers=headers).get_json()
    for name in TRACK_INFO["geo"].error_metrics:
        if name.startswith("us_answer"):
            assert body["metrics"][name] == want.metrics[name], name  # type: ignore[attr-defined]
            ci = want.ci[name]  # type: ignore[attr-defined]
            assert body["ci"][name] == (list(ci) if ci else None), name
            assert body["counts"][name] == want.counts[name], name  # type: ignore[attr-defined]
    assert body["ci"]["us_answer_rate"] is not None

    page = client.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert 'data-metric="us_answer_rate"' in page and 'id="mark-note"' in page
    assert f"{us_answer:.2f}" in page
    board = client.get("/api/v1/leaderboards/geo?split=dev&sort=us_answer_rate").get_json()
    assert "us_answer_share_common" in board["columns"]
    entry = next(e for e in board["entries"] if e["id"] == submission_id)
    assert entry["metrics"]["us_answer_rate"] == us_answer
    picker = client.get("/leaderboards/geo?split=dev").get_data(as_text=True)
    assert 'value="us_answer_rate"' in picker
    picked = client.get("/leaderboards/geo?split=dev&show=us_answer_rate").get_data(
        as_text=True)
    assert 'data-column="us_answer_rate"' in picked and f"{us_answer:.2f}" in picked
    rows = list(csv.DictReader(io.StringIO(
        client.get("/leaderboards/geo.csv?split=dev").get_data(as_text=True))))
    mine = next(r for r in rows if r["method_name"] == "test method")
    assert abs(float(mine["us_answer_rate"]) - us_answer) < 0.006
    assert mine["us_answer_rate_lo"] != ""
    card = client.get(f"/api/v1/submissions/{submission_id}/model-index.yaml",
                      headers=headers).get_data(as_text=True)
    assert "US answer % of examples (not in the paper)" in card
    assert "situatedqa_error_rate" in card
    spec = json.dumps(client.get("/api/v1/openapi.json").get_json())
    assert "us_answer_share_common" in spec
    metrics_page = client.get("/metrics/geo").get_data(as_text=True)
    assert 'id="us_answer_rate"' in metrics_page and 'id="us-figures"' in metrics_page
    assert "<code>us_default_rate</code>" in metrics_page
    assert 'id="outdated-bound"' in client.get("/metrics/temp").get_data(as_text=True)


def test_a_row_stored_before_the_us_answer_shows_a_dash(app: Flask, client: FlaskClient,
                                                        release_gold: GoldSet) -> None:
    """A geo score stored before the mark: no US-answer key and class bytes without a mark
    state. Pages, the board (sorted by it), the API, a pending completion and a comparison
    read it without an error; a full rescore gives it the figure."""
    register(client, "elder")
    token = new_token(client)
    headers = {"Authorization": f"Bearer {token}"}
    gold = release_gold.get("geo", "dev")
    old = api_upload(client, token, gold, us_answer_file(release_gold, "dev"), public="true")
    assert old.status_code == 201, old.get_json()
    old.close()
    other = api_upload(client, token, gold, method_name="other", public="true")
    other.close()
    old_id, other_id = old.get_json()["id"], other.get_json()["id"]
    with app.app_context():
        from situatedqa_server.services import board_cache

        row = db.session.scalar(select(Score).where(Score.submission_id == old_id))
        assert row is not None and row.error_classes is not None
        assert max(row.error_classes) >= 8  # the mark state sits above the class
        keep = {k: not k.startswith("us_answer") for k in row.metrics}
        row.metrics = {k: v for k, v in row.metrics.items() if keep[k]}
        row.ci = {k: v for k, v in row.ci.items() if keep.get(k, True)}
        row.counts = {k: v for k, v in row.counts.items() if keep.get(k, True)}
        row.error_classes = bytes(b & 7 for b in row.error_classes)
        board_cache.bump(db.session(), [("geo", "dev")])
        db.session.commit()

    page = client.get(f"/submissions/{old_id}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert re.search(r'data-metric="us_answer_rate">—<', text)
    assert "stored before the figure existed" in text
    for url in ("/leaderboards/geo?split=dev&show=us_answer_rate&sort=us_answer_rate",
                "/leaderboards/geo.csv?split=dev",
                f"/insight/compare?a={old_id}&b={other_id}"):
        assert client.get(url).status_code == 200, url
    board = client.get("/api/v1/leaderboards/geo?split=dev&sort=us_answer_rate")
    assert board.status_code == 200
    entry = next(e for e in board.get_json()["entries"] if e["id"] == old_id)
    assert entry["metrics"].get("us_answer_rate") is None
    # Left pending (as an upload's row is until its completion runs): a read completes the
    # classes' CIs, and the mark stays absent rather than wrong.
    with app.app_context():
        row = db.session.scalar(select(Score).where(Score.submission_id == old_id))
        assert row is not None
        row.errors_pending = True
        row.ci = {k: (None if "_rate" in k or "_share" in k else v) for k, v in row.ci.items()}
        db.session.commit()
    body = client.get(f"/api/v1/submissions/{old_id}", headers=headers)
    assert body.status_code == 200
    assert "us_answer_rate" not in body.get_json()["metrics"]
    assert body.get_json()["ci"]["us_default_rate"] is not None

    rescored = app.test_cli_runner().invoke(args=["submissions", "rescore", "--full"])
    assert rescored.exit_code == 0, rescored.output
    body = client.get(f"/api/v1/submissions/{old_id}", headers=headers).get_json()
    want = expected(release_gold, "geo", "dev", us_answer_file(release_gold, "dev"))
    assert body["metrics"]["us_answer_rate"] == want.metrics["us_answer_rate"]  # type: ignore[attr-defined]


def horizon_panel(app: Flask, horizon: Mapping[str, Any], n: int) -> tuple[str, str]:
    """The errors panel of a temp score holding HORIZON over N answers: its HTML, its text."""
    with app.test_request_context():
        html = render_template("submissions/_errors.html", errors=[],
                               score=SimpleNamespace(horizon=horizon, n=n),
                               submission=SimpleNamespace(track="temp", knowledge_date=None))
    return html, " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def test_the_horizon_says_how_many_answers_it_rests_on(app: Flask) -> None:
    """79 of 3,423 answers (2.3%): 50 right and 29 outdated, summed from the curve by hand."""
    bins = [[2015, 30, 20], [2018, 29, 20], [2020, 20, 10]]
    determined = {"year": 2018, "ci": [2015, 2019], "identified": [2018, 2019],
                  "determined": True, "reason": None, "p_value": 0.022, "n": 79, "bins": bins}
    _, text = horizon_panel(app, determined, 3423)
    assert ("The answers track the gold up to 2018 (95% CI 2015–2019), p = 0.022: EM drops "
            "for answers that took effect later. It rests on 79 of the 3,423 answers (2.3%): "
            "those to examples whose answer replaced an earlier one that came out right (50) "
            "or outdated (29); the other answers say nothing about it.") in text, text


def test_an_undetermined_horizon_names_the_cards_rules(app: Flask) -> None:
    """Not determined: the reason, under the rules the metric card states (linked), and what
    it would rest on: 40 of 800 answers (5.0%), 7 right and 33 outdated."""
    reason = "the drop is not significant (p = 0.300 > 0.05)"
    undetermined = {"year": None, "ci": None, "identified": None, "determined": False,
                    "reason": reason, "p_value": 0.3, "n": 40,
                    "bins": [[2016, 25, 5], [2019, 15, 2]]}
    html, text = horizon_panel(app, undetermined, 800)
    assert (f"Not determined under the card's rules: {reason}. It would rest on 40 of the 800 "
            "answers (5.0%): those to examples whose answer replaced an earlier one that came "
            "out right (7) or outdated (33); the other answers say nothing about it.") in \
        text, text
    with app.test_request_context():
        link = url_for("metrics.show", track="temp") + "#horizon-method"
    assert f'href="{link}"' in html
