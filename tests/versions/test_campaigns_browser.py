"""In Debian's chromium: a refresh campaign of 10 tasks and a new-contexts campaign of 10,
answered blind by two annotators with the keyboard, adjudicated, built and activated; a
researcher's test upload then shows the unreleased figures and the gap with CIs. Every
campaign page passes axe (no serious or critical violation)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask import Flask

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Campaign
from situatedqa_server.services import accounts, gold_store
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import PASSWORD, LiveServer, api_upload, new_token, prediction_file, register

pytestmark = BROWSER_MARKS
URL = "https://en.wikipedia.org/wiki/Evidence"


def log_in(page: Any, url: str, username: str) -> None:
    page.goto(f"{url}/auth/login")
    page.fill("#username", username)
    page.fill("#password", PASSWORD)
    with page.expect_navigation():
        page.click("main form.stacked button[type=submit]")


def grant_annotators(root: Any, url: str, names: tuple[str, ...]) -> None:
    """On the campaigns admin page, give each user the annotator role."""
    root.goto(f"{url}/admin/campaigns")
    for name in names:
        root.fill("#username", name)
        root.select_option("#grant", "grant")
        with root.expect_navigation():
            root.click("form.row button[type=submit]")


def refresh_plan(position: int, who: str, last: str) -> str:
    """Every third task unchanged, every third the same new answer, the rest disagree."""
    if position % 3 == 0:
        return last
    if position % 3 == 1:
        return f"New answer {position}"
    return f"{'Alpha' if who == 'ann' else 'Beta'} answer {position}"


def contexts_plan(position: int, who: str) -> str:
    """Even tasks agree; odd ones are an answer against "ambiguous"."""
    if position % 2 == 0:
        return f"City {position}"
    return f"Alpha city {position}" if who == "ann" else "ambiguous"


def tasks_of(app: Flask, who: str) -> list[tuple[int, int, int, str]]:
    """(campaign id, position, annotation id, last known answer) of an annotator's tasks."""
    with app.app_context():
        found = []
        for campaign in db.session.query(Campaign).order_by(Campaign.id):
            for position, task in enumerate(campaign.tasks):
                for annotation in task.annotations:
                    if annotation.annotator.username == who:
                        found.append((campaign.id, position, annotation.id,
                                      (task.last_answers or [""])[0]))
        return found


def wait_until_active(app: Flask, name: str) -> None:
    """Activation rescores in the background: wait for the switch."""
    for _ in range(600):
        with app.app_context():
            if gold_store.active_version().name == name:
                return
            db.session.remove()
        time.sleep(0.1)
    raise AssertionError(f"{name} was not activated")


def test_campaigns_in_the_browser(app: Flask, release_gold: GoldSet) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.insight.test_browser_boards import serious_axe_violations

    with app.app_context():
        accounts.create_user("root", "root@example.org", PASSWORD, is_admin=True)
        for name in ("ann", "bea"):
            accounts.create_user(name, f"{name}@example.org", PASSWORD)
        db.session.commit()
    researcher = app.test_client()
    register(researcher, "carl")
    temp = release_gold.get("temp", "test")
    ids = list(dict.fromkeys(e.id for e in temp.examples))[:2]
    with LiveServer(app) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            errors: list[str] = []

            def new_page(who: str) -> Any:
                page = browser.new_context().new_page()
                page.on("console",
                        lambda m: errors.append(m.text) if m.type == "error" else None)
                log_in(page, server.url, who)
                return page

            root = new_page("root")
            grant_annotators(root, server.url, ("ann", "bea"))
            assert "ann, bea" in root.inner_text("main")
            assert serious_axe_violations(root) == [], root.url
            for fields in (
                    {"name": "refresh 2026", "kind": "refresh", "track": "present",
                     "ids": "", "values": ""},
                    {"name": "years", "kind": "contexts", "track": "temp",
                     "ids": ",".join(map(str, ids)),
                     "values": ",".join(str(y) for y in range(2022, 2027))}):
                root.goto(f"{server.url}/admin/campaigns")
                root.fill("#name", fields["name"])
                root.select_option("#kind", fields["kind"])
                root.fill("#track", fields["track"])
                root.fill("#as_of", "2026-12-01")
                root.fill("#annotators", "ann, bea")
                root.fill("#limit", "10")
                root.fill("#ids", fields["ids"])
                root.fill("#values", fields["values"])
                with root.expect_navigation():
                    root.click("main form.stacked button[type=submit]")
                assert "started campaign" in root.inner_text("main"), root.inner_text("main")
                assert "0/20 answers" in root.inner_text("main")

            # Each annotator answers their tasks with the keyboard: answer, Tab, evidence,
            # Enter (which opens the next task).
            for who in ("ann", "bea"):
                page = new_page(who)
                page.goto(f"{server.url}/annotate/")
                assert "0/20 tasks done" in page.inner_text("main")
                assert serious_axe_violations(page) == [], page.url
                for campaign_id, position, annotation_id, last in tasks_of(app, who):
                    page.goto(f"{server.url}/annotate/{annotation_id}")
                    text = page.inner_text("main")
                    assert "Alpha" not in text  # never the other annotator's response
                    response = (refresh_plan(position, who, last) if campaign_id == 1
                                else contexts_plan(position, who))
                    if response == "ambiguous":
                        page.check("input[value=ambiguous]")
                        with page.expect_navigation():
                            page.click("#answer-form button[type=submit]")
                    else:
                        # The answer field has the focus (autofocus): typing before the
                        # browser gives it would lose the first keys.
                        page.wait_for_function("document.activeElement && "
                                               "document.activeElement.name === 'answers'")
                        page.keyboard.type(response)
                        page.keyboard.press("Tab")
                        page.keyboard.type(URL)
                        with page.expect_navigation():
                            page.keyboard.press("Enter")
                    if (campaign_id, position) == (1, 0):
                        assert serious_axe_violations(page) == [], page.url
                assert "all your tasks are done" in page.inner_text("main")
                assert "20/20 tasks done" in page.inner_text("main")

            # The organizer: progress, agreement, the queue; adjudicates; builds; activates.
            for campaign_id, name in ((1, "2026-12 refresh"), (2, "2026-12 years")):
                root.goto(f"{server.url}/admin/campaigns/{campaign_id}")
                text = root.inner_text("main")
                assert "20/20 answers" in text and "ann × bea" in text
                assert "Time per task: median" in text
                assert serious_axe_violations(root) == [], root.url
                with root.expect_navigation():
                    root.click("#queue li a >> nth=0")
                assert serious_axe_violations(root) == [], root.url
                decided = 0
                while "/tasks/" in root.url:
                    assert URL in root.inner_text("#responses")
                    root.keyboard.type(f"Decided {decided}")
                    root.keyboard.press("Tab")
                    root.keyboard.type(URL)
                    with root.expect_navigation():
                        root.keyboard.press("Enter")
                    decided += 1
                assert decided == (3 if campaign_id == 1 else 5)
                assert "adjudication queue is empty" in root.inner_text("main")
                root.fill("#name", name)
                with root.expect_navigation():
                    root.click("main form.stacked button[type=submit]")
                assert f"built '{name}'" in root.inner_text("main")
                with root.expect_navigation():
                    root.locator("tr", has_text=name).locator("a.button").click()
                with root.expect_navigation():  # the activation form (its date left empty)
                    root.click("main form#activate button[type=submit]")
                wait_until_active(app, name)

            # The researcher's test upload: the unreleased figures and the gap with CIs.
            token = new_token(researcher)
            present = release_gold.get("present", "test")
            upload = api_upload(researcher, token, present, prediction_file(present))
            assert upload.status_code == 201, upload.json
            assert upload.json["counts"]["unreleased"] == 6
            page = new_page("carl")
            page.goto(f"{server.url}/submissions/{upload.json['id']}")
            assert page.locator("#unreleased-note").is_visible()
            for metric in ("unreleased", "contamination_gap"):
                row = page.locator("tr", has=page.locator(f"td[data-metric={metric}]"))
                assert row.locator("span.ci").count() == 1, metric
            assert serious_axe_violations(page) == [], page.url
            page.goto(f"{server.url}/annotate/")
            assert "Annotate" not in page.inner_text("header")
            assert errors == [] or all("404" in e for e in errors), errors
        finally:
            browser.close()
