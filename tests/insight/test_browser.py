"""In Debian's chromium: the leaderboard with rank groups, a submission's plots, a comparison."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import LiveServer

pytestmark = BROWSER_MARKS


def test_leaderboard_submission_plot_and_compare(seeded: dict[str, Any]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    ids = seeded["ids"]
    with LiveServer(seeded["client"].application) as server, \
            sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("response", lambda r: problems.append(r.url) if r.status >= 400 else None)

            page.goto(f"{server.url}/leaderboards/temp?split=test")
            first = page.locator("table.board tbody tr").first
            assert "strong test" in first.inner_text() and "group 1" in first.inner_text()
            assert page.locator("#rank-groups").is_visible()
            page.click("text=strong test")
            page.wait_for_url(f"**/submissions/{ids['strong-test']}")

            plot = page.locator("figure.plot img").first
            plot.scroll_into_view_if_needed()
            page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                                   arg=plot.element_handle())
            assert len(plot.get_attribute("alt") or "") > 30

            page.click("text=Compare with another submission")
            page.select_option("#pick-b", str(ids["weak-test"]))
            page.click("form.picker button[type=submit]")
            page.wait_for_selector("table.compare")
            assert "only aggregates are shown" in page.inner_text("main")
            assert problems == []  # no CSP violations, script errors or broken images
        finally:
            browser.close()
