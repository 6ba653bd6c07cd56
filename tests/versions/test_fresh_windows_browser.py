"""Fresh windows end to end. In Debian's chromium: an organizer runs a `contexts` campaign of
10 tasks with two annotators who agree, builds and activates its version (the inputs
published on activation); a researcher downloads the test blank file (the 10 new inputs, no
answer), uploads through the page a file that answers them (5 right), and reads the window
at 50.00 on n = 10 with its Wilson interval on the board, through the API and the
`situatedqa` client; an entry uploaded before the version shows "—" there and keeps its
paper metrics to the last digit. The board with the window picked passes axe.

Without a browser: a real lm-eval run of the test task with `release=all` (a tiny model
made here, no download) writes a samples file that uploads with the window's figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from benchmark import GoldSet
from benchmark.intervals import wilson_interval
from benchmark.tracks import FIGURE_SEPARATOR, PROVENANCE_METRICS, is_window
from situatedqa_server.extensions import db
from situatedqa_server.models import Campaign
from situatedqa_server.services import accounts
from tests.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS
from tests.server.conftest import (
    PASSWORD,
    LiveServer,
    api_upload,
    new_token,
    prediction_file,
    register,
)

from .test_campaigns_browser import (
    URL,
    grant_annotators,
    log_in,
    tasks_of,
    wait_until_active,
)
from .test_input_releases import (  # noqa: F401  (pytest finds fixtures by name)
    RELEASE,
    TEMP_KEYS,
    answers_file,
    built,
    clock,
    fresh_answers,
)

#: The campaign's version, and the input release its activation makes (its name's slug).
VERSION = "2027 contexts"
FRESH_RELEASE = "2027-contexts"
WINDOW = f"fresh_{FRESH_RELEASE}"


def in_chromium(test: Callable[..., None]) -> Callable[..., None]:
    """tests/browser.py's marks on one test (the module's harness test runs without them)."""
    for mark in BROWSER_MARKS:
        test = mark(test)
    return test


def agreed_answer(position: int) -> str:
    """Both annotators' answer to a task: the same string, one no release text holds."""
    return f"Zephyrton {position} fresh city"


def paper_part(values: dict[str, Any]) -> dict[str, Any]:
    """The paper's metrics of a metrics or CI dict: neither a window, a window's figure
    (`<window>/<figure>`), nor a provenance figure."""
    return {name: value for name, value in values.items()
            if not is_window(name.partition(FIGURE_SEPARATOR)[0])
            and name not in PROVENANCE_METRICS}


def settled(client: FlaskClient, token: str, submission_id: int) -> dict[str, Any]:
    """A submission as the API serves it once every CI is there (the error classes' are
    computed just after the upload's answer)."""
    from situatedqa_server.client import pending_intervals

    for _ in range(300):
        body: dict[str, Any] = client.get(f"/api/v1/submissions/{submission_id}",
                                          headers={"Authorization": f"Bearer {token}"}
                                          ).get_json()
        if body.get("status", "scored") == "scored" and not pending_intervals(body):
            return body
        time.sleep(0.1)
    raise AssertionError(f"submission {submission_id} never had every CI")


@in_chromium
def test_a_fresh_window_in_the_browser_api_and_client(
        app: Flask, release_gold: GoldSet, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from situatedqa_server import client as situatedqa_cli
    from tests.insight.test_browser_boards import serious_axe_violations

    with app.app_context():
        accounts.create_user("root", "root@example.org", PASSWORD, is_admin=True)
        for name in ("ann", "bea"):
            accounts.create_user(name, f"{name}@example.org", PASSWORD)
        db.session.commit()
    test = release_gold.get("temp", "test")
    researcher = app.test_client()
    register(researcher, "carl")
    token = new_token(researcher)

    # Before the version: an entry that answers the release's inputs (half right).
    early = api_upload(researcher, token, test, prediction_file(test, len(test) // 2),
                       public="true", method_name="before the version")
    assert early.status_code == 201, early.get_json()
    early_id = early.get_json()["id"]
    before = settled(researcher, token, early_id)

    ids = list(dict.fromkeys(e.id for e in test.examples))[:2]
    with LiveServer(app) as server, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            errors: list[str] = []

            def new_page(who: str) -> Any:
                page = browser.new_context(accept_downloads=True).new_page()
                page.on("console",
                        lambda m: errors.append(m.text) if m.type == "error" else None)
                log_in(page, server.url, who)
                return page

            # The organizer grants the annotators and starts a contexts campaign of 10.
            root = new_page("root")
            grant_annotators(root, server.url, ("ann", "bea"))
            root.fill("#name", "years")
            root.select_option("#kind", "contexts")
            root.fill("#track", "temp")
            root.fill("#as_of", "2026-12-01")
            root.fill("#annotators", "ann, bea")
            root.fill("#limit", "10")
            root.fill("#ids", ",".join(map(str, ids)))
            root.fill("#values", ",".join(str(y) for y in range(2022, 2027)))
            with root.expect_navigation():
                root.click("main form.stacked button[type=submit]")
            assert "started campaign" in root.inner_text("main"), root.inner_text("main")
            assert "0/20 answers" in root.inner_text("main")

            # Both annotators answer every task blind, with the same answer.
            for who in ("ann", "bea"):
                page = new_page(who)
                for _campaign, position, annotation_id, _last in tasks_of(app, who):
                    page.goto(f"{server.url}/annotate/{annotation_id}")
                    # The answer field has the focus (autofocus): typing before the browser
                    # gives it would lose the first keys.
                    page.wait_for_function(
                        "document.activeElement && document.activeElement.name === 'answers'")
                    page.keyboard.type(agreed_answer(position))
                    page.keyboard.press("Tab")
                    page.keyboard.type(URL)
                    with page.expect_navigation():
                        page.keyboard.press("Enter")
                assert "all your tasks are done" in page.inner_text("main")
                page.close()
            with app.app_context():
                campaign = db.session.query(Campaign).one()
                truth = {task.key: agreed_answer(position)
                         for position, task in enumerate(campaign.tasks)}
            assert len(truth) == 10

            # Every task agreed: nothing to adjudicate; build, then activate (date empty:
            # the inputs are published on activation).
            root.goto(f"{server.url}/admin/campaigns/1")
            text = root.inner_text("main")
            assert "20/20 answers" in text and "No task waits for adjudication" in text, text
            root.fill("#name", VERSION)
            with root.expect_navigation():
                root.click("main form.stacked button[type=submit]")
            assert f"built '{VERSION}'" in root.inner_text("main")
            with root.expect_navigation():
                root.locator("tr", has_text=VERSION).locator("a.button").click()
            with root.expect_navigation():
                root.click("main form#activate button[type=submit]")
            wait_until_active(app, VERSION)
            releases = researcher.get("/data/releases.json").get_json()["releases"]
            assert [r["name"] for r in releases] == [FRESH_RELEASE]

            # The researcher downloads the test blank file from the upload page.
            carl = new_page("carl")
            carl.goto(f"{server.url}/submissions/new")
            carl.select_option("#track", "temp")
            carl.select_option("#split", "test")
            with carl.expect_download() as download:
                carl.click("#blank-link")
            blank = tmp_path / "blank.jsonl"
            download.value.save_as(blank)
            text = blank.read_text(encoding="utf-8")
            lines = [json.loads(line) for line in text.splitlines()]
            assert [line["key"] for line in lines[:len(test)]] == [e.key for e in test.examples]
            fresh = lines[len(test):]
            assert sorted(line["key"] for line in fresh) == sorted(truth)
            assert not any({"answer", "answers", "any_answer"} & line.keys() for line in lines)
            assert not [a for a in truth.values() if a in text]

            # Its upload through the page: the release's inputs and the 10 new, 5 right.
            keys = [line["key"] for line in fresh]
            answers = {key: truth[key] if i % 2 == 0 else "not the fresh answer"
                       for i, key in enumerate(keys)}
            upload = tmp_path / "fresh.jsonl"
            upload.write_bytes(answers_file(test, answers))
            carl.select_option("#track", "temp")
            carl.select_option("#split", "test")
            carl.set_input_files("#file", str(upload))
            carl.fill("#method_name", "fresh method")
            carl.select_option("#public", "yes")
            with carl.expect_navigation():
                carl.click("main form.stacked button[type=submit]")
            assert "/submissions/" in carl.url and "/new" not in carl.url, \
                carl.inner_text("main")
            fresh_id = int(carl.url.rstrip("/").rsplit("/", 1)[1])

            # The API: the window at 50.0 on n = 10 with its Wilson interval.
            body = settled(researcher, token, fresh_id)
            low, high = wilson_interval(5, 10)
            assert body["metrics"][WINDOW] == 50.0
            assert body["counts"][WINDOW] == 10
            assert body["ci"][WINDOW] == pytest.approx([100 * low, 100 * high])
            assert body["metrics"]["fresh"] == 50.0  # every published release: this one
            shown_ci = f"[{100 * low:.2f}, {100 * high:.2f}]"

            # The board: pick the window, submit; its column (50.00 and the CI; — before).
            carl.goto(f"{server.url}/leaderboards/temp?split=test")
            carl.select_option("form.windows select[name=sort]", WINDOW)
            with carl.expect_navigation():
                carl.click("form.windows button[type=submit]")
            headers = [th.get_attribute("data-column")
                       for th in carl.locator("table.board thead th").all()]
            column = headers.index(WINDOW)

            def cell(method: str) -> str:
                row = carl.locator("table.board tbody tr", has_text=method)
                return str(row.locator("td").nth(column).inner_text())

            assert cell("fresh method").split() == ["50.00", *shown_ci.split()]
            assert cell("before the version").strip() == "—"
            assert serious_axe_violations(carl) == [], carl.url

            # The client prints the window's row: 50.00, the CI, n = 10.
            env = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"),
                   "SITUATEDQA_TOKEN": token}
            shown = CliRunner().invoke(situatedqa_cli.main, [
                "--url", server.url, "show", str(fresh_id)], env=env)
            assert shown.exit_code == 0, shown.output
            [row] = [line for line in shown.output.splitlines() if f"({WINDOW})" in line]
            assert row.split()[-4:] == ["50.00", *shown_ci.split(), "10"], row
            assert errors == [] or all("404" in e for e in errors), errors
        finally:
            browser.close()

    # The earlier entry: no window, and its paper metrics and CIs to the last digit.
    after = settled(researcher, token, early_id)
    assert WINDOW not in after["metrics"] and "fresh" not in after["metrics"]
    assert {"em", "em_any", "em_sampled", "outdated_rate"} <= paper_part(before["metrics"]).keys()
    # The version's new contexts widen their questions' any_answer: those release examples'
    # gold is unpublished now, so the provenance figures appear (they are left out here).
    assert set(PROVENANCE_METRICS) <= after["metrics"].keys()
    assert paper_part(after["metrics"]) == paper_part(before["metrics"])
    assert paper_part(after["ci"]) == paper_part(before["ci"])
    assert paper_part(after["counts"]) == paper_part(before["counts"])


# --- the harness ------------------------------------------------------------------------------


def run_lm_eval(model: Path, out: Path, *args: str) -> Path:
    """lm_eval on the project's task folder with the tiny model; the samples file it wrote."""
    from benchmark.harness.lm_eval_task import TASKS_DIR

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(out / "hf")}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lm_eval")), "--model", "hf", "--model_args",
         f"pretrained={model},dtype=float32", "--include_path", str(TASKS_DIR),
         "--batch_size", "64", "--log_samples", "--output_path", str(out),
         "--gen_kwargs", "max_gen_toks=2", *args],
        cwd=out, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    [found] = sorted(out.rglob("samples_*.jsonl"))
    return found


@pytest.mark.slow
def test_an_lm_eval_run_with_release_all_uploads_with_its_window(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,  # noqa: F811
        release_gold: GoldSet, tmp_path: Path) -> None:
    """The whole temp test task (the release's 2,795 inputs plus the input release's 3)
    through the real lm-eval with a tiny GPT-2 made here: its samples file answers every
    input, so it uploads, and carries the window with its count and CI."""
    pytest.importorskip("lm_eval")
    from tests.harness.harness_helpers import tiny_model

    assert runner.invoke(args=["gold", "activate", "2031 contexts"]).exit_code == 0
    test = release_gold.get("temp", "test")
    words = sorted({w for e in release_gold.get("temp", "train").examples[:300]
                    for a in e.answers for w in a.lower().split()})
    model = Path(tiny_model(tmp_path / "tiny-gpt2", words))
    out = tmp_path / "lm-eval"
    out.mkdir()
    with LiveServer(app) as server:
        samples = run_lm_eval(model, out, "--tasks", "situatedqa_temp", "--metadata",
                              json.dumps({"split": "test", "release": "all",
                                          "server": server.url}))
    docs = [json.loads(line)["doc"] for line in samples.read_text().splitlines()]
    assert [d["key"] for d in docs] == [*(e.key for e in test.examples), *TEMP_KEYS]
    assert not any({"answers", "any_answers", "label"} & d.keys() for d in docs)
    register(client, "harness")
    token = new_token(client)
    response = api_upload(client, token, test, samples.read_bytes(), method_name="tiny gpt-2")
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    window = f"fresh_{RELEASE}"
    assert body["harness"]["harness"] == "lm-eval"
    assert body["counts"][window] == 3 and body["counts"]["em"] == len(test)
    assert 0.0 <= body["metrics"][window] <= 100.0 and body["ci"][window]
    right = sum(json.loads(line)["filtered_resps"][0] == fresh_answers(TEMP_KEYS)[key]
                for line in samples.read_text().splitlines()
                if (key := json.loads(line)["doc"]["key"]) in TEMP_KEYS)
    assert body["metrics"][window] == pytest.approx(100 * right / 3)
