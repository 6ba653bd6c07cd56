"""Disputes of the gold end to end with the test client (SQLite and PostgreSQL).

Researchers dispute dev and test examples; an organizer accepts and rejects them in the
joint adjudication queue and builds a version from the accepted ones, whose changelog
credits the authors. Bad input is refused with its field named and changes nothing; every
route is tried with the wrong account; a dispute's reply is the same whether the proposed
answer is the (hidden) gold or not; the rate limit holds, and its outage is no 500.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import AuditLog, Dispute, GoldVersion
from situatedqa_server.services import accounts, gold_store
from tests.server.conftest import make_app
from tests.server.test_ratelimit_storage import _dead_redis

from .conftest import CANARY_ANSWER, CANARY_KEY, PASSWORD, csrf_token, login, register
from .test_campaigns_pages import client_of

URL = "https://en.wikipedia.org/wiki/Evidence"


def page_of(track: str, split: str, key: str) -> str:
    return f"/data/{track}/{split}/examples/{quote(key)}"


def dispute(client: FlaskClient, track: str, split: str, key: str, answers: str = "An answer",
            evidence: str = URL, **extra: str) -> Any:
    """File a dispute through the form of "My disputes"."""
    return client.post("/disputes/", data={
        "csrf_token": csrf_token(client, "/disputes/"), "track": track, "split": split,
        "key": key, "answers": answers, "evidence": evidence, **extra})


def decide(client: FlaskClient, dispute_id: int, **data: str) -> Any:
    page = f"/admin/disputes/{dispute_id}"
    return client.post(page, data={"csrf_token": csrf_token(client, page), **data})


def count(app: Flask) -> int:
    with app.app_context():
        return db.session.query(Dispute).count()


def text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def main(response: Any) -> str:
    """The page's main element (the header names the account)."""
    found = re.search(r"<main>(.*)</main>", text(response), re.S)
    assert found is not None
    return found.group(1)


def mine(page: str, proposal: str) -> str:
    """A "My disputes" page without what differs between two accounts whatever the gold:
    the proposal typed, the dispute's number and the session's CSRF token."""
    page = page.replace(proposal, "PROPOSAL")
    page = re.sub(r'name="csrf_token" type="hidden" value="[^"]+"', "CSRF", page)
    return re.sub(r"<tr><td>\d+</td>", "<tr><td>ID</td>", page)


def test_example_pages_show_gold_on_dev_only(app: Flask, release_gold: GoldSet) -> None:
    dev, test = release_gold.get("temp", "dev").examples[0], release_gold.get("temp",
                                                                              "test").examples[0]
    anonymous = app.test_client()
    shown = anonymous.get(page_of("temp", "dev", dev.key))
    assert shown.status_code == 200
    assert dev.question in text(shown) and f"<li>{dev.answers[0]}</li>" in text(shown)
    assert "Log in</a> to dispute the gold" in text(shown)
    hidden = anonymous.get(page_of("temp", "test", test.key))
    assert hidden.status_code == 200 and test.question in text(hidden)
    assert 'id="gold-hidden"' in text(hidden) and 'id="gold"' not in text(hidden)
    assert f"<li>{test.answers[0]}</li>" not in text(hidden)
    assert anonymous.get(page_of("temp", "dev", "1|2|3")).status_code == 404
    assert anonymous.get(page_of("nosuch", "dev", dev.key)).status_code == 404
    identification = release_gold.get("temp-id", "dev").examples[0]
    researcher = client_of(app, "alice")
    label_page = researcher.get(page_of("temp-id", "dev", identification.key))
    assert "Label:" in text(label_page) and 'id="dispute-form"' not in text(label_page)
    assert 'id="dispute-form"' in text(researcher.get(page_of("temp", "test", test.key)))


def test_an_example_page_names_this_contexts_answers_and_the_others(
        app: Flask, release_gold: GoldSet) -> None:
    """As of 2015 England last reached a semi-final in 1990: 2018 is the answer of a later
    context, never 'also accepted' for this one."""
    dev = release_gold.get("temp", "dev")
    example = dev.examples[dev.index["-7924170207595297549|2015|sampled_year"]]
    assert set(example.answers) == {"1990"} and "2018" in example.any_answers
    page = text(app.test_client().get(page_of("temp", "dev", example.key)))
    gold = page[page.index('id="gold"'):page.index("</ul>", page.index('id="gold"'))]
    assert "<li>1990</li>" in gold and "2018" not in gold
    assert "Also accepted" not in page
    others = page[page.index('id="other-context-answers"'):]
    others = others[:others.index("</p>")]
    assert "other contexts" in others and "2018" in others and "1990" not in others


def test_disputes_are_decided_built_and_credited(app: Flask, release_gold: GoldSet,
                                                 runner: FlaskCliRunner) -> None:
    """Two dev disputes and a test one: accepted, rejected with a reason, accepted; the
    build's changelog credits the accepted authors, naming dev keys only."""
    dev, test = release_gold.get("temp", "dev").examples, release_gold.get("temp", "test").examples
    root = client_of(app, "root", admin=True)
    alice, bob, carol = (client_of(app, name) for name in ("alice", "bob", "carol"))
    # Filed from the example's own page (its hidden fields name the example).
    filed = alice.post("/disputes/", data={
        "csrf_token": csrf_token(alice, page_of("temp", "dev", dev[0].key)), "track": "temp",
        "split": "dev", "key": dev[0].key, "answers": "Alice answer | Alice alias",
        "evidence": URL, "comment": "the fact changed"})
    assert filed.status_code == 302 and filed.headers["Location"] == "/disputes/"
    assert dispute(bob, "temp", "dev", dev[1].key, "Bob answer").status_code == 302
    assert dispute(carol, "temp", "test", test[0].key, "Carol answer").status_code == 302

    queue = text(root.get("/admin/queue"))
    assert queue.count("/admin/disputes/") == 3 and "No campaign task waits" in queue
    page = text(root.get("/admin/disputes/1"))
    assert "Alice answer | Alice alias" in page and dev[0].answers[0] in page
    assert 'id="test-warning"' not in page
    assert 'id="test-warning"' in text(root.get("/admin/disputes/3"))
    # Deciding goes on to the next open dispute, then back to the queue.
    assert decide(root, 1, decision="accept",
                  answers="Alice answer | Alice alias").headers["Location"] == "/admin/disputes/2"
    assert decide(root, 2, decision="reject",
                  reason="The source\npredates the question's date.").status_code == 302
    assert decide(root, 3, decision="accept",
                  answers="Carol answer").headers["Location"] == "/admin/queue"

    assert "accepted: goes into the next gold version" in main(alice.get("/disputes/"))
    bob_page = main(bob.get("/disputes/"))
    assert "rejected: The source predates the question&#39;s date." in bob_page
    assert "Alice answer" not in bob_page and "Carol answer" not in bob_page
    update = text(root.get("/admin/disputes/update.jsonl"))
    # Every accepted answer goes into `answer` (the change: only the first did);
    # the other records rebuild any_answer for the questions' other contexts.
    records = [json.loads(line) for line in update.splitlines()]
    assert [r["key"] for r in records if "answer" in r] == [dev[0].key, test[0].key]
    assert records[0]["answer"] == ["Alice answer", "Alice alias"]

    built = root.post("/admin/disputes/build", data={
        "csrf_token": csrf_token(root, "/admin/queue"), "name": "disputes-1",
        "note": "Two fixes."})
    assert built.status_code == 302 and built.headers["Location"] == "/admin/versions"
    with app.app_context():
        version = db.session.query(GoldVersion).filter_by(name="disputes-1").one()
        assert version.changelog == (
            f"Two fixes. Accepted disputes: temp/dev {dev[0].key} (dispute #1, by alice); "
            "a test example (dispute #3, by carol).")
        assert test[0].key not in version.changelog
        assert [d.gold_version_id for d in db.session.query(Dispute).order_by(Dispute.id)] == [
            version.id, None, version.id]
        version_id = version.id
    assert "None." in text(root.get("/admin/queue"))  # nothing waits for a version now
    result = runner.invoke(args=["gold", "activate", "disputes-1"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        active = gold_store.gold_of(gold_store.active_version())
        assert active.get("temp", "dev").examples[0].answers == ("Alice answer",
                                                                "Alice alias")
        # any_answer: the answers of every context of the question, as the release has it.
        others = {a for e in release_gold.get("temp", "dev").examples
                  if e.id == dev[0].id and e.key != dev[0].key for a in e.answers}
        assert set(active.get("temp", "dev").examples[0].any_answers) == {
            "Alice answer", "Alice alias", *others}
        assert active.get("temp", "test").examples[0].answers == ("Carol answer",)
    own = main(alice.get("/disputes/"))
    assert f'accepted: in gold version <a href="/versions/{version_id}">disputes-1</a>' in own
    changelog = text(alice.get(f"/versions/{version_id}/changelog.json"))
    assert "dispute #1 by alice" in changelog and "by carol" in changelog
    assert test[0].key not in changelog and "Carol answer" not in changelog
    # A dispute of the new version's gold is a new dispute (the old one is history).
    assert dispute(alice, "temp", "dev", dev[0].key, "Alice again").status_code == 302


@pytest.mark.parametrize(("fields", "status", "message"), [
    ({"answers": " | "}, 400, "answer: give at least one non-empty answer"),
    ({"answers": ""}, 400, "answer: give at least one non-empty answer"),
    ({"evidence": "ftp://example.org/x"}, 400, "evidence: give an http:// or https://"),
    ({"evidence": "javascript:alert(1)"}, 400, "evidence: give an http:// or https://"),
    ({"evidence": ""}, 400, "evidence: give an http:// or https://"),
    ({"key": "1|2|3"}, 404, "key: temp/dev has no example with key &#39;1|2|3&#39;"),
    ({"key": ""}, 400, "key: This field is required."),
    ({"track": "nosuch"}, 404, "no board nosuch/dev"),
    ({"split": "val"}, 404, "no board temp/val"),
    ({"track": "temp-id"}, 400, "track: temp-id is an identification track"),
    ({"comment": "x" * 2001}, 400, "comment: Field cannot be longer than 2000 characters."),
])
def test_bad_disputes_are_refused_and_change_nothing(app: Flask, release_gold: GoldSet,
                                                     fields: dict[str, str], status: int,
                                                     message: str) -> None:
    dev = release_gold.get("temp", "dev").examples[0]
    if fields.get("track") == "temp-id":
        fields = {**fields, "key": release_gold.get("temp-id", "dev").examples[0].key}
    alice = client_of(app, "alice")
    data = {"track": "temp", "split": "dev", "key": dev.key, "answers": "An answer",
            "evidence": URL, **fields}
    response = dispute(alice, **data)
    assert response.status_code == status
    assert message in text(response)
    assert count(app) == 0
    with app.app_context():
        assert db.session.query(AuditLog).filter(AuditLog.action.like("dispute%")).count() == 0


def test_a_dispute_filed_twice_is_409_and_keeps_the_first(app: Flask,
                                                          release_gold: GoldSet) -> None:
    key = release_gold.get("temp", "dev").examples[0].key
    alice, bob = client_of(app, "alice"), client_of(app, "bob")
    assert dispute(alice, "temp", "dev", key, "First").status_code == 302
    again = dispute(alice, "temp", "dev", key, "Second")
    assert again.status_code == 409 and "key: you already disputed" in text(again)
    assert dispute(bob, "temp", "dev", key, "Bob's").status_code == 302  # another author
    with app.app_context():
        assert [d.proposed_answers for d in db.session.query(Dispute).order_by(Dispute.id)] == [
            ["First"], ["Bob's"]]


def test_bad_decisions_are_refused_and_change_nothing(app: Flask,
                                                      release_gold: GoldSet) -> None:
    key = release_gold.get("temp", "dev").examples[0].key
    root, alice = client_of(app, "root", admin=True), client_of(app, "alice")
    dispute(alice, "temp", "dev", key)
    for data, message in (({"decision": "reject", "reason": "  "}, "reason: a rejection needs"),
                          ({"decision": "reject", "reason": "x" * 201}, "reason: Field cannot"),
                          ({"decision": "accept", "answers": " | "}, "answer: give at least"),
                          ({"decision": "maybe"}, "decision: Not a valid choice")):
        response = decide(root, 1, **data)
        assert response.status_code == 400 and message in text(response), data
    with app.app_context():
        assert db.session.query(Dispute).one().status == "open"
    assert decide(root, 1, decision="reject", reason="Not supported.").status_code == 302
    twice = decide(root, 1, decision="accept", answers="x")
    assert twice.status_code == 409 and "already decided" in text(twice)
    nothing = root.post("/admin/disputes/build", data={
        "csrf_token": csrf_token(root, "/admin/queue"), "name": "empty"})
    assert nothing.status_code == 400 and "no accepted dispute waits" in text(nothing)
    unnamed = root.post("/admin/disputes/build", data={
        "csrf_token": csrf_token(root, "/admin/queue"), "name": "", "as_of": "soon"})
    assert unnamed.status_code == 400 and "name: This field is required." in text(unnamed)
    assert "as_of: Not a valid date value." in text(unnamed)
    with app.app_context():
        found = db.session.query(Dispute).one()
        assert (found.status, found.reason, found.final_answers) == ("rejected",
                                                                     "Not supported.", None)
        assert db.session.query(GoldVersion).count() == 1


def test_every_dispute_route_refuses_the_wrong_account(app: Flask,
                                                       release_gold: GoldSet) -> None:
    """Organizer routes: 404 for a researcher and anonymous visitors; a researcher's list
    holds only their own disputes; anonymous filings go to the login page, stored nowhere."""
    key = release_gold.get("temp", "dev").examples[0].key
    root = client_of(app, "root", admin=True)
    alice, bob = client_of(app, "alice"), client_of(app, "bob")
    dispute(alice, "temp", "dev", key, "Alice secret proposal")
    rules = [rule for rule in app.url_map.iter_rules() if rule.endpoint.startswith("disputes.")]
    assert len(rules) == 8
    for rule in rules:
        url = rule.rule.replace("<int:dispute_id>", "1").replace("<track>", "temp").replace(
            "<split>", "dev").replace("<path:key>", quote(key))
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            data = {"csrf_token": csrf_token(bob, "/disputes/"), "decision": "accept",
                    "answers": "x", "name": "v", "track": "temp", "split": "dev", "key": key,
                    "evidence": URL}
            response = bob.open(url, method=method, data=data)
            anonymous = app.test_client().open(url, method=method)
            if rule.rule.startswith("/admin/"):
                assert response.status_code == 404, (method, url)
                assert anonymous.status_code in (400, 404), (method, url)
            elif rule.rule == "/disputes/":  # the login page (a POST: its CSRF refusal)
                assert anonymous.status_code == (302 if method == "GET" else 400)
    assert "Alice secret proposal" not in text(bob.get("/disputes/"))
    assert "Alice secret proposal" in text(alice.get("/disputes/"))
    assert "Alice secret proposal" in text(root.get("/admin/disputes/1"))
    with app.app_context():
        # bob's POST to /disputes/ filed his own dispute; nothing else changed.
        rows = db.session.query(Dispute).order_by(Dispute.id).all()
        assert [(d.user.username, d.status) for d in rows] == [("alice", "open"),
                                                                ("bob", "open")]
        assert db.session.query(GoldVersion).count() == 1


def test_the_reply_never_depends_on_the_hidden_gold(app: Flask, release_gold: GoldSet,
                                                    runner: FlaskCliRunner,
                                                    update_file: Path) -> None:
    """A version whose test gold holds a canary answer and a canary example: proposing the
    canary answer or a wrong one gets the same reply, byte for byte once the proposal is
    replaced; the canary key is as unknown as any other key."""
    for args in (["gold", "build", "--from-update", str(update_file), "--name", "2023-06",
                  "--as-of", "2023-06-01"], ["gold", "activate", "2023-06"]):
        assert runner.invoke(args=args).exit_code == 0
    test = release_gold.get("temp", "test").examples[0]
    with app.app_context():
        hidden = gold_store.gold_of(gold_store.active_version()).get("temp", "test")
        assert hidden.examples[hidden.index[test.key]].answers == (CANARY_ANSWER,)
    right, wrong = client_of(app, "rita"), client_of(app, "walt")
    replies = []
    for client, proposal in ((right, CANARY_ANSWER), (wrong, "zq-wrong-answer-0000")):
        page = text(client.get(page_of("temp", "test", test.key)))
        assert CANARY_ANSWER not in page
        response = dispute(client, "temp", "test", test.key, proposal)
        shown = client.get(response.headers["Location"])
        replies.append((response.status_code, response.headers["Location"], text(response),
                        mine(main(shown), proposal)))
        again = dispute(client, "temp", "test", test.key, proposal)
        replies.append((again.status_code, main(again)))
    assert replies[0] == replies[2] and replies[1] == replies[3]
    assert replies[0][0] == 302 and replies[1][0] == 409
    assert "Your dispute was filed" in replies[0][3]
    # The key only the hidden version has is unknown, as any key is.
    guesses = [dispute(right, "temp", "test", key, "guess") for key in (CANARY_KEY, "1|2|3")]
    assert [g.status_code for g in guesses] == [404, 404]
    assert text(guesses[0]).replace(CANARY_KEY, "1|2|3") == text(guesses[1])
    assert right.get(page_of("temp", "test", CANARY_KEY)).status_code == 404
    with app.app_context():
        assert [d.user.username for d in db.session.query(Dispute).order_by(Dispute.id)] == [
            "rita", "walt"]


def test_disputes_are_rate_limited_per_account(app: Flask, release_gold: GoldSet) -> None:
    app.config["DISPUTE_RATE_LIMIT"] = "2 per day"
    keys = [e.key for e in release_gold.get("temp", "dev").examples[:4]]
    alice, bob = client_of(app, "alice"), client_of(app, "bob")
    assert [dispute(alice, "temp", "dev", k).status_code for k in keys[:3]] == [302, 302, 429]
    assert dispute(bob, "temp", "dev", keys[3]).status_code == 302  # counted per account
    assert count(app) == 3


def test_a_limiter_outage_lets_disputes_through(database: dict[str, Any], gold_dir: Path,
                                                tmp_path: Path, release_gold: GoldSet) -> None:
    """Its storage unreachable, the dispute goes on without its limit: stored, no 500."""
    app = make_app(database, gold_dir, tmp_path, RATELIMIT_STORAGE_URI=_dead_redis(),
                   LOGIN_RATE_LIMIT="10000 per minute")
    try:
        with app.app_context():
            user = accounts.create_user("alice", "alice@example.org", PASSWORD)
            db.session.commit()
            user_id = user.id
        client = app.test_client()
        # Login fails closed while its limit's storage is down: sign the session directly.
        with client.session_transaction() as session:
            session.update({"user_id": user_id, "generation": 0})
        key = release_gold.get("temp", "dev").examples[0].key
        response = dispute(client, "temp", "dev", key)
        assert response.status_code == 302, text(response)
        assert count(app) == 1
    finally:
        with app.app_context():
            db.engine.dispose()


def test_dispute_commands(app: Flask, release_gold: GoldSet, runner: FlaskCliRunner) -> None:
    key = release_gold.get("temp", "dev").examples[0].key
    root, alice = client_of(app, "root", admin=True), client_of(app, "alice")
    dispute(alice, "temp", "dev", key, "Alice answer")
    listed = runner.invoke(args=["disputes", "list"])
    assert f"open     temp/dev {key}  by alice: Alice answer" in listed.output
    assert "1 dispute(s); 0 accepted waiting" in listed.output
    assert "no accepted dispute waits" in runner.invoke(
        args=["disputes", "build", "--name", "d1"]).output
    decide(root, 1, decision="accept", answers="Alice answer")
    assert '"reason": "dispute #1 by alice"' in runner.invoke(args=["disputes", "export"]).output
    built = runner.invoke(args=["disputes", "build", "--name", "d1", "--as-of", "2026-12-01"])
    assert built.exit_code == 0 and "built gold version 'd1'" in built.output
    assert "accepted temp/dev" in runner.invoke(args=["disputes", "list", "--all"]).output
    assert runner.invoke(args=["disputes", "export"]).output == ""


def test_the_menu_links_to_my_disputes(client: FlaskClient) -> None:
    """The account menu links to My disputes."""
    register(client, "dora")
    assert 'href="/disputes/">My disputes</a>' in text(client.get("/disputes/"))


def test_the_api_files_lists_and_hides_disputes(app: Flask, release_gold: GoldSet) -> None:
    """Bearer-token disputes: the page's fields, the same errors, the author's own only, the
    documented shapes, and never the organizer's answers."""
    from situatedqa_server import openapi

    from .conftest import new_token

    test = release_gold.get("temp", "test").examples[0]
    root, alice, bob = (client_of(app, "root", admin=True), client_of(app, "alice"),
                        client_of(app, "bob"))
    tokens = {"alice": new_token(alice), "bob": new_token(bob)}

    def api(who: str, method: str, path: str, **data: str) -> Any:
        return app.test_client().open(f"/api/v1{path}", method=method, data=data, headers={
            "Authorization": f"Bearer {tokens[who]}"})

    fields = {"track": "temp", "split": "test", "key": test.key, "answers": "Api answer",
              "evidence": URL}
    created = api("alice", "POST", "/disputes", **fields)
    assert created.status_code == 201, created.json
    assert openapi.Dispute.model_validate(created.json).status == "open"
    assert created.json["proposed_answers"] == ["Api answer"] and created.json["id"] == 1
    assert api("alice", "POST", "/disputes", **fields).json["error"]["code"] == (
        "already_disputed")
    bad = api("alice", "POST", "/disputes", **{**fields, "evidence": "ftp://x"})
    assert bad.status_code == 400 and bad.json["error"]["message"].startswith("evidence:")
    unknown = api("alice", "POST", "/disputes", **{**fields, "surprise": "1"})
    assert unknown.status_code == 400 and unknown.json["error"]["code"] == "unknown_field"
    assert app.test_client().post("/api/v1/disputes", data=fields).status_code == 401
    decide(root, 1, decision="accept", answers="Organizer answer")
    listed = api("alice", "GET", "/disputes")
    assert openapi.DisputeList.model_validate(listed.json).disputes[0].status == "accepted"
    assert "Organizer answer" not in listed.get_data(as_text=True)
    assert api("alice", "GET", "/disputes/1").json["key"] == test.key
    assert api("bob", "GET", "/disputes").json == {"disputes": []}
    assert api("bob", "GET", "/disputes/1").status_code == 404
    assert api("bob", "GET", "/disputes/2").get_data() == api("bob", "GET",
                                                              "/disputes/1").get_data()
    assert count(app) == 1


def test_the_same_dispute_filed_twice_at_once_is_stored_once(app: Flask,
                                                              release_gold: GoldSet) -> None:
    """Two sessions of one account file the same dispute at the same moment: one 302, one
    409, one row (the check and the insert hold the write lock; a unique constraint too)."""
    import threading

    key = release_gold.get("temp", "dev").examples[0].key
    first = client_of(app, "alice")
    second = app.test_client()
    login(second, "alice")
    tokens = [csrf_token(c, "/disputes/") for c in (first, second)]
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def file(client: FlaskClient, token: str) -> None:
        barrier.wait()
        statuses.append(client.post("/disputes/", data={
            "csrf_token": token, "track": "temp", "split": "dev", "key": key,
            "answers": "At once", "evidence": URL}).status_code)

    threads = [threading.Thread(target=file, args=pair) for pair in zip((first, second),
                                                                         tokens, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [302, 409]
    assert count(app) == 1


def test_the_documented_dispute_fields_are_the_forms() -> None:
    """The API's dispute body is the page form's fields, with its length caps; answers and
    evidence are required by the service (the form leaves them to it, to name the field)."""
    from wtforms.fields.core import UnboundField
    from wtforms.validators import DataRequired, Length

    from situatedqa_server import openapi
    from situatedqa_server.forms import DisputeForm

    schema = openapi.DisputeBody.model_json_schema()
    fields = {name: value for name, value in vars(DisputeForm).items()
              if isinstance(value, UnboundField)}
    assert set(schema["properties"]) == set(fields)
    checks = {name: field.kwargs.get("validators", []) for name, field in fields.items()}
    required = {name for name, found in checks.items()
                if any(isinstance(v, DataRequired) for v in found)}
    assert set(schema["required"]) == required | {"answers", "evidence"}
    for name, found in checks.items():
        for cap in (v.max for v in found if isinstance(v, Length)):
            documented = openapi.plain(schema["properties"][name], {})
            assert documented["maxLength"] == cap, name
