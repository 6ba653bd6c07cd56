"""In Debian's chromium: a researcher disputes a dev example from its page and a test one by
its key with the keyboard; the organizer rejects one and accepts the other from the joint
adjudication queue; the researcher sees both outcomes. Every page passes axe (no serious or
critical violation)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.services import accounts
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import PASSWORD, LiveServer
from .test_campaigns_browser import log_in

pytestmark = BROWSER_MARKS
URL = "https://en.wikipedia.org/wiki/Evidence"


def test_disputes_in_the_browser(app: Flask, release_gold: GoldSet) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.insight.test_browser_boards import serious_axe_violations

    with app.app_context():
        accounts.create_user("root", "root@example.org", PASSWORD, is_admin=True)
        accounts.create_user("dana", "dana@example.org", PASSWORD)
        db.session.commit()
    dev = release_gold.get("temp", "dev").examples[0]
    test = release_gold.get("temp", "test").examples[0]
    with LiveServer(app) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            errors: list[str] = []

            def new_page(who: str | None) -> Any:
                page = browser.new_context().new_page()
                page.on("console",
                        lambda m: errors.append(m.text) if m.type == "error" else None)
                if who:
                    log_in(page, server.url, who)
                return page

            anonymous = new_page(None)
            anonymous.goto(f"{server.url}/data/temp/test/examples/{quote(test.key)}")
            assert "The test gold is not shown" in anonymous.inner_text("main")
            assert serious_axe_violations(anonymous) == [], anonymous.url

            dana = new_page("dana")
            dana.goto(f"{server.url}/data/temp/dev/examples/{quote(dev.key)}")
            assert dev.answers[0] in dana.inner_text("#gold")
            assert serious_axe_violations(dana) == [], dana.url
            dana.fill("#answers", "Dana answer")
            dana.keyboard.press("Tab")
            dana.keyboard.type(URL)
            with dana.expect_navigation():
                dana.keyboard.press("Enter")
            assert "Your dispute was filed" in dana.inner_text("main")
            # A test example by its key, from "My disputes".
            dana.fill("#track", "temp")
            dana.fill("#split", "test")
            dana.fill("#key", test.key)
            dana.fill("#answers", "Dana test answer")
            dana.fill("#evidence", URL)
            with dana.expect_navigation():
                dana.click("#dispute-form button[type=submit]")
            assert dana.locator("#my-disputes tbody tr").count() == 2
            assert serious_axe_violations(dana) == [], dana.url

            root = new_page("root")
            root.goto(f"{server.url}/admin/queue")
            assert root.locator("#queue-disputes li").count() == 2
            assert serious_axe_violations(root) == [], root.url
            with root.expect_navigation():
                root.click("#queue-disputes li a >> nth=0")
            assert "Dana answer" in root.inner_text("#dispute")
            assert serious_axe_violations(root) == [], root.url
            root.select_option("#decision", "reject")
            root.fill("#reason", "The evidence is about another year.")
            with root.expect_navigation():
                root.click("#decision-form button[type=submit]")
            assert root.locator("#test-warning").is_visible()
            assert serious_axe_violations(root) == [], root.url
            with root.expect_navigation():
                root.click("#decision-form button[type=submit]")  # accept, as proposed
            assert root.locator("#pending-disputes li").count() == 1
            assert serious_axe_violations(root) == [], root.url

            dana.goto(f"{server.url}/disputes/")
            outcomes = dana.inner_text("#my-disputes")
            assert "rejected: The evidence is about another year." in outcomes
            assert "accepted: goes into the next gold version" in outcomes
            assert serious_axe_violations(dana) == [], dana.url
            assert errors == [], errors
        finally:
            browser.close()
