"""Proposed gold, from both its sources: every accepted answer counts for EM, agreed
answers are one per normalized form, a build the active gold no longer admits is a 400
naming the record (page and CLI), and a campaign's pages agree on the date asked."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Annotation, Campaign, TaskStatus, User
from situatedqa_server.services import campaigns, disputes, gold_store, versions

from .conftest import api_upload, csrf_token, login, new_token, register

URL = "https://en.wikipedia.org/wiki/Evidence"
PASSWORD = "correct horse battery staple"


def invoke(app: Flask, *args: str) -> tuple[int, str]:
    result = app.test_cli_runner().invoke(args=list(args))
    return result.exit_code, result.output


def people(app: Flask) -> None:
    """Two annotators and an organizer, through the CLI."""
    for name, extra in (("ann", ()), ("bea", ()), ("root", ("--admin",))):
        assert invoke(app, "users", "create", name, "--email", f"{name}@example.org",
                      "--password", PASSWORD, *extra)[0] == 0
    for name in ("ann", "bea"):
        assert invoke(app, "users", "annotator", name)[0] == 0


def answer_all(campaign: Campaign, *answers: str) -> None:
    """Both annotators of every task give these answers."""
    for task in campaign.tasks:
        for annotation in task.annotations:
            campaigns.submit(annotation, campaigns.validate("answer", answers, URL, None))


def user(name: str) -> User:
    found = db.session.query(User).filter_by(username=name).one()
    return found


def em_of(client: FlaskClient, gold: Any, key: str, prediction: str) -> float:
    """EM of an upload that predicts `prediction` on `key` and nothing right elsewhere."""
    lines = [json.dumps({"key": e.key, "prediction": prediction if e.key == key
                         else "no such answer at all"}) for e in gold.examples]
    response = api_upload(client, new_token(client), gold, "\n".join(lines).encode(),
                          public="false")
    assert response.status_code == 201, response.json
    return float(response.json["metrics"]["em"])


def test_accepted_non_first_answers_count_for_em(app: Flask, release_gold: GoldSet) -> None:
    """A dispute and a campaign through to EM: an upload predicting an accepted answer that
    is not the first scores EM as the first would (before, only the first went into
    `answer`, so it scored 0)."""
    people(app)
    dev = release_gold.get("temp", "dev")
    disputed = dev.examples[0]
    with app.app_context():
        filed = disputes.file(user("root"), "temp", "dev", disputed.key,
                              disputes.validate(["37"], URL, ""))
        disputes.decide(filed, True, ["37", "9 calories", "37 kJ"], None, user("root"))
        disputes.build("errata", None, "", user("root"))
    code, output = invoke(app, "gold", "activate", "errata")
    assert code == 0, output
    # A contexts campaign adds the question at a new year, with two answers.
    with app.app_context():
        campaign = campaigns.create_campaign(
            "years", "contexts", "temp", "dev", date(2099, 1, 1), ["ann", "bea"], None,
            ids=[dev.examples[1].id], values=["2030"], limit=1)
        answer_all(campaign, "Alpha", "Beta")
        added = campaign.tasks[0].key
        campaigns.build(campaign, "years-2030", None, "", None)
    code, output = invoke(app, "gold", "activate", "years-2030")
    assert code == 0, output
    with app.app_context():
        gold = gold_store.gold_of(gold_store.active_version()).get("temp", "dev")
        example = gold.examples[gold.index[disputed.key]]
        assert example.answers == ("37", "9 calories", "37 kJ")
        # any_answer: the answers of every context of the question, rebuilt for each.
        for other in gold.examples:
            if other.id == disputed.id:
                assert {"9 calories", "37 kJ"} <= set(other.any_answers)
        assert gold.examples[gold.index[added]].answers == ("Alpha", "Beta")
    researcher = app.test_client()
    register(researcher, "rita")
    first = em_of(researcher, gold, disputed.key, "37")
    assert first > 0
    assert em_of(researcher, gold, disputed.key, "9 calories") == first
    assert em_of(researcher, gold, added, "Beta") == first


def test_agreed_answers_are_one_per_normalized_form(app: Flask) -> None:
    people(app)
    with app.app_context():
        campaign = campaigns.create_campaign("refresh", "refresh", "temp", "dev",
                                             date(2026, 12, 1), ["ann", "bea"], None, limit=1)
        task = campaign.tasks[0]
        first, second = task.annotations
        campaigns.submit(first, campaigns.validate("answer", ["Japan and China"], URL, None))
        campaigns.submit(second, campaigns.validate(
            "answer", ["japan and China", "japan and china", "The Japan and China!"], URL,
            None))
        assert task.status == TaskStatus.ACCEPTED.value
        assert task.final_answers == ["Japan and China"]


def test_a_campaign_build_a_later_version_made_invalid_is_a_400_naming_the_record(
        app: Flask, release_gold: GoldSet, tmp_path: Any) -> None:
    """The campaign refreshes an example; a later version retires it; building the campaign
    then names the record (page: 400; CLI: a one-line error), and builds nothing."""
    people(app)
    example = release_gold.get("temp", "dev").examples[0]
    with app.app_context():
        campaign = campaigns.create_campaign("refresh", "refresh", "temp", "dev",
                                             date(2026, 12, 1), ["ann", "bea"], None, limit=1)
        assert campaign.tasks[0].key == example.key
        answer_all(campaign, "A new answer")
        campaign_id = campaign.id
    retire = tmp_path / "retire.jsonl"
    retire.write_text(json.dumps({"track": "temp", "split": "dev", "key": example.key,
                                  "action": "retire", "reason": "ambiguous"}) + "\n")
    assert invoke(app, "gold", "build", "--from-update", str(retire), "--name", "retired",
                  "--as-of", "2026-12-01")[0] == 0
    code, output = invoke(app, "gold", "activate", "retired")
    assert code == 0, output
    root = app.test_client()
    login(root, "root")
    page = f"/admin/campaigns/{campaign_id}"
    response = root.post(f"{page}/build", data={"csrf_token": csrf_token(root, page),
                                               "name": "refreshed"})
    body = response.get_data(as_text=True)
    assert response.status_code == 400
    assert f"campaign-{campaign_id}.jsonl" in body and "no example with this key" in body
    assert "does not apply to &#39;retired&#39;" in body
    code, output = invoke(app, "campaigns", "build", str(campaign_id), "--name", "refreshed")
    assert code == 1 and "Traceback" not in output
    assert f"campaign-{campaign_id}.jsonl" in output and example.key in output
    assert "does not apply to 'retired'" in output
    with app.app_context():
        assert versions.version_named("refreshed", published_only=False) is None
        assert db.session.get(Campaign, campaign_id).gold_version_id is None  # type: ignore[union-attr]


def test_every_page_of_a_campaign_names_the_same_date(app: Flask,
                                                      release_gold: GoldSet) -> None:
    """A contexts campaign asks for answers as of each task's new date: the task page, the
    adjudication page and the campaign page all say that date, not the campaign's as-of."""
    people(app)
    with app.app_context():
        campaign = campaigns.create_campaign(
            "years", "contexts", "temp", "dev", date(2026, 12, 1), ["ann", "bea"], None,
            ids=[release_gold.get("temp", "dev").examples[0].id], values=["2031"], limit=1)
        task = campaign.tasks[0]
        first, second = task.annotations
        campaigns.submit(first, campaigns.validate("answer", ["One"], URL, None))
        campaign_id, task_id, first_id = campaign.id, task.id, first.id
        second_id = second.id
        assert db.session.get(Annotation, second_id) is not None
    ann = app.test_client()
    login(ann, "ann")
    bea = app.test_client()
    login(bea, "bea")
    for client, annotation in ((ann, first_id), (bea, second_id)):
        page = client.get(f"/annotate/{annotation}").get_data(as_text=True)
        if client is bea:
            assert "as of 2031?" in page and "holds as of 2031." in page
            assert "2026-12-01" not in page
    assert bea.post(f"/annotate/{second_id}", data={
        "csrf_token": csrf_token(bea, f"/annotate/{second_id}"), "outcome": "answer",
        "answers": "Two", "evidence": URL}).status_code == 302
    root = app.test_client()
    login(root, "root")
    adjudication = root.get(f"/admin/campaigns/{campaign_id}/tasks/{task_id}")
    text = adjudication.get_data(as_text=True)
    assert "must hold as of 2031." in text and "2026-12-01" not in text
    show = root.get(f"/admin/campaigns/{campaign_id}").get_data(as_text=True)
    assert "as of the task&#39;s new date" in show
    assert '<td class="answer-date">2031</td>' in show
