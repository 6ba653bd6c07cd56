"""Boards in Debian's chromium: every chart renders (its pixels), charts follow the filters,
the sorted column has an arrow, the Filter button stays put, CIs stay on one line at 390 px,
a board wider than the window says so, and the pages pass axe-core."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from tests.browser import BROWSER_MARKS

from .conftest import api_upload, prediction_file
from .test_browser_pages import (  # noqa: F401  (the boards fixture, by name)
    SIZES,
    boards,
    chromium,
    loaded_images,
    log_in,
    no_sideways_scroll,
    open_page,
)

pytestmark = BROWSER_MARKS


def coloured_share(png: bytes) -> float:
    """The share of pixels that are clearly coloured (bars and lines, not text or axes)."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    spread = pixels.max(axis=2) - pixels.min(axis=2)
    return float((spread > 40).mean())


def charts_render(page: Any) -> int:
    """Every chart image of the page is drawn and shows bars or lines; how many."""
    count = loaded_images(page)
    images = page.locator("figure.plot img")
    for index in range(count):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        share = coloured_share(image.screenshot())
        assert share > 0.005, (page.url, image.get_attribute("src"), share)
    return count


def serious_axe_violations(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{v['id']}: {v['help']}" for v in results.response["violations"]
            if v["impact"] in ("serious", "critical")]


@pytest.fixture
def with_baselines(boards: dict[str, Any], release_gold: GoldSet) -> dict[str, Any]:  # noqa: F811
    """The boards, their temp test entries marked as baselines, and geo dev entries."""
    client = boards["client"]
    gold = release_gold.get("geo", "dev")
    for share, wrong in ((2, "x"), (3, "y")):
        response = api_upload(client, boards["token"], gold,
                              prediction_file(gold, len(gold) // share, wrong=wrong),
                              public="true", method_name=f"geo {share}")
        assert response.status_code == 201
    test = release_gold.get("geo", "test")  # a board of one entry: its Top-1 chart
    response = api_upload(client, boards["token"], test, prediction_file(test, len(test) // 3),
                          public="true", method_name="Nearest training question (query-mod)")
    assert response.status_code == 201
    with client.application.app_context():
        for name in ("strong-test", "weak-test"):
            db.session.get(Submission, boards["ids"][name]).is_baseline = True
        db.session.commit()
    return boards


def test_every_chart_renders_and_follows_the_filters(with_baselines: dict[str, Any]) -> None:
    ids = with_baselines["ids"]
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        page.goto(f"{url}/leaderboards/temp?split=test")
        assert charts_render(page) == 1  # the top entries (two baselines)
        page.check("input[name=hide_baselines]")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**hide_baselines=1**")
        assert "No entries match these filters." in page.inner_text("table.board")
        assert page.locator("figure.plot").count() == 0  # no chart of the hidden baselines
        assert "No entries match these filters" in page.inner_text("#insight")
        assert "so far the best" not in page.inner_text("#insight")

        page.goto(f"{url}/leaderboards/geo?split=test")
        assert "Top 1" in page.locator("figure.plot figcaption").first.inner_text()
        assert charts_render(page) == 1
        for board in ("temp?split=dev", "temp-id?split=dev", "geo?split=dev"):
            page.goto(f"{url}/leaderboards/{board}")
            assert charts_render(page) >= 1, board
        log_in(page, url, "alice")
        for name in ("strong-dev", "id strong", "long"):
            page.goto(f"{url}/submissions/{ids[name]}")
            assert charts_render(page) >= 1, name
        assert problems == []


def test_sorting_filter_button_and_scroll_hint(with_baselines: dict[str, Any]) -> None:
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        page.goto(f"{url}/leaderboards/temp?split=dev")
        page.wait_for_load_state("networkidle")  # the plots, before a click leaves the page
        sorted_header = page.locator("table.board th.sorted")
        assert sorted_header.count() == 1 and "▼" in sorted_header.inner_text()
        assert sorted_header.get_attribute("aria-sort") == "descending"
        assert sorted_header.get_attribute("data-column") == "em"
        page.click("table.board th.method a")
        page.wait_for_url("**sort=method_name**")
        page.wait_for_load_state("networkidle")
        assert "▼" in page.inner_text("table.board th.method")
        page.click("table.board th.method a")
        page.wait_for_url("**order=asc**")
        page.wait_for_load_state("networkidle")
        assert "▲" in page.inner_text("table.board th.method")
        assert page.locator("table.board th.sorted").count() == 1

        page.goto(f"{url}/leaderboards/temp?split=dev")
        page.wait_for_load_state("networkidle")
        button = page.locator("form.filters button[type=submit]")
        before = button.bounding_box()
        page.locator(".column-picker summary").click()
        assert page.locator(".column-picker").get_attribute("open") is not None
        assert button.bounding_box() == before  # the button does not jump

        assert page.locator(".scroll-hint").is_hidden()  # the board fits at 1280 px
        lenient = "&".join(f"show={c}" for c in ("em_equiv", "em_equiv_common", "em_equiv_rare",
                                                 "f1", "f1_common", "f1_rare", "f1_us"))
        page.goto(f"{url}/leaderboards/geo?split=dev&{lenient}")
        page.wait_for_load_state("networkidle")
        scroller = page.locator(".table-scroll").first
        assert scroller.evaluate("e => e.scrollWidth > e.clientWidth")
        assert page.locator(".scroll-hint").is_visible()
        assert "scroll the table sideways" in page.inner_text(".scroll-hint")
        assert problems == []


def test_intervals_stay_on_one_line_on_a_phone(with_baselines: dict[str, Any]) -> None:
    ids = with_baselines["ids"]
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[1], problems)
        log_in(page, url, "alice")
        for path in (f"/submissions/{ids['strong-dev']}", "/leaderboards/temp?split=dev"):
            page.goto(url + path)
            page.wait_for_load_state("networkidle")
            no_sideways_scroll(page)
            # The line boxes of every interval's text, in whatever element holds it.
            lines = page.eval_on_selector_all("table.scores td, table.board td.num small", """
                els => els.filter(e => /^\\[.*\\]$/.test(e.textContent.trim())).map(e => {
                    const range = document.createRange();
                    range.selectNodeContents(e);
                    return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
                })""")
            assert lines and all(count == 1 for count in lines), (path, lines)
        assert problems == []


def test_pages_pass_axe(with_baselines: dict[str, Any], release_gold: GoldSet) -> None:
    ids = with_baselines["ids"]
    # A submission that declares a knowledge cutoff: its page has the figures after it.
    dev = release_gold.get("temp", "dev")
    declared = api_upload(with_baselines["client"], with_baselines["token"], dev,
                          prediction_file(dev, len(dev) // 4, wrong="cutoff"),
                          knowledge_cutoff="2018-06-30", method_name="declared cutoff")
    assert declared.status_code == 201, declared.get_json()
    assert "em_post_cutoff" in declared.get_json()["metrics"]
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        log_in(page, url, "alice")
        for path in ("/", "/metrics/", "/metrics/temp", "/metrics/temp-id",
                     "/leaderboards/temp?split=dev",
                     "/leaderboards/temp?split=test&hide_baselines=1",
                     f"/submissions/{ids['strong-dev']}", "/submissions/", "/data/releases",
                     f"/submissions/{declared.get_json()['id']}", "/submissions/new"):
            page.goto(url + path)
            assert serious_axe_violations(page) == [], path
            assert page.locator("header nav a[href='/metrics/']").count() == 1, path
            # Images still loading when the next goto starts would be aborted by it, and
            # reported as failed requests: leave each page once it is done.
            page.wait_for_load_state("networkidle")
        assert problems == []


def test_error_columns_are_picked_on_the_board_and_drawn_on_the_submission_page(
        with_baselines: dict[str, Any]) -> None:
    """The error classes in a real browser: picked from the board's column picker they
    appear as columns; the submission page draws a bar per partition and the horizon; both
    pages pass axe."""
    ids = with_baselines["ids"]
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        log_in(page, url, "alice")
        page.goto(f"{url}/leaderboards/geo?split=dev")
        page.wait_for_load_state("networkidle")
        assert page.locator("th[data-column='us_default_rate']").count() == 0
        page.click("details.column-picker summary")
        page.check("input[name=show][value='us_default_rate']")
        page.click("form.filters button[type=submit]")
        page.wait_for_load_state("networkidle")
        header = page.locator("th[data-column='us_default_rate']")
        assert header.is_visible() and "US default" in header.inner_text()
        assert "not in the paper" in header.inner_text()
        assert serious_axe_violations(page) == [], page.url
        page.wait_for_load_state("networkidle")  # its charts loaded, not cut by the goto
        page.goto(f"{url}/submissions/{ids['strong-dev']}")
        section = page.locator("#error-classes")
        assert section.is_visible()
        bars = page.locator("figure.error-bar svg[role=img]")
        assert bars.count() == 4  # All, Static, Sampled, Start
        assert "Right" in (bars.first.get_attribute("aria-label") or "")
        assert page.locator("#horizon-value").is_visible()
        assert serious_axe_violations(page) == [], page.url
        page.wait_for_load_state("networkidle")
        assert problems == []


def test_the_home_pages_track_table_says_it_scrolls_on_a_phone(
        with_baselines: dict[str, Any]) -> None:
    """At 390 px the tracks' table is wider than the window: it scrolls inside itself and
    says so; at 1280 px it fits and says nothing."""
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        for size, overflows in ((SIZES[1], True), (SIZES[0], False)):
            page = open_page(browser, size, problems)
            page.goto(f"{url}/")
            page.wait_for_load_state("networkidle")
            no_sideways_scroll(page)
            scroller = page.locator(".table-scroll").first
            assert scroller.evaluate("e => e.querySelector('table.tracks') !== null")
            assert scroller.evaluate("e => e.scrollWidth > e.clientWidth") is overflows
            assert page.locator(".scroll-hint").is_visible() is overflows
            page.close()
        assert problems == []


def test_what_the_researcher_pages_say_in_a_browser(with_baselines: dict[str, Any]) -> None:
    """Issue items seen as a researcher sees them: this context's answers apart from the
    other contexts', the paper's Table 6 figure under its own name, US default indented under
    wrong place, and a board of one entry saying so; every page passes axe."""
    ids = with_baselines["ids"]
    with with_baselines["client"].application.app_context():
        geo = db.session.scalars(db.select(Submission).where(
            Submission.method_name == "geo 2")).one().id
    with chromium(with_baselines) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        log_in(page, url, "alice")
        key = "-7924170207595297549|2015|sampled_year"
        page.goto(f"{url}/data/temp/dev/examples/{key.replace('|', '%7C')}")
        assert page.locator("#gold li").all_inner_texts() == ["1990"]
        others = page.inner_text("#other-context-answers")
        assert "other contexts" in others and "2018" in others
        assert "Also accepted" not in page.content()
        assert serious_axe_violations(page) == []

        page.goto(f"{url}/insight/submissions/{ids['strong-dev']}/diagnostics")
        headers = page.locator("table.diagnostics th").all_inner_texts()
        assert "Any − One (%)" in headers and not any("Other context" in h for h in headers)
        assert serious_axe_violations(page) == []

        page.goto(f"{url}/submissions/{geo}")
        sub = page.locator("table.errors tr.subclass")
        assert sub.count() >= 1 and "of which US default" in sub.first.inner_text()
        padded = sub.first.locator("td").nth(1).evaluate(
            "e => parseFloat(getComputedStyle(e).paddingLeft)")
        plain = page.locator("table.errors tr:not(.subclass) td").nth(1).evaluate(
            "e => parseFloat(getComputedStyle(e).paddingLeft)")
        assert padded > plain  # drawn indented, not only marked
        assert serious_axe_violations(page) == []

        page.goto(f"{url}/leaderboards/geo?split=test")
        page.wait_for_load_state("networkidle")
        assert page.inner_text("p.pager").startswith("1 entry ·")
        assert serious_axe_violations(page) == []
        assert problems == []
