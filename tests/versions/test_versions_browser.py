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


def test_pick_the_unreleased_figures_on_a_test_board(
        app: Flask, runner: FlaskCliRunner, update_file: Path,
        uploads: dict[str, int]) -> None:
    """After a version that adds and changes test examples: the test board says what is
    public, the picker offers the provenance figures, picked they are columns marked not in
    the paper, and the submission page explains them; both pages pass axe."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.insight.test_browser_boards import serious_axe_violations

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
            assert "test answers are public" in page.locator("#test-provenance").inner_text()
            assert page.locator("th[data-column='unreleased']").count() == 0
            page.click("details.column-picker summary")
            page.check("input[name=show][value='unreleased']")
            page.check("input[name=show][value='contamination_gap']")
            page.click("form.filters button[type=submit]")
            page.wait_for_load_state("networkidle")
            header = page.locator("th[data-column='unreleased']")
            assert header.is_visible() and "not in the paper" in header.inner_text()
            assert page.locator("th[data-column='contamination_gap']").is_visible()
            assert serious_axe_violations(page) == [], page.url
            page.goto(f"{server.url}/submissions/{uploads['test_all']}")
            assert page.locator("#unreleased-note").is_visible()
            assert serious_axe_violations(page) == [], page.url
            # The input release the activation made: its page, with its table.
            page.goto(f"{server.url}/data/releases")
            assert page.locator("section[id='2023-06'] table").is_visible()
            assert serious_axe_violations(page) == [], page.url
            assert errors == []
        finally:
            browser.close()
