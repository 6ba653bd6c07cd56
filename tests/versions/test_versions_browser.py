"""In Debian's chromium: pick an older gold version on a leaderboard and see its scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner

from situatedqa_server.services.gold_store import FIRST_VERSION_NAME
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import LiveServer

pytestmark = BROWSER_MARKS


def test_select_an_older_version(app: Flask, runner: FlaskCliRunner, update_file: Path,
                                  uploads: dict[str, int]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    assert runner.invoke(args=["gold", "build", "--from-update", str(update_file), "--name",
                               "2023-06", "--as-of", "2023-06-01"]).exit_code == 0
    assert runner.invoke(args=["gold", "activate", "2023-06"]).exit_code == 0
    with LiveServer(app) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/leaderboards/temp?split=test")
            em = page.locator("table.board tbody tr", has_text="test_all").locator("td.num")
            assert not em.first.inner_text().startswith("100.00")  # answers changed since
            # The filter script submits the form when a select changes.
            page.select_option("select[name=version]", label=f"{FIRST_VERSION_NAME} (as of "
                                                             "2021-02-01)")
            page.wait_for_url("**version=2021-02*")
            assert em.first.inner_text().startswith("100.00")
            selected = page.locator("select[name=version] option:checked").inner_text()
            assert selected.startswith(FIRST_VERSION_NAME)
            assert errors == []  # no CSP violations or script errors
        finally:
            browser.close()
