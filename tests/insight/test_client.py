"""The `situatedqa` client against a live server: login, submit, list, leaderboard, errors."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner, Result
from flask import Flask
from sqlalchemy import update

from benchmark import TRACK_INFO, GoldSet
from situatedqa_server import client as cli
from situatedqa_server.extensions import db
from situatedqa_server.models import ApiToken, utcnow

from .conftest import LiveServer, make_app, new_token, prediction_file, register


@pytest.fixture
def live(database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A live server allowing one test submission a day, a user and a fresh token."""
    app: Flask = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=1)
    browser = app.test_client()
    register(browser, "carol")
    token = new_token(browser)
    with LiveServer(app) as server:
        yield {"app": app, "url": server.url, "token": token}


def run(live: dict[str, Any], tmp_path: Path, *args: str, **env: str) -> Result:
    """Invoke the client with its config in tmp_path."""
    environment = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"), "SITUATEDQA_TOKEN": "",
                   **env}
    return CliRunner().invoke(cli.main, ["--url", live["url"], *args], env=environment)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    """A prediction file on disk."""
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_login_submit_list_show_leaderboard(live: dict[str, Any], tmp_path: Path,
                                            release_gold: GoldSet) -> None:
    login = run(live, tmp_path, "login", "--token", live["token"])
    assert login.exit_code == 0, login.output
    config = tmp_path / "config" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["token"] == live["token"]

    gold = release_gold.get("geo", "dev")
    predictions = write(tmp_path, "geo.dev.jsonl", prediction_file(gold, len(gold) // 2))
    submitted = run(live, tmp_path, "submit", str(predictions), "--track", "geo",
                    "--split", "dev", "--public", "--method-name", "half right")
    assert submitted.exit_code == 0, submitted.output
    submission_id = re.search(r"submission (\d+): scored", submitted.output).group(1)
    assert re.search(r"^EM \(em\)\s+50\.\d\d\s+\[", submitted.output, re.MULTILINE)
    # The paper's order and labels (Table 7: EM, Common, Rare, EM Any, US, India, Other),
    # as the offline scorer prints them; not the alphabetical order of the JSON keys.
    paper, _, lenient = submitted.output.partition("Not in the paper")
    labels = re.findall(r"^(\w[\w ]*?) \((em\w*)\)", paper, re.MULTILINE)
    assert [name for _, name in labels] == list(TRACK_INFO["geo"].metrics)
    # The lenient metrics (issue 15) after them, under their own heading, never mixed in.
    lenient_names = re.findall(r"^\w[\w ]*? \(((?:em_equiv|f1)\w*)\)", lenient, re.MULTILINE)
    assert sorted(lenient_names) == sorted(TRACK_INFO["geo"].lenient_metrics)
    assert "metric" in submitted.output and "95% CI" in submitted.output

    listed = run(live, tmp_path, "list")
    print("LISTED", listed.output)
    assert listed.exit_code == 0 and "half right" in listed.output and "public" in listed.output
    assert listed.output.splitlines()[0].split() == ["id", "track", "split", "visible",
                                                     "primary", "method"]
    as_json = json.loads(run(live, tmp_path, "list", "--json").output)
    assert [s["method_name"] for s in as_json["submissions"]] == ["half right"]
    shown = run(live, tmp_path, "show", submission_id)
    assert shown.exit_code == 0 and "half right (geo/dev" in shown.output
    assert re.search(r"^Other common \(em_other_common\)", shown.output, re.MULTILINE)
    shown_json = json.loads(run(live, tmp_path, "show", submission_id, "--json").output)
    assert shown_json["metrics"]["em"] == pytest.approx(50.0, abs=0.1)
    board = run(live, tmp_path, "leaderboard", "geo", "--split", "dev")
    assert board.exit_code == 0 and re.search(r"^\s+1\s+50\.\d\d\s+half right", board.output,
                                              re.MULTILINE)
    assert board.output.splitlines()[0].split() == ["rank", "EM", "method", "(team)"]
    inputs = run(live, tmp_path, "download-inputs", "geo", "dev", "-o",
                 str(tmp_path / "blank.jsonl"))
    assert inputs.exit_code == 0
    assert len((tmp_path / "blank.jsonl").read_text().splitlines()) == len(gold)


def test_expired_token_says_so(live: dict[str, Any], tmp_path: Path) -> None:
    assert run(live, tmp_path, "login", "--token", live["token"]).exit_code == 0
    with live["app"].app_context():
        db.session.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(days=1)))
        db.session.commit()
    result = run(live, tmp_path, "list")
    assert result.exit_code == 1
    assert "expired" in result.output and "situatedqa login" in result.output


def test_quota_reached_gives_reset_time(live: dict[str, Any], tmp_path: Path,
                                        release_gold: GoldSet) -> None:
    assert run(live, tmp_path, "login", "--token", live["token"]).exit_code == 0
    gold = release_gold.get("geo", "test")
    predictions = write(tmp_path, "geo.test.jsonl", prediction_file(gold))
    first = run(live, tmp_path, "submit", str(predictions), "--track", "geo", "--split", "test")
    assert first.exit_code == 0, first.output
    second = run(live, tmp_path, "submit", str(predictions), "--track", "geo", "--split", "test")
    assert second.exit_code == 1
    assert re.search(r"quota resets at \d{4}-\d\d-\d\dT00:00:00Z", second.output), second.output

    with predictions.open("rb") as stream:
        raw = requests.post(f"{live['url']}/api/v1/submissions", timeout=60,
                            headers={"Authorization": f"Bearer {live['token']}"},
                            data={"track": "geo", "split": "test", "method_name": "again"},
                            files={"file": ("p.jsonl", stream)})
    assert raw.status_code == 429
    assert raw.json()["error"]["details"]["resets_at"].endswith("T00:00:00Z")
    assert 0 < int(raw.headers["Retry-After"]) <= 86400


def test_validation_problems_are_listed(live: dict[str, Any], tmp_path: Path,
                                        release_gold: GoldSet) -> None:
    assert run(live, tmp_path, "login", "--token", live["token"]).exit_code == 0
    gold = release_gold.get("geo", "dev")
    lines = prediction_file(gold).splitlines(keepends=True)
    broken = write(tmp_path, "broken.jsonl", b"".join([lines[0], b"{not json\n", *lines[2:]]))
    result = run(live, tmp_path, "submit", str(broken), "--track", "geo", "--split", "dev")
    assert result.exit_code == 1
    assert "the file was rejected" in result.output and ":2:" in result.output
    bad_link = run(live, tmp_path, "submit", str(broken), "--track", "geo", "--split", "dev",
                   "--meta", "paper_url=javascript:alert(1)")
    assert bad_link.exit_code == 1 and "paper_url: must be an http" in bad_link.output


def test_submit_prints_the_error_classes_with_their_intervals(
        live: dict[str, Any], tmp_path: Path, release_gold: GoldSet) -> None:
    """The error classes' CIs come just after the upload's answer: the client waits for
    them, so its table has them as the web page does."""
    gold = release_gold.get("geo", "dev")
    predictions = write(tmp_path, "geo.dev.jsonl", prediction_file(gold, len(gold) // 3))
    submitted = run(live, tmp_path, "submit", str(predictions), "--track", "geo",
                    "--split", "dev", "--method-name", "third right",
                    SITUATEDQA_TOKEN=live["token"])
    assert submitted.exit_code == 0, submitted.output
    _, _, errors = submitted.output.partition("situated error classes")
    rows = [line for line in errors.splitlines()
            if line.startswith(("All ", "Common ", "Rare "))]
    assert rows and all(line.count("[") == 2 for line in rows), rows
    assert "still being computed" not in submitted.output
