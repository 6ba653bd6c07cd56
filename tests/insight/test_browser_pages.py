"""Issue 12 in Debian's chromium at 1280x800 and 390x844: plots that say something, the
upload page, the compare picker and its messages, layouts that never scroll sideways."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import ReportedEntry, Submission
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from .conftest import PASSWORD, LiveServer, new_token, prediction_file, register

pytestmark = BROWSER_MARKS
SIZES = [(1280, 800), (390, 844)]
LONG_NAME = "p" * 120 + "-predictions-of-a-very-long-experiment-" + "q" * 75 + ".jsonl"


def upload_named(client: FlaskClient, token: str, gold: Any, data: bytes, filename: str,
                 **fields: str) -> int:
    """An API upload under a chosen file name; the new submission's id."""
    form = {"track": gold.track, "split": gold.split, "method_name": "m", "public": "true",
            **fields, "file": (io.BytesIO(data), filename)}
    response = client.post("/api/v1/submissions", data=form, content_type="multipart/form-data",
                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.get_data(as_text=True)
    return int(response.json["id"])


@pytest.fixture
def boards(seeded: dict[str, Any], release_gold: GoldSet) -> dict[str, Any]:
    """The seeded boards plus: identification entries, a 240-character file name, a
    published entry of another team, paper rows, and a dev entry published 10 days ago."""
    client: FlaskClient = seeded["client"]
    token, ids = seeded["token"], seeded["ids"]
    for name, share in (("id strong", 2), ("id weak", 4)):
        gold = release_gold.get("temp-id", "dev")
        ids[name] = upload_named(client, token, gold, prediction_file(gold, len(gold) // share),
                                 "id.jsonl", method_name=name)
    dev = release_gold.get("temp", "dev")
    assert len(LONG_NAME) == 240
    ids["long"] = upload_named(client, token, dev, prediction_file(dev, len(dev) // 3),
                               LONG_NAME, method_name="long file name")
    other = client.application.test_client()
    register(other, "bob")
    ids["bob"] = upload_named(other, new_token(other), dev, prediction_file(dev, len(dev) // 4),
                              "bob.jsonl", method_name="bob's method")
    with client.application.app_context():
        db.session.get(Submission, ids["weak-dev"]).created_at -= timedelta(days=10)
        db.session.add_all([
            ReportedEntry(track="temp", split="test", method_name="DPR (paper)", source="T5",
                          primary_metric=23.0, metrics={"em": 23.0, "em_sampled": 17.2}),
            ReportedEntry(track="present", split="test", method_name="BART (paper)",
                          source="T9", primary_metric=None,
                          metrics={"em": None, "em_stable": 28.8, "em_updated": 5.3})])
        db.session.commit()
    return seeded


@contextmanager
def chromium(seeded: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    """Debian's chromium and a live server of the seeded app."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with LiveServer(seeded["client"].application) as server, \
            sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser, server.url
        finally:
            browser.close()


def open_page(browser: Any, size: tuple[int, int], problems: list[str]) -> Any:
    """A page of the given viewport that records script errors and failed subresources."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: problems.append(f"failed {r.url}"))
    return page


def log_in(page: Any, url: str, username: str) -> None:
    """Log in through the page."""
    page.goto(f"{url}/auth/login")
    page.fill("#username", username)
    page.fill("#password", PASSWORD)
    page.click("main form.stacked button[type=submit]")
    page.wait_for_load_state()


def no_sideways_scroll(page: Any) -> None:
    """The page is never wider than the window (wide tables scroll inside themselves)."""
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], (page.url, widths)


def loaded_images(page: Any) -> int:
    """Wait for every figure image to load; how many there are."""
    images = page.locator("figure.plot img")
    for index in range(images.count()):
        image = images.nth(index)
        image.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                               arg=image.element_handle())
    return int(images.count())


def data_rows(page: Any, figure: int) -> list[list[str]]:
    """The "data in words" table of a figure, opened as a reader would."""
    details = page.locator("figure.plot details.data-in-words").nth(figure)
    details.locator("summary").click()
    rows = details.locator("table.plot-data tbody tr")
    return [[cell.strip() for cell in rows.nth(i).locator("td").all_inner_texts()]
            for i in range(rows.count())]


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_boards_say_something_and_fit(boards: dict[str, Any], size: tuple[int, int],
                                      tmp_path: Path) -> None:
    with chromium(boards) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, size, problems)

        page.goto(f"{url}/leaderboards/temp?split=dev")
        no_sideways_scroll(page)
        assert loaded_images(page) == 2  # top entries, and the SOTA over two dates
        method = page.locator("table.board td.method").first.bounding_box()
        assert method["width"] >= (230 if size[0] > 600 else 140)
        sota = data_rows(page, 1)
        assert len(sota) == 2 and all(re.fullmatch(r"\d{4}-\d\d-\d\d", r[0]) for r in sota)
        page.screenshot(path=str(tmp_path / f"temp-dev-{size[0]}.png"), full_page=True)

        page.goto(f"{url}/leaderboards/temp-id?split=dev")
        no_sideways_scroll(page)
        assert loaded_images(page) == 1
        box = page.locator("table.board td.method").first.bounding_box()
        assert box["width"] >= (230 if size[0] > 600 else 140)  # never 3-4 lines a name
        scroller = page.locator(".table-scroll").first
        if size[0] < 600:  # the breakdown columns scroll inside the table
            assert scroller.evaluate("e => e.scrollWidth > e.clientWidth")

        page.goto(f"{url}/leaderboards/temp?split=test")
        no_sideways_scroll(page)
        assert loaded_images(page) == 1  # both entries were published today: no SOTA chart
        assert "appears once entries were published on two different days" in page.inner_text(
            "#insight")
        note = page.inner_text("#paper-rows")
        assert "Sampled has 1,482 examples here and 1,472 in the paper" in note
        assert "Start has 913 examples here and 923 in the paper" in note

        page.goto(f"{url}/leaderboards/present?split=dev")  # an empty board: a sentence
        assert page.locator("figure.plot").count() == 0
        assert "No published submissions on this board yet" in page.inner_text(".plot-note")

        page.goto(f"{url}/leaderboards/present?split=test")
        assert "listed after the ranked entries" in page.inner_text("#paper-rows")
        assert page.locator("table.board a.footnote-ref").count() == 1
        assert problems == []


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_submission_pages_plots_and_long_names(boards: dict[str, Any], size: tuple[int, int],
                                               tmp_path: Path) -> None:
    ids = boards["ids"]
    with chromium(boards) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, size, problems)
        log_in(page, url, "alice")

        page.goto(f"{url}/submissions/{ids['long']}")
        no_sideways_scroll(page)  # a 240-character file name wraps
        assert LONG_NAME in page.inner_text("dl.meta").replace("\n", "")
        assert loaded_images(page) == 2
        years = data_rows(page, 1)
        assert len(years) > 5
        for label, _, _, n in years:  # decades before 1990, and every bin 30 examples or more
            first, _, last = label.partition("\u2013")
            assert int(n) >= 30
            if int(first) < 1990:
                assert last and int(last) - int(first) >= 9, label
        page.screenshot(path=str(tmp_path / f"submission-{size[0]}.png"), full_page=True)

        page.goto(f"{url}/submissions/{ids['id strong']}")
        no_sideways_scroll(page)
        assert loaded_images(page) == 1
        assert "Grouped bar chart" in (page.locator("figure.plot img").get_attribute("alt") or "")
        groups = {row[0] for row in data_rows(page, 0)}
        assert "all" in groups and len(groups) >= 3  # all examples, then each source dataset

        page.goto(f"{url}/insight/submissions/{ids['long']}/diagnostics")
        no_sideways_scroll(page)
        assert problems == []


def test_upload_page_formats_blank_file_and_quota(boards: dict[str, Any]) -> None:
    with chromium(boards) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[1], problems)
        log_in(page, url, "alice")
        page.goto(f"{url}/submissions/new")
        no_sideways_scroll(page)
        # The quota is said before the file is chosen.
        assert page.evaluate("document.querySelector('#quota').compareDocumentPosition("
                             "document.querySelector('#file')) & Node.DOCUMENT_POSITION_FOLLOWING")
        formats = page.inner_text("#formats")
        for name in ("Compact JSON Lines", "JSON object", "CSV", "pred_answer", "gzip"):
            assert name in formats
        page.select_option("#track", "geo")
        page.select_option("#split", "test")
        href = page.get_attribute("#blank-link", "href")
        assert href == "/data/geo/test/blank.jsonl"
        assert page.request.get(url + href).status == 200
        assert page.get_attribute("table.quota tr[data-track=geo]", "class") == "chosen"
        page.goto(f"{url}/submissions/new?track=curprev&split=train")  # works without script
        assert page.get_attribute("#blank-link", "href") == "/data/curprev/train/blank.jsonl"
        assert problems == []


def test_compare_picker_messages_and_predictions(boards: dict[str, Any],
                                                 release_gold: GoldSet) -> None:
    ids = boards["ids"]
    gold = release_gold.get("temp", "dev")
    with chromium(boards) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, SIZES[0], problems)
        log_in(page, url, "alice")
        page.goto(f"{url}/insight/compare")
        page.select_option("#pick-a", str(ids["strong-dev"]))
        # B offers only entries on A's board (temp / dev).
        assert page.locator(f"#pick-b option[value='{ids['weak-test']}']").is_disabled()
        page.select_option("#pick-b", str(ids["weak-dev"]))
        page.click("form.picker button[type=submit]")
        page.wait_for_selector("table.compare")
        no_sideways_scroll(page)

        differing = len(gold) // 2 - len(gold) // 5
        assert f"{differing} examples" in page.inner_text("p.pager")
        first = page.locator("table.examples tbody tr").first
        cells = first.locator("td").all_inner_texts()
        assert cells[4].startswith("✓") and cells[3].split(" | ")[0] in cells[4]  # A beside gold
        assert cells[5].startswith("✗") and "no such answer" in cells[5]
        page.select_option("select[name=show]", "all")  # a change submits the filters
        page.wait_for_url("**show=all**")
        assert f"{len(gold)} examples" in page.inner_text("p.pager")
        page.select_option("select[name=partition]", "start")
        page.wait_for_url("**partition=start**")
        contexts = page.locator("table.examples tbody td:nth-child(3)").all_inner_texts()
        assert contexts and all("date_type: start" in c for c in contexts)

        page.goto(f"{url}/insight/compare?a={ids['strong-dev']}&b={ids['bob']}")
        assert "are theirs" in page.inner_text("main")  # another team's predictions stay theirs
        bob = page.locator("table.examples tbody td:nth-child(6)").all_inner_texts()
        assert bob and all(text.strip() in ("✓", "✗") for text in bob)

        page.goto(f"{url}/insight/compare?a={ids['strong-test']}&b={ids['weak-test']}")
        assert page.locator("table.examples").count() == 0
        assert "only aggregates are shown" in page.inner_text("main")

        missing = page.goto(f"{url}/insight/compare?a={ids['strong-dev']}&b=999")
        assert missing.status == 404
        assert "no submission 999" in page.inner_text("[role=alert]")
        assert page.input_value("#pick-a") == str(ids["strong-dev"])  # the good one is kept
        typed = page.goto(f"{url}/insight/compare?a={ids['strong-dev']}&b=abc")
        assert typed.status == 400
        assert "'abc' is not a submission number" in page.inner_text("[role=alert]")
        assert [p for p in problems if "status of 40" not in p] == []


def test_column_picker_shows_lenient_columns(boards: dict[str, Any]) -> None:
    """Ticking a column not in the paper shows it at once (a reload), and unticking hides it."""
    with chromium(boards) as (browser, url):
        problems: list[str] = []
        page = open_page(browser, (1280, 800), problems)
        page.goto(f"{url}/leaderboards/temp?split=dev")
        page.wait_for_load_state("networkidle")  # the plots, before the reload cancels them
        headers = page.locator("table.board thead th.num")
        assert headers.count() == 5 and page.locator("th[data-column=f1]").count() == 0
        page.locator(".column-picker summary").click()
        with page.expect_navigation():
            page.check(".column-picker input[value=f1]")
        assert "show=f1" in page.url
        assert page.locator("th.lenient[data-column=f1]").count() == 1
        assert "not in the paper" in page.inner_text("th[data-column=f1]")
        cells = page.locator("table.board tbody tr").first.locator("td.lenient")
        assert cells.count() == 1 and re.fullmatch(r"\d+\.\d\d", cells.inner_text().split()[0])
        no_sideways_scroll(page)
        page.wait_for_load_state("networkidle")
        with page.expect_navigation():
            page.uncheck(".column-picker input[value=f1]")
        assert "show=" not in page.url and page.locator("th[data-column=f1]").count() == 0
        page.wait_for_load_state("networkidle")
        assert problems == []
