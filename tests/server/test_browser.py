"""In Debian's chromium: register, upload a dev file through the page, see it on the board."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask

from benchmark import GoldSet
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import PASSWORD, LiveServer, prediction_file

pytestmark = BROWSER_MARKS


def test_register_upload_and_see_the_leaderboard(app: Flask, release_gold: GoldSet,
                                                 tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    gold = release_gold.get("geo", "dev")
    upload = tmp_path / "geo-dev.jsonl"
    upload.write_bytes(prediction_file(gold, correct=len(gold) // 4))
    with LiveServer(app) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/auth/register")
            page.fill("#username", "dora")
            page.fill("#email", "dora@example.org")
            page.fill("#password", PASSWORD)
            page.click("main form.stacked button[type=submit]")
            page.wait_for_url("**/auth/account")

            page.goto(f"{server.url}/submissions/new")
            page.select_option("#track", "geo")
            page.select_option("#split", "dev")
            page.set_input_files("#file", str(upload))
            page.fill("#method_name", "Browser method")
            page.select_option("#public", "yes")
            page.click("main form.stacked button[type=submit]")
            page.wait_for_url("**/submissions/*")
            em = page.text_content("td[data-metric=em]")
            assert em is not None and abs(float(em) - 100 * (len(gold) // 4) / len(gold)) < 0.01

            page.goto(f"{server.url}/leaderboards/geo?split=dev")
            row = page.locator("table.board tbody tr").first
            assert "Browser method" in row.inner_text()
            assert em in row.inner_text()
            assert errors == []  # no CSP violations or script errors
        finally:
            browser.close()
