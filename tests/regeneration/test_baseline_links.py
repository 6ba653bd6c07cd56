"""A baseline entry's "paper" link is what describes its method: the SituatedQA paper for
the runners that reproduce its setup, the method's own paper otherwise, or none."""

from __future__ import annotations

import gzip
from typing import Any

from flask import Flask
from sqlalchemy import select

from baselines.runners import RUNNERS, SITUATEDQA_PAPER_URL
from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from situatedqa_server.services.baselines import REFERENCE_DIR
from tests.server.conftest import api_upload, new_token, register


def test_each_runner_links_what_describes_it() -> None:
    assert RUNNERS["dpr"].paper_url == RUNNERS["bart"].paper_url == SITUATEDQA_PAPER_URL
    others = {name: r.paper_url for name, r in RUNNERS.items() if name not in ("dpr", "bart")}
    assert SITUATEDQA_PAPER_URL not in others.values()
    assert others["id-random"] is None and others["id-tfidf"] is None
    assert others["nn-train"] == "https://arxiv.org/abs/2008.02637"  # Lewis et al., 2021
    assert others["smollm2-0shot"] == others["smollm2-5shot"] is not None


def test_loaded_entries_carry_their_runners_link(app: Flask, runner: Any) -> None:
    done = runner.invoke(args=["baselines", "regenerate", "--quick"])
    assert done.exit_code == 0, done.output
    with app.app_context():
        links = db.session.execute(select(Submission.baseline_runner, Submission.paper_url)
                                   .where(Submission.is_baseline.is_(True))).all()
        assert links and all(url == RUNNERS[name].paper_url for name, url in links)
        # A kept entry made before takes its runner's link on the next regeneration.
        for entry in db.session.scalars(select(Submission).where(Submission.is_baseline)):
            entry.paper_url = SITUATEDQA_PAPER_URL
        db.session.commit()
    again = runner.invoke(args=["baselines", "regenerate", "--quick"])
    assert again.exit_code == 0, again.output
    with app.app_context():
        links = db.session.execute(select(Submission.baseline_runner, Submission.paper_url)
                                   .where(Submission.is_baseline.is_(True))).all()
        assert all(url == RUNNERS[name].paper_url for name, url in links)
    client = app.test_client()
    page = client.get("/leaderboards/temp?split=dev").get_data(as_text=True)
    assert "https://arxiv.org/abs/2008.02637" in page


def test_a_reference_file_uploaded_again_is_marked_as_the_baselines_duplicate(
        app: Flask, runner: Any, release_gold: GoldSet) -> None:
    done = runner.invoke(args=["baselines", "regenerate", "--quick"])
    assert done.exit_code == 0, done.output
    with app.app_context():
        baseline = db.session.scalars(select(Submission).where(
            Submission.baseline_runner == "nn-train", Submission.track == "temp",
            Submission.split == "dev")).one()
        baseline_id = baseline.id
    browser = app.test_client()
    register(browser, "copier")
    data = gzip.decompress((REFERENCE_DIR / "nn-train.temp.dev.jsonl.gz").read_bytes())
    uploaded = api_upload(browser, new_token(browser), release_gold.get("temp", "dev"), data,
                          public="true", method_name="my new system")
    assert uploaded.status_code == 201, uploaded.get_json()
    flag = f"automatic: the same predictions as the baseline entry #{baseline_id}"
    with app.app_context():
        copy = db.session.get(Submission, uploaded.get_json()["id"])
        assert copy is not None and copy.duplicate_of_id == baseline_id
        assert copy.flag_reason == flag
    board = browser.get("/leaderboards/temp?split=dev").get_data(as_text=True)
    row = board[board.index("my new system"):]
    assert f"flagged: {flag}" in row[:row.index("</tr>")]
