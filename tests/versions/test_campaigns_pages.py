"""Campaign pages end to end with the test client, and the annotator/adjudicator rights.

An organizer starts a refresh campaign of 10 tasks and a new-contexts campaign of 10; two
annotators answer blind (some agree, some don't); the organizer adjudicates, builds and
activates the versions; a researcher's test upload then has the unreleased figures.
Every route is tried with the wrong account (two-account tests). SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Annotation, Campaign, CampaignTask, User

from .conftest import api_upload, csrf_token, login, new_token, prediction_file, register

URL = "https://en.wikipedia.org/wiki/Evidence"


def client_of(app: Flask, name: str, *, admin: bool = False) -> FlaskClient:
    """A logged-in client of a new account."""
    client = app.test_client()
    if admin:
        app.test_cli_runner().invoke(args=["users", "create", name, "--email",
                                           f"{name}@example.org", "--password",
                                           "correct horse battery staple", "--admin"])
        login(client, name)
    else:
        register(client, name)
    return client


def post(client: FlaskClient, page: str, action: str, **data: Any) -> Any:
    """POST a form found on a page, with its CSRF token."""
    return client.post(action, data={"csrf_token": csrf_token(client, page), **data})


def annotations_of(app: Flask, name: str, campaign_id: int) -> list[tuple[int, int, str]]:
    """(annotation id, task position, task key) of a user's annotations in a campaign."""
    with app.app_context():
        campaign = db.session.get(Campaign, campaign_id)
        assert campaign is not None
        found = []
        for position, task in enumerate(campaign.tasks):
            for annotation in task.annotations:
                if annotation.annotator.username == name:
                    found.append((annotation.id, position, task.key))
        return found


def answer(client: FlaskClient, annotation_id: int, response: str) -> Any:
    """Answer a task through its page (ambiguous, or one answer with evidence)."""
    page = f"/annotate/{annotation_id}"
    if response == "ambiguous":
        return post(client, page, page, outcome="ambiguous")
    return post(client, page, page, outcome="answer", answers=response, evidence=URL,
                effective="2025")


def last_answers(app: Flask, campaign_id: int) -> list[str]:
    with app.app_context():
        campaign = db.session.get(Campaign, campaign_id)
        assert campaign is not None
        return [t.last_answers[0] if t.last_answers else "" for t in campaign.tasks]


def refresh_plan(position: int, who: str, last: str) -> str:
    """Refresh: every third task unchanged, every third a new answer both give, the rest
    disagree."""
    if position % 3 == 0:
        return last.upper() if who == "bea" else last
    if position % 3 == 1:
        return f"New answer {position}"
    return f"{'Alpha' if who == 'ann' else 'Beta'} answer {position}"


def contexts_plan(position: int, who: str) -> str:
    """New contexts: even tasks agree, odd ones are an answer against "ambiguous"."""
    if position % 2 == 0:
        return f"City {position}"
    return f"Alpha city {position}" if who == "ann" else "ambiguous"


def test_campaign_flow_and_rights(app: Flask, release_gold: GoldSet) -> None:
    root = client_of(app, "root", admin=True)
    ann, bea, carl = (client_of(app, name) for name in ("ann", "bea", "carl"))
    # Nobody but an organizer reaches the organizer pages; nobody but an annotator the tasks.
    for client in (ann, carl):
        assert client.get("/admin/campaigns").status_code == 404
    assert carl.get("/annotate/").status_code == 404
    for name in ("ann", "bea"):
        response = post(root, "/admin/campaigns", "/admin/annotators", username=name,
                        grant="grant")
        assert response.status_code == 302
    # An annotator cannot give the role either.
    assert ann.post("/admin/annotators", data={
        "csrf_token": csrf_token(ann, "/auth/account"), "username": "carl",
        "grant": "grant"}).status_code == 404
    # A campaign over an unknown track: a clear error, nothing stored.
    base = {"split": "test", "as_of": "2026-12-01", "annotators": "ann, bea", "limit": "10"}
    bad = post(root, "/admin/campaigns", "/admin/campaigns", name="bad", kind="refresh",
               track="nosuch", **base)
    # One unknown-track error wherever a track is named: 404, as on a board.
    assert bad.status_code == 404 and "unknown track" in bad.get_data(as_text=True)
    with app.app_context():
        assert db.session.query(Campaign).count() == 0
    made = post(root, "/admin/campaigns", "/admin/campaigns", name="refresh 2026",
                kind="refresh", track="present", **base)
    assert made.status_code == 302, made.get_data(as_text=True)
    temp = release_gold.get("temp", "test")
    ids = list(dict.fromkeys(e.id for e in temp.examples))[:2]
    made = post(root, "/admin/campaigns", "/admin/campaigns", name="years", kind="contexts",
                track="temp", ids=",".join(map(str, ids)),
                values=",".join(str(y) for y in range(2022, 2027)), **base)
    assert made.status_code == 302, made.get_data(as_text=True)
    with app.app_context():
        assert [len(c.tasks) for c in db.session.query(Campaign).order_by(Campaign.id)] == [
            10, 10]
    assert "Annotate" in ann.get("/annotate/").get_data(as_text=True)

    # Two-account checks on the task pages: bea never reaches ann's annotation.
    ann_tasks = annotations_of(app, "ann", 1)
    bea_tasks = annotations_of(app, "bea", 1)
    for client in (bea, carl, root):
        assert client.get(f"/annotate/{ann_tasks[0][0]}").status_code == 404
    assert bea.post(f"/annotate/{ann_tasks[0][0]}", data={
        "csrf_token": csrf_token(bea, "/annotate/"), "outcome": "answer", "answers": "x",
        "evidence": URL}).status_code == 404

    # Bad responses: a clear error, nothing stored.
    first = ann_tasks[0][0]
    page = f"/annotate/{first}"
    page_text = ann.get(page).get_data(as_text=True)
    assert "Last known answer" in page_text and 'autofocus' in page_text
    for data, message in (({"outcome": "answer", "answers": " ", "evidence": URL},
                           "non-empty answer"),
                          ({"outcome": "answer", "answers": "x", "evidence": "ftp://x.org/"},
                           "http"),):
        response = post(ann, page, page, **data)
        assert response.status_code == 400 and message in response.get_data(as_text=True)
    with app.app_context():
        stored = db.session.get(Annotation, first)
        assert stored is not None and stored.submitted_at is None

    # Ann answers every task first; bea's pages never show ann's answers.
    last = last_answers(app, 1)
    for annotation_id, position, _ in ann_tasks:
        response = answer(ann, annotation_id, refresh_plan(position, "ann", last[position]))
        assert response.status_code == 302
    again = answer(ann, first, "a second answer")
    assert again.status_code == 409
    for annotation_id, position, _ in bea_tasks:
        text = bea.get(f"/annotate/{annotation_id}").get_data(as_text=True)
        assert "Alpha answer" not in text and "Alpha" not in text
        assert answer(bea, annotation_id,
                      refresh_plan(position, "bea", last[position])).status_code == 302
    for who, client in (("ann", ann), ("bea", bea)):
        for annotation_id, position, _ in annotations_of(app, who, 2):
            assert answer(client, annotation_id,
                          contexts_plan(position, who)).status_code == 302
    # Even after both answered, an annotator sees only their own response.
    text = bea.get(f"/annotate/{bea_tasks[2][0]}").get_data(as_text=True)
    assert "Beta answer 2" in text and "Alpha answer 2" not in text

    # The campaign page: progress, time per task, agreement per pair.
    show = root.get("/admin/campaigns/1").get_data(as_text=True)
    assert "20/20 answers" in show and "Time per task: median" in show
    assert "ann × bea" in show and "<progress" in show
    assert "Time per task by annotator" in show
    # Refresh: tasks 0,3,6,9 unchanged (agree), 1,4,7 changed (agree), 2,5,8 disagree.
    assert re.search(r"7 accepted \(the annotators agree\), 3 waiting", show)
    # Annotators cannot adjudicate, or see the organizer's pages of a campaign.
    with app.app_context():
        queued = [t.id for t in db.session.query(CampaignTask).filter_by(
            campaign_id=1, status="adjudication").order_by(CampaignTask.id)]
    assert len(queued) == 3
    for client in (ann, bea, carl):
        token = {"csrf_token": csrf_token(client, "/auth/account")}
        assert client.get("/admin/campaigns/1").status_code == 404
        assert client.get(f"/admin/campaigns/1/tasks/{queued[0]}").status_code == 404
        assert client.post(f"/admin/campaigns/1/tasks/{queued[0]}", data={
            **token, "outcome": "answer", "answers": "x", "evidence": URL}).status_code == 404
        assert client.get("/admin/campaigns/1/update.jsonl").status_code == 404
        assert client.post("/admin/campaigns/1/build",
                           data={**token, "name": "x"}).status_code == 404
        assert client.post("/admin/campaigns", data={**token, "name": "x"}).status_code == 404
    # The organizer sees both responses with their evidence and decides.
    for campaign_id in (1, 2):
        with app.app_context():
            queued = [t.id for t in db.session.query(CampaignTask).filter_by(
                campaign_id=campaign_id, status="adjudication").order_by(CampaignTask.id)]
        for position, task_id in enumerate(queued):
            page = f"/admin/campaigns/{campaign_id}/tasks/{task_id}"
            text = root.get(page).get_data(as_text=True)
            assert URL in text and "ann" in text and "bea" in text
            assert post(root, page, page, outcome="answer", answers=f"Decided {position}",
                        evidence=URL).status_code == 302
        assert post(root, page, page, outcome="answer", answers="x",
                    evidence=URL).status_code == 409  # decided already

    # Build and activate each campaign's version, as today.
    for campaign_id, name in ((1, "2026-12 refresh"), (2, "2026-12 years")):
        page = f"/admin/campaigns/{campaign_id}"
        built = post(root, page, f"{page}/build", name=name)
        assert built.status_code == 302, built.get_data(as_text=True)
        with app.app_context():
            version_id = db.session.get(Campaign, campaign_id).gold_version_id  # type: ignore[union-attr]
        activate = f"/admin/versions/{version_id}/activate"
        assert post(root, activate, activate).status_code == 302
    versions_page = root.get("/versions/").get_data(as_text=True)
    assert "2026-12 years" in versions_page

    # A researcher's test upload has the unreleased figures with CIs.
    token = new_token(carl)
    present = release_gold.get("present", "test")
    upload = api_upload(carl, token, present, prediction_file(present))
    assert upload.status_code == 201, upload.json
    payload = upload.json
    assert payload["counts"]["unreleased"] == 6  # 3 changed + 3 adjudicated
    assert payload["metrics"]["unreleased"] == 0.0
    assert payload["ci"]["unreleased"] and payload["ci"]["contamination_gap"]
    assert payload["metrics"]["contamination_gap"] > 0
    # No task, answer or key of a campaign reaches the researcher.
    for url in ("/annotate/", f"/annotate/{first}", "/admin/campaigns/2"):
        assert carl.get(url).status_code == 404
    with app.app_context():
        assert db.session.query(User).filter_by(username="carl").one().is_annotator is False


def test_every_campaign_route_refuses_the_wrong_account(app: Flask) -> None:
    """Each campaign route, every method, for a researcher, an annotator on the organizer
    routes and the other annotator on a task: 404, and nothing changes. Anonymous visitors
    are sent to log in (pages) or refused."""
    root = client_of(app, "root", admin=True)
    ann, bea, carl = (client_of(app, name) for name in ("ann", "bea", "carl"))
    for name in ("ann", "bea"):
        post(root, "/admin/campaigns", "/admin/annotators", username=name, grant="grant")
    base = {"split": "test", "as_of": "2026-12-01", "annotators": "ann, bea", "limit": "2",
            "kind": "refresh", "track": "present"}
    assert post(root, "/admin/campaigns", "/admin/campaigns", name="c",
                **base).status_code == 302
    ann_annotation = annotations_of(app, "ann", 1)[0][0]
    with app.app_context():
        task_id = db.session.query(CampaignTask).first().id  # type: ignore[union-attr]
    rules = [rule for rule in app.url_map.iter_rules()
             if rule.endpoint.startswith("campaigns.")]
    assert len(rules) >= 9
    for rule in rules:
        url = (rule.rule.replace("<int:campaign_id>", "1").replace("<int:task_id>", str(task_id))
               .replace("<int:annotation_id>", str(ann_annotation)))
        organizer_only = rule.rule.startswith("/admin/")
        wrong = [carl, ann, bea] if organizer_only else [carl, bea]
        if not organizer_only and "annotation_id" not in rule.arguments:
            wrong = [carl]  # the annotator's own list: only non-annotators are refused
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            for client in wrong:
                data = {"csrf_token": csrf_token(client, "/auth/account"), "name": "x",
                        "username": "carl", "grant": "grant", "outcome": "answer",
                        "answers": "x", "evidence": URL, **base}
                response = client.open(url, method=method, data=data)
                assert response.status_code == 404, (method, url, response.status_code)
            anonymous = app.test_client().open(url, method=method)
            assert anonymous.status_code in (302, 400, 404), (method, url)
    with app.app_context():
        assert db.session.query(Campaign).count() == 1
        assert db.session.query(Annotation).filter(
            Annotation.submitted_at.is_not(None)).count() == 0
        assert db.session.query(CampaignTask).filter_by(status="open").count() == 2
        assert db.session.query(User).filter_by(username="carl").one().is_annotator is False
