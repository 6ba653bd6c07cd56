"""Input releases: a gold version that adds test examples publishes their inputs (key,
question, context; never an answer) when it is active, or on the date the organizer held
them back to; the test blank file serves them after the release's, and a test upload
answers the release's inputs plus whole input releases, which its submission records."""

from __future__ import annotations

import csv
import hashlib
import html
import importlib.util
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from sqlalchemy import func, select

from benchmark import TRACK_INFO, GoldSet, GoldSplit
from benchmark.intervals import wilson_interval
from situatedqa_server.extensions import db
from situatedqa_server.models import InputRelease, Job, Submission, SubmissionRelease
from situatedqa_server.services import input_releases

from .conftest import CANARY_ANSWER, LiveServer, api_upload, csrf_token, new_token, register

ATOM = "{http://www.w3.org/2005/Atom}"
#: The day the tests' clock starts on.
DAY = date(2031, 3, 1)
#: The version's added examples: (track, NQ id, context), answered "fresh answer N".
ADDED = [("temp", 991_000_001, {"date": "2031", "date_type": "sampled_year"}),
         ("temp", 991_000_002, {"date": "2031", "date_type": "sampled_year"}),
         ("temp", 991_000_003, {"date": "2032", "date_type": "sampled_year"}),
         ("geo", 991_000_004, {"location": "Lisbon"})]
VERSION = "2031 contexts"
RELEASE = "2031-contexts"


def added_key(track: str, nq_id: int, context: dict[str, str]) -> str:
    return TRACK_INFO[track].key(nq_id, context)


TEMP_KEYS = [added_key(*a) for a in ADDED if a[0] == "temp"]


def update_lines(gold: GoldSet) -> list[dict[str, Any]]:
    """Adds the examples of ADDED, and changes the answer of temp test's first example (a
    hidden answer: nothing may show which example it is)."""
    test = gold.get("temp", "test").examples
    records: list[dict[str, Any]] = [
        {"track": "temp", "split": "test", "key": test[0].key, "action": "update",
         "answer": [CANARY_ANSWER], "any_answer": [CANARY_ANSWER], "reason": "a new fact"}]
    for number, (track, nq_id, context) in enumerate(ADDED):
        template = gold.get(track, "test").examples[5]
        records.append({
            "track": track, "split": "test", "action": "add",
            "key": added_key(track, nq_id, context), "id": nq_id,
            "question": f"fresh question {number}?", "context": context,
            "answer": [f"fresh answer {number}"], "partitions": list(template.partitions),
            "reason": "a new context"})
    return records


@pytest.fixture
def clock(app: Flask) -> Callable[[date], None]:
    """Sets the app's today (the TODAY setting, which input_releases.today reads)."""
    app.config["TODAY"] = DAY

    def set_day(day: date) -> None:
        app.config["TODAY"] = day
    return set_day


@pytest.fixture
def built(runner: FlaskCliRunner, release_gold: GoldSet, tmp_path: Path,
          clock: Callable[[date], None]) -> Path:
    """The version that adds the fresh examples, built (not active)."""
    path = tmp_path / "fresh.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in update_lines(release_gold)))
    result = runner.invoke(args=["gold", "build", "--from-update", str(path), "--name",
                                 VERSION, "--as-of", "2031-03-01"])
    assert result.exit_code == 0, result.output
    return path


def activate(runner: FlaskCliRunner, *extra: str, name: str = VERSION) -> Any:
    return runner.invoke(args=["gold", "activate", name, *extra])


def blank_lines(client: FlaskClient, url: str) -> list[dict[str, Any]]:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)
    return [json.loads(line) for line in response.get_data(as_text=True).splitlines()]


def answers_file(test: GoldSplit, fresh: dict[str, str] | None = None) -> bytes:
    """Right on every release example (its released answer), plus the fresh keys given."""
    lines = [{"key": e.key, "prediction": e.answers[0]} for e in test.examples]
    lines += [{"key": k, "prediction": v} for k, v in (fresh or {}).items()]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def fresh_answers(keys: list[str]) -> dict[str, str]:
    """The right answer of each fresh temp key (update_lines numbers them in ADDED order)."""
    numbers = {added_key(*a): n for n, a in enumerate(ADDED)}
    return {k: f"fresh answer {numbers[k]}" for k in keys}


# --- releasing -------------------------------------------------------------------------------


def test_activation_releases_the_added_inputs(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        release_gold: GoldSet) -> None:
    before = blank_lines(client, "/data/temp/test/blank.jsonl")
    result = activate(runner)
    assert result.exit_code == 0, result.output
    assert f"input release {RELEASE!r}" in result.output and "2031-03-01" in result.output
    with app.app_context():
        release = db.session.scalars(select(InputRelease)).one()
        assert (release.name, release.release_on) == (RELEASE, DAY)
        assert release.keys == {"temp": TEMP_KEYS, "geo": [added_key(*ADDED[3])]}
        assert release.counts["temp"]["total"] == 3 and release.counts["geo"]["total"] == 1

    # The test blank file: the release's inputs unchanged (the changed answer's example
    # too), then the release's three new inputs, with no answer.
    test = release_gold.get("temp", "test")
    lines = blank_lines(client, "/data/temp/test/blank.jsonl")
    assert lines[:len(test)] == before == [e.blank() for e in test.examples]
    fresh = lines[len(test):]
    assert [line["key"] for line in fresh] == TEMP_KEYS
    assert fresh[0] == {"key": TEMP_KEYS[0], "id": 991_000_001,
                        "question": "fresh question 0?", "date": "2031",
                        "date_type": "sampled_year"}
    body = client.get("/data/temp/test/blank.jsonl").get_data(as_text=True)
    assert "fresh answer" not in body and CANARY_ANSWER not in body
    assert not any({"answer", "answers", "any_answer", "any_answers"} & set(line)
                   for line in lines)
    # Dev stays the active version's split, and no release reaches it.
    assert len(blank_lines(client, "/data/temp/dev/blank.jsonl")) == len(
        release_gold.get("temp", "dev"))

    # One release alone, and an unknown one.
    alone = client.get(f"/data/temp/test/blank.jsonl?release={RELEASE}")
    assert [json.loads(line) for line in alone.get_data(as_text=True).splitlines()] == fresh
    assert blank_lines(client, f"/data/geo/test/blank.jsonl?release={RELEASE}")[0][
        "location"] == "Lisbon"
    missing = client.get("/data/temp/test/blank.jsonl?release=no-such-release")
    assert missing.status_code == 404
    assert "no published input release named 'no-such-release'" in html.unescape(
        missing.get_data(as_text=True))
    assert client.get(f"/data/present/test/blank.jsonl?release={RELEASE}").status_code == 404

    # The page and its JSON twin: name, date, version, counts, the blank files' digests.
    digest = hashlib.sha256(alone.get_data()).hexdigest()
    page = client.get("/data/releases").get_data(as_text=True)
    assert RELEASE in page and "2031-03-01" in page and VERSION in page and digest in page
    document = client.get("/data/releases.json").get_json()
    [described] = document["releases"]
    assert described["name"] == RELEASE and described["date"] == "2031-03-01"
    assert described["version"] == VERSION
    assert described["tracks"]["temp"]["counts"]["total"] == 3
    assert described["tracks"]["temp"]["blank_sha256"] == digest
    assert "fresh answer" not in json.dumps(document) and CANARY_ANSWER not in page

    # The feed parses, and names the release and both gold versions.
    feed = ET.fromstring(client.get("/data/releases.atom").get_data())
    assert feed.tag == f"{ATOM}feed"
    titles = [entry.findtext(f"{ATOM}title") for entry in feed.iter(f"{ATOM}entry")]
    assert f"Input release {RELEASE}" in titles and f"Gold version {VERSION}" in titles
    assert len(titles) == 3


def test_held_back_inputs_appear_on_their_date(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        clock: Callable[[date], None], release_gold: GoldSet) -> None:
    later = DAY + timedelta(days=10)
    result = activate(runner, "--release-inputs-on", later.isoformat())
    assert result.exit_code == 0, result.output
    test = release_gold.get("temp", "test")
    register(client, "early")
    token = new_token(client)

    def visible() -> bool:
        lines = blank_lines(client, "/data/temp/test/blank.jsonl")
        alone = client.get(f"/data/temp/test/blank.jsonl?release={RELEASE}").status_code
        page = client.get("/data/releases").get_data(as_text=True)
        feed = client.get("/data/releases.atom").get_data(as_text=True)
        listed = client.get("/data/releases.json").get_json()["releases"]
        shown = [len(lines) > len(test), alone == 200, RELEASE in page, RELEASE in feed,
                 bool(listed)]
        assert len(set(shown)) == 1, shown
        return shown[0]

    for day in (DAY, later - timedelta(days=1)):
        clock(day)
        assert not visible()
        # Its keys are unknown examples, as if the version had not added them.
        response = api_upload(client, token, test,
                              answers_file(test, fresh_answers(TEMP_KEYS)))
        assert response.status_code == 400
        assert "unknown example for temp/test" in json.dumps(response.get_json())
    clock(later)
    assert visible()
    response = api_upload(client, token, test, answers_file(test, fresh_answers(TEMP_KEYS)))
    assert response.status_code == 201, response.get_json()


def test_a_hold_back_date_that_cannot_be_read_changes_nothing(
        app: Flask, runner: FlaskCliRunner, built: Path, organizer: FlaskClient) -> None:
    for bad in ("2031-13-45", "next week", (DAY - timedelta(days=1)).isoformat()):
        result = activate(runner, "--release-inputs-on", bad)
        assert result.exit_code != 0
        assert "release_inputs_on" in result.output
    with app.app_context():
        version_id = db.session.scalar(select(InputRelease.id))
        assert version_id is None
        assert db.session.scalar(select(func.count(Job.id))) == 0
    url = "/admin/versions/2/activate"
    response = organizer.post(url, data={"csrf_token": csrf_token(organizer, url),
                                         "release_inputs_on": "31/12/2031"})
    assert response.status_code == 400
    assert "is not a date; give it as YYYY-MM-DD" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(func.count(Job.id))) == 0
    # The same form with a readable date activates, holding the inputs back.
    response = organizer.post(url, data={"csrf_token": csrf_token(organizer, url),
                                         "release_inputs_on": "2031-04-01"})
    assert response.status_code == 302
    with app.app_context():
        release = db.session.scalars(select(InputRelease)).one()
        assert release.release_on == date(2031, 4, 1)


# --- uploads ---------------------------------------------------------------------------------


def test_uploads_answer_the_release_plus_whole_input_releases(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        release_gold: GoldSet) -> None:
    assert activate(runner).exit_code == 0
    test = release_gold.get("temp", "test")
    register(client, "fresh")
    token = new_token(client)

    # The release's inputs and the whole input release: accepted, the release recorded.
    both = api_upload(client, token, test, answers_file(test, fresh_answers(TEMP_KEYS)),
                      method_name="both")
    assert both.status_code == 201, both.get_json()
    # The release's inputs alone: accepted, as before; nothing recorded.
    alone = api_upload(client, token, test, answers_file(test), method_name="alone")
    assert alone.status_code == 201, alone.get_json()
    with app.app_context():
        recorded = {row.submission_id: row.input_release_id
                    for row in db.session.scalars(select(SubmissionRelease))}
        release_id = db.session.scalar(select(InputRelease.id))
        assert recorded == {both.get_json()["id"]: release_id}
        assert input_releases.names_answered(both.get_json()["id"]) == [RELEASE]
    # Scored against the active version (the changed answer wrong for both): the paper's
    # metrics on the release's examples alone, the same for both; the fresh examples in
    # their window, which only the first answered.
    n = len(test)
    window = f"fresh_{RELEASE}"
    for upload in (both, alone):
        assert upload.get_json()["metrics"]["em"] == pytest.approx(100 * (n - 1) / n)
        assert upload.get_json()["counts"]["em"] == n
    assert both.get_json()["metrics"][window] == 100.0
    assert both.get_json()["metrics"]["fresh"] == 100.0
    assert both.get_json()["counts"][window] == 3
    assert window not in alone.get_json()["metrics"]
    assert "fresh" not in alone.get_json()["metrics"]

    # A file that answers part of the release: refused, naming what it lacks; nothing stored.
    half = api_upload(client, token, test,
                      answers_file(test, fresh_answers(TEMP_KEYS[:1])), method_name="half")
    assert half.status_code == 400
    message = json.dumps(half.get_json())
    assert f"input release '{RELEASE}'" in message and "answers 1 of the 3" in message
    assert TEMP_KEYS[1] in message and TEMP_KEYS[2] in message and "2 have no prediction" in message
    with app.app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == 2
        assert db.session.scalar(select(func.count()).select_from(SubmissionRelease)) == 1

    # Read again in a rescore, each file answers what it answered: the scores stay.
    rescored = runner.invoke(args=["submissions", "rescore", "--full"])
    assert rescored.exit_code == 0, rescored.output
    for response in (both, alone):
        again = client.get(f"/api/v1/submissions/{response.get_json()['id']}",
                           headers={"Authorization": f"Bearer {token}"}).get_json()
        assert again["metrics"]["em"] == response.get_json()["metrics"]["em"]


def test_a_later_version_rescores_a_file_that_answered_a_release(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        release_gold: GoldSet, tmp_path: Path) -> None:
    """The next version (which changes a fresh example's answer) reads the stored file
    against the release's inputs plus the input release it answered, incrementally and in
    full, with the same result."""
    assert activate(runner).exit_code == 0
    test = release_gold.get("temp", "test")
    register(client, "fresh")
    token = new_token(client)
    both = api_upload(client, token, test, answers_file(test, fresh_answers(TEMP_KEYS)))
    assert both.status_code == 201, both.get_json()
    path = tmp_path / "next.jsonl"
    path.write_text(json.dumps({"track": "temp", "split": "test", "key": TEMP_KEYS[0],
                                "action": "update", "answer": ["a later answer"],
                                "reason": "it changed again"}) + "\n")
    assert runner.invoke(args=["gold", "build", "--from-update", str(path), "--name", "next",
                               "--as-of", "2031-04-01"]).exit_code == 0
    assert activate(runner, name="next").exit_code == 0
    n = len(test)
    url = f"/api/v1/submissions/{both.get_json()['id']}"
    headers = {"Authorization": f"Bearer {token}"}
    window = f"fresh_{RELEASE}"

    def figures() -> tuple[float, float, int]:
        body = client.get(url, headers=headers).get_json()
        return body["metrics"]["em"], body["metrics"][window], body["counts"][window]

    # The paper's metrics on the release's examples (its changed answer wrong); the fresh
    # example whose answer changed again is wrong in the window: 2 of 3.
    expected = (pytest.approx(100 * (n - 1) / n), pytest.approx(200 / 3), 3)
    assert figures() == expected
    assert runner.invoke(args=["submissions", "rescore", "--full"]).exit_code == 0
    assert figures() == expected
    with app.app_context():  # the next version adds nothing: no release of its own
        assert db.session.scalar(select(func.count(InputRelease.id))) == 1


def test_the_client_downloads_the_test_inputs_and_one_release(
        app: Flask, runner: FlaskCliRunner, built: Path, tmp_path: Path,
        release_gold: GoldSet) -> None:
    from click.testing import CliRunner

    from situatedqa_server import client as situatedqa_cli

    assert activate(runner).exit_code == 0
    env = {"SITUATEDQA_CONFIG_DIR": str(tmp_path / "config"), "SITUATEDQA_TOKEN": ""}
    with LiveServer(app) as server:
        def download(*args: str) -> Any:
            return CliRunner().invoke(situatedqa_cli.main, [
                "--url", server.url, "download-inputs", "temp", "test", *args], env=env)

        every = download("-o", str(tmp_path / "all.jsonl"))
        alone = download("--release", RELEASE, "-o", str(tmp_path / "alone.jsonl"))
        unknown = download("--release", "no-such-release")
    assert every.exit_code == 0 and alone.exit_code == 0, (every.output, alone.output)
    lines = (tmp_path / "all.jsonl").read_text().splitlines()
    assert len(lines) == len(release_gold.get("temp", "test")) + 3
    assert [json.loads(line)["key"] for line in
            (tmp_path / "alone.jsonl").read_text().splitlines()] == TEMP_KEYS
    assert unknown.exit_code == 1
    assert "no published input release named 'no-such-release'" in unknown.output


def test_the_harness_tasks_read_the_test_inputs_with_a_release_option(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        tmp_path: Path, release_gold: GoldSet) -> None:
    """`release` on the test split: the release's inputs plus every published input release
    ("all") or the named ones, read from the server, blank (no gold); and the samples of
    such a task upload as answering those releases."""
    pytest.importorskip("datasets")
    from benchmark.harness import lm_eval_task
    from tests.harness.harness_helpers import sample_line

    assert activate(runner).exit_code == 0
    # A second release of one more temp example.
    extra_key = added_key("temp", 991_000_009, {"date": "2033", "date_type": "sampled_year"})
    path = tmp_path / "more.jsonl"
    template = release_gold.get("temp", "test").examples[5]
    path.write_text(json.dumps({
        "track": "temp", "split": "test", "action": "add", "key": extra_key,
        "id": 991_000_009, "question": "one more?", "partitions": list(template.partitions),
        "context": {"date": "2033", "date_type": "sampled_year"}, "answer": ["more"],
        "reason": "a new context"}) + "\n")
    assert runner.invoke(args=["gold", "build", "--from-update", str(path), "--name", "more",
                               "--as-of", "2031-03-01"]).exit_code == 0
    assert activate(runner, name="more").exit_code == 0
    test = release_gold.get("temp", "test")
    base = [e.key for e in test.examples]
    with LiveServer(app) as server:
        def keys(release: str) -> list[str]:
            return [e.key for e in lm_eval_task.release_inputs(server.url, "temp", release)]

        assert keys("all") == [*base, *TEMP_KEYS, extra_key]
        assert keys(RELEASE) == [*base, *TEMP_KEYS]
        assert keys("more") == [*base, extra_key]
        assert keys(f"more,{RELEASE}") == [*base, *TEMP_KEYS, extra_key]
        with pytest.raises(ValueError, match="no published input release named 'nope'"):
            keys("nope")
        loaded = lm_eval_task.load("temp", split="test", release=RELEASE, server=server.url)
        if importlib.util.find_spec("inspect_ai") is not None:  # the Inspect task likewise
            from benchmark.harness.inspect_tasks import samples as inspect_samples

            found = inspect_samples("temp", "test", release=RELEASE, server=server.url)
            assert [sample.id for sample in found] == [*base, *TEMP_KEYS]
            assert all(sample.target == "" for sample in found)
        with pytest.raises(ValueError, match="needs split test"):
            lm_eval_task.load("temp", split="dev", release=RELEASE, server=server.url)
    rows = loaded["eval"]
    assert [row["key"] for row in rows] == [*base, *TEMP_KEYS]
    assert not {"answers", "label"} & set(rows.column_names)
    # A samples file of those documents (each answered right) uploads as answering the
    # release's inputs and the first input release, not the second.
    answers = {**{e.key: e.answers[0] for e in test.examples}, **fresh_answers(TEMP_KEYS)}
    samples = "".join(json.dumps(sample_line(i, row, "temp", answers[row["key"]])) + "\n"
                      for i, row in enumerate(rows))
    register(client, "harness")
    token = new_token(client)
    response = api_upload(client, token, test, samples.encode())
    assert response.status_code == 201, response.get_json()
    with app.app_context():
        assert input_releases.names_answered(response.get_json()["id"]) == [RELEASE]


def test_the_fresh_window_on_the_board_api_csv_and_submission_page(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        release_gold: GoldSet) -> None:
    """A window ranks only the entries that answered it; the others show — there, and every
    entry's paper metrics count the release's examples alone."""
    test = release_gold.get("temp", "test")
    register(client, "windows")
    token = new_token(client)
    before = api_upload(client, token, test, answers_file(test), public="true",
                        method_name="before the release")
    assert before.status_code == 201
    assert activate(runner).exit_code == 0
    fresh = fresh_answers(TEMP_KEYS)
    two_right = dict(fresh, **{TEMP_KEYS[0]: "not it"})
    bodies = [api_upload(client, token, test, answers_file(test, answers), public="true",
                         method_name=name).get_json()
              for name, answers in (("all fresh right", fresh), ("two fresh right", two_right))]
    window = f"fresh_{RELEASE}"
    board = client.get(f"/api/v1/leaderboards/temp?split=test&sort={window}").get_json()
    assert board["columns"][-2:] == ["fresh", window]
    ranked = [(e["method_name"], e["rank"], e["metrics"].get(window), e["counts"].get(window))
              for e in board["entries"] if e["id"]]
    # The changed answer is wrong for every entry; the one uploaded before the version was
    # rescored on the release's examples: its Total is everyone's.
    assert ranked == [("all fresh right", 1, 100.0, 3),
                      ("two fresh right", 2, pytest.approx(200 / 3), 3),
                      ("before the release", None, None, None)]
    totals = {e["method_name"]: e["metrics"]["em"] for e in board["entries"] if e["id"]}
    assert len(set(totals.values())) == 1
    # The page: the window picker, the column, — for the entry that did not answer it.
    page = client.get(f"/leaderboards/temp?split=test&sort={window}").get_data(as_text=True)
    assert f'<option value="{window}" selected>' in page
    assert f'data-column="{window}"' in page and "—" in page and "66.67" in page
    plain = client.get("/leaderboards/temp?split=test").get_data(as_text=True)
    assert f'data-column="{window}"' not in plain and 'name="sort"' in plain
    # The CSV: the window with its CI bounds and count.
    exported = client.get(f"/leaderboards/temp.csv?split=test&sort={window}")
    rows = {r["method_name"]: r for r in csv.DictReader(
        io.StringIO(exported.get_data(as_text=True)))}
    assert rows["two fresh right"][f"{window}_n"] == "3"
    assert rows["before the release"][window] == ""
    # The submission page: the window's table, its Wilson interval.
    detail = client.get(f"/submissions/{bodies[1]['id']}").get_data(as_text=True)
    assert 'id="fresh-windows"' in detail and f'data-metric="{window}"' in detail
    low, high = wilson_interval(2, 3)
    assert f"[{100 * low:.2f}, {100 * high:.2f}]" in detail
    assert bodies[1]["ci"][window] == pytest.approx([100 * low, 100 * high])


def test_fresh_leaves_an_entry_once_a_held_back_release_is_published(
        app: Flask, client: FlaskClient, runner: FlaskCliRunner, built: Path,
        release_gold: GoldSet, tmp_path: Path, clock: Callable[[date], None]) -> None:
    """`fresh` is every published release: an entry scored before a held-back release's
    date answered fewer, so on that date the board stops showing (and ranking) its `fresh`;
    its own release's window stays."""
    test = release_gold.get("temp", "test")
    assert activate(runner).exit_code == 0
    register(client, "early")
    token = new_token(client)
    early = api_upload(client, token, test, answers_file(test, fresh_answers(TEMP_KEYS)),
                       public="true", method_name="early")
    assert early.get_json()["metrics"]["fresh"] == 100.0
    template = test.examples[5]
    context = {"date": "2033", "date_type": "sampled_year"}
    path = tmp_path / "later.jsonl"
    path.write_text(json.dumps({
        "track": "temp", "split": "test", "action": "add", "id": 991_000_009,
        "key": added_key("temp", 991_000_009, context), "question": "a later question?",
        "context": context, "answer": ["a later answer"],
        "partitions": list(template.partitions), "reason": "a later context"}) + "\n")
    assert runner.invoke(args=["gold", "build", "--from-update", str(path), "--name",
                               "later", "--as-of", "2031-04-01"]).exit_code == 0
    later = DAY + timedelta(days=5)
    assert activate(runner, "--release-inputs-on", later.isoformat(),
                    name="later").exit_code == 0

    def shown() -> tuple[Any, Any, list[str]]:
        board = client.get("/api/v1/leaderboards/temp?split=test&sort=fresh").get_json()
        entry = next(e for e in board["entries"] if e["method_name"] == "early")
        return (entry["metrics"].get("fresh"), entry["metrics"].get(f"fresh_{RELEASE}"),
                [c for c in board["columns"] if c.startswith("fresh")])

    assert shown() == (100.0, 100.0, ["fresh", f"fresh_{RELEASE}"])
    clock(later)
    assert shown() == (None, 100.0, ["fresh", f"fresh_{RELEASE}", "fresh_later"])
