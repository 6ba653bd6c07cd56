"""Every plot route answers a valid, non-empty PNG or SVG, and a new submission refreshes it."""

from __future__ import annotations

import re
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet
from situatedqa_server.services import plots
from situatedqa_server.services.gold_store import active_version

from .conftest import add_scored, add_user, api_upload, prediction_file

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_image(response: Any, fmt: str) -> None:
    """A 200 with a well-formed PNG or SVG body."""
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    if fmt == "png":
        assert response.mimetype == "image/png" and response.data.startswith(PNG_MAGIC)
        assert len(response.data) > 2000
    else:
        assert response.mimetype == "image/svg+xml"
        root = ElementTree.fromstring(response.data)
        assert root.tag.endswith("svg") and len(root) > 0


def plot_urls(seeded: dict[str, Any], geo_id: int) -> list[str]:
    """Every plot route of the seeded data."""
    ids = seeded["ids"]
    return [f"/insight/submissions/{ids['strong-test']}/plots/scores",
            f"/insight/submissions/{ids['strong-test']}/plots/years",
            f"/insight/submissions/{ids['strong-dev']}/plots/years",
            f"/insight/submissions/{geo_id}/plots/groups",
            f"/insight/submissions/{geo_id}/plots/scores",
            "/insight/leaderboards/temp/plots/top", "/insight/leaderboards/temp/plots/sota",
            "/insight/leaderboards/geo/plots/top", "/insight/leaderboards/geo/plots/sota"]


@pytest.fixture
def geo_id(seeded: dict[str, Any], release_gold: GoldSet) -> int:
    """A public geo/dev submission of alice."""
    gold = release_gold.get("geo", "dev")
    response = api_upload(seeded["client"], seeded["token"], gold,
                          prediction_file(gold, len(gold) // 3), public="true")
    return int(response.json["id"])


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_every_plot_route_answers_an_image(seeded: dict[str, Any], geo_id: int,
                                           fmt: str) -> None:
    client: FlaskClient = seeded["client"]
    for url in plot_urls(seeded, geo_id):
        split = "dev" if "/leaderboards/geo/" in url else "test"
        assert_image(client.get(f"{url}.{fmt}?split={split}"), fmt)


def test_unknown_plots_are_404(seeded: dict[str, Any], geo_id: int) -> None:
    client: FlaskClient = seeded["client"]
    strong = seeded["ids"]["strong-test"]
    for url in (f"/insight/submissions/{strong}/plots/groups.png",  # geo only
                f"/insight/submissions/{geo_id}/plots/years.png",  # temp only
                f"/insight/submissions/{strong}/plots/scores.gif",
                "/insight/leaderboards/temp/plots/nope.png",
                "/insight/leaderboards/x/plots/top.png"):
        assert client.get(url).status_code == 404, url
    private = f"/insight/submissions/{seeded['ids']['private']}/plots/scores.png"
    assert client.get(private).status_code == 200  # the owner's team sees it
    assert client.application.test_client().get(private).status_code == 404  # others do not
    assert client.get("/insight/leaderboards/temp/plots/top.png?split=x").status_code == 400


def test_a_new_submission_refreshes_the_cached_plots(seeded: dict[str, Any],
                                                     release_gold: GoldSet) -> None:
    client: FlaskClient = seeded["client"]
    top = "/insight/leaderboards/temp/plots/top.svg?split=test"
    sota = "/insight/leaderboards/temp/plots/sota.svg?split=test"
    before = {url: client.get(url) for url in (top, sota)}
    for url, response in before.items():
        etag = {"If-None-Match": response.headers["ETag"]}
        assert client.get(url, headers=etag).status_code == 304
        assert client.get(url).data == response.data  # served from the cache
    gold = release_gold.get("temp", "test")
    upload = api_upload(client, seeded["token"], gold, prediction_file(gold, len(gold) - 10),
                        method_name="new best", public="true")
    assert upload.status_code == 201
    # The new entry is the best: the top chart names it, and the state-of-the-art note
    # (all entries were published today) gives its EM, computed here by hand.
    best = f"{100 * (len(gold) - 10) / len(gold):.1f}".encode()
    expected = {top: b"new best", sota: best}
    for url, response in before.items():
        after = client.get(url, headers={"If-None-Match": response.headers["ETag"]})
        assert after.status_code == 200 and after.headers["ETag"] != response.headers["ETag"]
        assert expected[url] not in response.data and expected[url] in after.data, url


def test_pages_show_plots_with_alt_text(seeded: dict[str, Any]) -> None:
    client: FlaskClient = seeded["client"]
    # The seeded entries were all published today: the board shows the top entries, and a
    # sentence instead of a state-of-the-art chart with a single date.
    pages = {f"/submissions/{seeded['ids']['strong-test']}": 2, "/leaderboards/temp?split=test": 1}
    for url, count in pages.items():
        html = client.get(url).get_data(as_text=True)
        images = re.findall(r'<img src="([^"]+)" alt="([^"]+)"', html)
        assert len(images) == count, url
        for src, alt in images:
            assert len(alt) > 30
            assert_image(client.get(src.replace("&amp;", "&")), "png")


def test_context_years_are_binned_by_decade_then_year(release_gold: GoldSet) -> None:
    from situatedqa_server.services import plots

    for split in ("dev", "test"):
        gold = release_gold.get("temp", split)
        bins = plots.year_buckets(gold)
        assert all(int(b.mask.sum()) >= plots.MIN_TEST_BUCKET for b in bins)
        assert sum(int(b.mask.sum()) for b in bins) == int((plots.context_years(gold) > 0).sum())
        early = [b for b in bins if b.first < plots.DECADES_BEFORE]
        assert early and all(b.last - b.first >= 9 for b in early[:-1])  # whole decades
        assert any(b.first == b.last for b in bins)  # the busy recent years stand alone
        assert len(bins) < 40  # not 123 points of noise


def test_the_year_plot_counts_every_dated_example(release_gold: GoldSet) -> None:
    """Every temp example is dated ("2019" or "March 30, 2021"): the EM-by-year plot's bins
    hold the whole split, none left out as undated."""
    from situatedqa_server.services import plots

    for split in ("dev", "test"):
        gold = release_gold.get("temp", split)
        years = plots.context_years(gold)
        assert int((years < 0).sum()) == 0
        assert sum(int(b.mask.sum()) for b in plots.year_buckets(gold)) == len(gold)
        # "March 30, 2021" is read as 2021, as its own year: the year it ends with.
        full_dates = [i for i, e in enumerate(gold.examples) if "," in e.context["date"]]
        assert full_dates and all(str(years[i]) == gold.examples[i].context["date"][-4:]
                                  for i in full_dates)


def test_state_of_the_art_is_a_date_axis_over_two_days_at_least() -> None:
    from datetime import date

    from matplotlib.figure import Figure

    from situatedqa_server.services import plots

    steps = [(date(2026, 11, 30), 40.0), (date(2026, 12, 1), 45.0)]
    figure = Figure()
    ax = figure.add_subplot()
    plots.draw_steps(steps, "EM", "")(ax)
    figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all(re.fullmatch(r"\d{4}-\d\d-\d\d", label) for label in labels), labels
    assert "2026-11-30" in labels and "2026-12-01" in labels

    lone = Figure().add_subplot()
    plots.draw_steps(steps[:1], "EM", "one day only")(lone)
    assert not lone.axison and [t.get_text() for t in lone.texts] == ["one day only"]


def test_top_entries_legend_sits_beside_the_bars_with_headroom_above_100() -> None:
    from matplotlib.figure import Figure

    from situatedqa_server.services import plots

    series = [(f"entry {i} with a rather long method name", [
        plots.Bar("EM", 100.0, (99.0, 100.0)), plots.Bar("Static", 98.0, (96.0, 100.0))])
        for i in range(5)]
    figure = Figure(figsize=plots.SIZE, layout="constrained")
    ax = figure.add_subplot()
    plots.draw_grouped(["EM", "Static"], series)(ax)
    figure.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # outside the axes: it covers no bar
    assert ax.get_ylim()[1] > 100  # bars and whiskers at 100 stay clear of the frame
    assert all(len(t.get_text()) <= 28 for t in ax.get_legend().get_texts())


def test_the_state_of_the_art_steps_are_the_best_so_far_by_day(app: Flask) -> None:
    """One step per day on which the best so far improved, at that day's best; ties and
    entries below the best so far make none (hand-made entries over six days)."""
    n = 506  # geo/test
    entries = [(5, 100), (5, 150), (4, 120), (3, 200), (3, 200), (1, 180), (0, 250)]
    with app.app_context():
        user = add_user("sota")
        made = []
        for number, (days_ago, correct) in enumerate(entries):
            codes = np.zeros(n, dtype=np.uint8)
            codes[:correct] = 3
            made.append(add_scored(user, "geo", "test", codes, name=f"s{number}",
                                   minutes_ago=days_ago * 1440 + 10).created_at)
    with app.test_request_context():
        spec = plots.sota_plot("geo", "test", active_version().id)
    # the entries of one day are made microseconds apart; each day is the one stored
    expected = [[f"{made[number]:%Y-%m-%d}", f"{100 * entries[number][1] / n:.1f}"]
                for number in (1, 3, 6)]
    assert spec.table[1:] == expected


def test_a_year_bin_all_right_keeps_a_wide_interval(release_gold: GoldSet) -> None:
    """Every answer right: each year bin's EM is 100%, and its CI the Wilson interval of its
    n (the bootstrap's was the point 100.0-100.0)."""
    from types import SimpleNamespace

    from benchmark.intervals import wilson_interval
    from benchmark.scoring import CORRECT

    gold = release_gold.get("temp", "test")
    score = SimpleNamespace(outcomes=bytes([CORRECT]) * len(gold), id=1, scored_at=None)
    spec = plots.years_plot(SimpleNamespace(method_name="m"), score, gold)  # type: ignore[arg-type]
    rows = spec.table[1:]
    assert rows and len(rows) == len(plots.year_buckets(gold, plots.MIN_TEST_BUCKET))
    for label, value, interval, n in rows:
        low, _ = wilson_interval(int(n), int(n))
        assert value == "100.0", label
        assert interval == f"{100 * low:.1f}\u2013100.0", label
