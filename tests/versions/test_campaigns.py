"""Annotation campaigns' services: creation, blind answers, agreement, adjudication, build.

Bad input (an unknown track, an empty answer, a non-http evidence URL, a task answered
twice) is refused with a clear error and changes nothing. SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import (
    Annotation,
    AuditLog,
    Campaign,
    CampaignTask,
    TaskStatus,
    User,
)
from situatedqa_server.services import accounts, campaigns, gold_store, versions
from situatedqa_server.services.campaigns import (
    AlreadyAnswered,
    AnnotationError,
    CampaignError,
    TaskNotFound,
)
from situatedqa_server.services.errors import UnknownTrack

PASSWORD = "correct horse battery staple"
URL = "https://en.wikipedia.org/wiki/Example"


def people(*names: str, annotator: bool = True, admin: bool = False) -> list[User]:
    """Accounts, annotators by default."""
    found = []
    for name in names:
        user = accounts.create_user(name, f"{name}@example.org", PASSWORD, is_admin=admin)
        user.is_annotator = annotator
        found.append(user)
    db.session.commit()
    return found


def answer(annotation: Annotation, *answers: str, kind: str = "answer") -> CampaignTask:
    return campaigns.submit(annotation, campaigns.validate(
        kind, answers, URL if kind == "answer" else None, None))


def slots(task: CampaignTask) -> tuple[Annotation, Annotation]:
    first, second = task.annotations
    return first, second


def counts() -> tuple[int, ...]:
    return tuple(db.session.scalar(select(func.count()).select_from(model)) or 0
                 for model in (Campaign, CampaignTask, Annotation))


def refresh(n: int = 4, name: str = "refresh") -> Campaign:
    return campaigns.create_campaign(name, "refresh", "present", "test", date(2026, 12, 1),
                                     ["ann", "bea"], None, limit=n)


def test_create_refresh_campaign_assigns_two_annotators(app: Flask,
                                                        release_gold: GoldSet) -> None:
    with app.app_context():
        people("ann", "bea")
        campaign = refresh(4)
        present = release_gold.get("present", "test").examples
        assert [t.key for t in campaign.tasks] == [e.key for e in present[:4]]
        task = campaign.tasks[0]
        assert task.last_answers == list(present[0].answers)
        assert task.last_date == gold_store.active_version().as_of.isoformat()
        assert {a.annotator.username for a in task.annotations} == {"ann", "bea"}
        assert all(t.status == TaskStatus.OPEN.value for t in campaign.tasks)


def test_new_contexts_campaign_makes_keys_the_split_lacks(app: Flask,
                                                          release_gold: GoldSet) -> None:
    with app.app_context():
        people("ann", "bea")
        temp = release_gold.get("temp", "test")
        nq_id = temp.examples[0].id
        campaign = campaigns.create_campaign(
            "years", "contexts", "temp", "test", date(2026, 12, 1), ["ann", "bea"], None,
            ids=[nq_id], values=[str(y) for y in range(2021, 2027)] + ["2026-05-01"],
            limit=10)
        keys = [t.key for t in campaign.tasks]
        assert f"{nq_id}|2022|sampled_year" in keys
        assert not set(keys) & set(temp.index)  # 2021 exists already: skipped
        assert campaign.tasks[0].last_answers  # the latest known date's answer
        assert campaign.tasks[0].partitions == ["sampled"]
        assert campaign.tasks[-1].context == {"date": "May 01, 2026",
                                              "date_type": "sampled_date"}


def test_the_last_known_answer_is_the_latest_dated_one() -> None:
    assert campaigns.date_order("December 29, 2020") > campaigns.date_order("2020")
    assert campaigns.date_order("2021") > campaigns.date_order("December 29, 2020")
    assert campaigns.date_order("2021-03-01") == (2021, 3, 1)


def test_new_locations_campaign(app: Flask, release_gold: GoldSet) -> None:
    with app.app_context():
        people("ann", "bea")
        nq_id = release_gold.get("geo", "test").examples[0].id
        campaign = campaigns.create_campaign(
            "places", "locations", "geo", "test", date(2026, 12, 1), ["ann", "bea"], None,
            ids=[nq_id], values=["Iceland", "Peru"], limit=10)
        assert [t.context for t in campaign.tasks] == [{"location": "Iceland"},
                                                       {"location": "Peru"}]


@pytest.mark.parametrize(("overrides", "error", "message"), [
    ({"track": "nosuch"}, UnknownTrack, "unknown track"),
    ({"track": "temp-id"}, CampaignError, "identification"),
    ({"kind": "contexts", "track": "present", "ids": [1], "values": ["2022"]},
     CampaignError, "'date' context"),
    ({"kind": "contexts", "track": "temp"}, CampaignError, "needs question ids"),
    ({"kind": "contexts", "track": "temp", "ids": [1], "values": ["2023-02-30"]},
     CampaignError, "YYYY or YYYY-MM-DD"),
    ({"names": ["ann"]}, CampaignError, "at least two annotators"),
    ({"names": ["ann", "carl"]}, CampaignError, r"not annotators: \['carl'\]"),
    ({"limit": 0}, CampaignError, "number of tasks"),
    ({"name": " "}, CampaignError, "name"),
])
def test_bad_campaigns_are_refused_and_change_nothing(app: Flask, overrides: dict[str, Any],
                                                      error: type[Exception],
                                                      message: str) -> None:
    with app.app_context():
        people("ann", "bea")
        people("carl", annotator=False)
        args: dict[str, Any] = {"name": "c", "kind": "refresh", "track": "present",
                                "names": ["ann", "bea"], "limit": 3, "ids": [],
                                "values": [], **overrides}
        before = counts()
        with pytest.raises(error, match=message):
            campaigns.create_campaign(args["name"], args["kind"], args["track"], "test",
                                      date(2026, 12, 1), args["names"], None,
                                      limit=args["limit"], ids=args["ids"],
                                      values=args["values"])
        assert counts() == before


@pytest.mark.parametrize(("kind", "answers", "url", "message"), [
    ("answer", [], URL, "at least one non-empty answer"),
    ("answer", ["  "], URL, "at least one non-empty answer"),
    ("answer", ["x"], "javascript:alert(1)", "http"),
    ("answer", ["x"], "ftp://example.org/a", "http"),
    ("answer", ["x"], None, "evidence URL"),
    ("ambiguous", ["x"], None, "takes no answer"),
    ("maybe", [], None, "outcome"),
])
def test_bad_responses_are_refused_and_change_nothing(app: Flask, kind: str,
                                                      answers: list[str], url: str | None,
                                                      message: str) -> None:
    with app.app_context():
        people("ann", "bea")
        task = refresh(1).tasks[0]
        with pytest.raises(AnnotationError, match=message):
            campaigns.validate(kind, answers, url, None)
        first, _ = slots(task)
        assert first.submitted_at is None and task.status == TaskStatus.OPEN.value


def test_a_task_answered_twice_is_409_and_keeps_the_first(app: Flask) -> None:
    with app.app_context():
        people("ann", "bea")
        task = refresh(1).tasks[0]
        first, _ = slots(task)
        answer(first, "first")
        with pytest.raises(AlreadyAnswered) as caught:
            answer(first, "second")
        assert caught.value.http_status == 409
        db.session.expire_all()
        assert db.session.get(Annotation, first.id).answers == ["first"]  # type: ignore[union-attr]


def test_only_the_owner_reaches_an_annotation(app: Flask) -> None:
    with app.app_context():
        ann, bea = people("ann", "bea")
        carl, = people("carl", annotator=False)
        task = refresh(1).tasks[0]
        first, second = slots(task)
        own = first if first.annotator_id == ann.id else second
        other = second if own is first else first
        assert campaigns.own_annotation(own.id, ann) is own
        for user, annotation_id in ((ann, other.id), (carl, own.id), (None, own.id),
                                    (ann, 10**6)):
            with pytest.raises(TaskNotFound):
                campaigns.own_annotation(annotation_id, user)
        campaigns.set_annotator(ann, False, None)  # the role taken away: no task any more
        with pytest.raises(TaskNotFound):
            campaigns.own_annotation(own.id, ann)


def test_agreement_accepts_disagreement_queues_and_the_version_builds(
        app: Flask, release_gold: GoldSet) -> None:
    with app.app_context():
        root, = people("root", admin=True, annotator=False)
        people("ann", "bea")
        campaign = refresh(4)
        tasks = campaign.tasks
        last = [t.last_answers[0] for t in tasks]
        # 0: both "unchanged" (same answer up to case); 1: both a new answer, agreeing;
        # 2: disagree (new answer vs ambiguous); 3: both ambiguous.
        plans = [((last[0],), (last[0].upper(),)), (("New Answer One",), ("new answer one",)),
                 (("New Answer Two",), ("ambiguous",)), (("ambiguous",), ("ambiguous",))]
        for task, plan in zip(tasks, plans, strict=True):
            for annotation, response in zip(slots(task), plan, strict=True):
                campaigns.start(annotation)
                if response == ("ambiguous",):
                    answer(annotation, kind="ambiguous")
                else:
                    answer(annotation, *response)
        db.session.expire_all()
        campaign = db.session.get(Campaign, campaign.id)  # type: ignore[assignment]
        assert [t.status for t in campaign.tasks] == [
            "accepted", "accepted", "adjudication", "accepted"]
        stats = campaigns.progress(campaign)
        assert (stats.tasks, stats.answered, stats.responses, stats.percent) == (4, 4, 8, 100)
        assert (stats.accepted, stats.waiting) == (3, 1)
        pair, = stats.pairs
        assert (pair.first, pair.second, pair.tasks) == ("ann", "bea", 4)
        assert pair.raw == pytest.approx(0.75)
        # Categories: (U,U), (C,C), (C,A), (A,A): p_o = 3/4; marginals ann U1 C2 A1,
        # bea U1 C1 A2: p_e = (1 + 2 + 2)/16 = 5/16; kappa = (12/16 - 5/16) / (11/16).
        assert pair.kappa == pytest.approx(7 / 11)
        assert stats.median_seconds is not None and stats.median_seconds >= 0
        assert [(name, count) for name, count, _ in stats.annotators] == [("ann", 4),
                                                                          ("bea", 4)]
        assert [t.id for t in campaigns.queue(campaign)] == [campaign.tasks[2].id]
        # The organizer adjudicates the disagreement; twice is refused.
        decision = campaigns.validate("answer", ["Adjudicated Answer"], URL, "2025")
        campaigns.adjudicate(campaign.tasks[2], decision, root)
        with pytest.raises(AlreadyAnswered):
            campaigns.adjudicate(campaign.tasks[2], decision, root)
        records = campaigns.update_records(campaign)
        assert [(r["key"], r["action"], r["answer"]) for r in records] == [
            (campaign.tasks[1].key, "update", ["New Answer One"]),
            (campaign.tasks[2].key, "update", ["Adjudicated Answer"])]
        assert "in effect since 2025" in records[1]["reason"]
        # The date each answer took effect: the campaign's as-of date when none was given,
        # else the given one (a year read as its January 1).
        assert [r["answer_since"] for r in records] == ["2026-12-01", "2025-01-01"]
        version = campaigns.build(campaign, "2026-12 refresh", None, "", root)
        assert version.as_of == date(2026, 12, 1)
        assert "Annotated by ann, bea; adjudicated by root." in version.changelog
        gold = versions.gold_of(version)
        assert gold.get("present", "test").index  # built through the ordinary path
        example = gold.get("present", "test").examples[
            gold.get("present", "test").index[campaign.tasks[1].key]]
        assert example.answers == ("New Answer One",)
        assert example.answer_since == "2026-12-01"
        adjudicated = gold.get("present", "test").examples[
            gold.get("present", "test").index[campaign.tasks[2].key]]
        assert adjudicated.answer_since == "2025-01-01"
        assert db.session.get(Campaign, campaign.id).gold_version_id == version.id  # type: ignore[union-attr]
        assert db.session.scalar(select(func.count()).select_from(AuditLog).where(
            AuditLog.action == "gold_build")) == 1
        with pytest.raises(CampaignError, match="already built"):
            campaigns.build(campaign, "again", None, "", root)


def test_a_campaign_with_nothing_to_build_is_refused(app: Flask) -> None:
    with app.app_context():
        people("ann", "bea")
        campaign = refresh(1)
        before = len(versions.all_versions())
        with pytest.raises(CampaignError, match="no accepted"):
            campaigns.build(campaign, "empty", None, "", None)
        assert len(versions.all_versions()) == before


def test_new_contexts_build_adds_unreleased_test_examples(app: Flask,
                                                         release_gold: GoldSet) -> None:
    with app.app_context():
        people("ann", "bea")
        nq_id = release_gold.get("temp", "test").examples[0].id
        campaign = campaigns.create_campaign(
            "years", "contexts", "temp", "test", date(2026, 12, 1), ["ann", "bea"], None,
            ids=[nq_id], values=["2023", "2024"], limit=10)
        for task in campaign.tasks:
            for annotation in slots(task):
                answer(annotation, "Some City")
        version = campaigns.build(campaign, "new years", None, "", None)
        test = versions.gold_of(version).get("temp", "test")
        for task in campaign.tasks:
            assert test.examples[test.index[task.key]].answers == ("Some City",)
            assert test.examples[test.index[task.key]].answer_since == "2026-12-01"
        mask = gold_store.unreleased_of(version, "temp", "test")
        # The two new examples, and every released context of the question: its any_answer
        # now holds the new answer too, as the release builds any_answer.
        siblings = [e for e in release_gold.get("temp", "test").examples if e.id == nq_id]
        assert all("Some City" in test.examples[test.index[e.key]].any_answers
                   for e in siblings)
        assert mask is not None and int(mask.sum()) == 2 + len(siblings)


def test_both_last_responses_at_once_resolve_the_task(app: Flask) -> None:
    """The two annotators submit at the same moment: the task is still resolved once."""
    import threading

    with app.app_context():
        people("ann", "bea")
        campaign = refresh(3)
        pairs = [(a.id, b.id) for a, b in (slots(t) for t in campaign.tasks)]
        campaign_id = campaign.id
    failures: list[BaseException] = []

    def submit(annotation_id: int, barrier: threading.Barrier) -> None:
        try:
            with app.app_context():
                annotation = db.session.get(Annotation, annotation_id)
                assert annotation is not None
                response = campaigns.validate("answer", ["Same"], URL, None)
                barrier.wait(timeout=10)
                campaigns.submit(annotation, response)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            failures.append(exc)

    for first, second in pairs:
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=submit, args=(i, barrier)) for i in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert failures == []
    with app.app_context():
        campaign = db.session.get(Campaign, campaign_id)  # type: ignore[assignment]
        assert [t.status for t in campaign.tasks] == ["accepted"] * 3


def test_pair_agreements_group_each_pair_in_either_order() -> None:
    """Three annotators: each pair's raw agreement and kappa, by hand."""
    from benchmark.agreement import Response as R

    same, other = R("answer", ("Old",)), R("answer", ("New",))
    amb = R("ambiguous")
    rows = [
        # ann × bea, given in both orders (the first name is always the first rater):
        ("ann", "bea", same, same, ["Old"]),
        ("bea", "ann", other, same, ["Old"]),   # ann same (U), bea other (C)
        ("ann", "bea", other, other, ["Old"]),
        ("bea", "ann", amb, other, ["Old"]),    # ann other (C), bea ambiguous (A)
        # bea × cid: one task, both changed.
        ("cid", "bea", other, other, ["Old"]),
    ]
    found = {(p.first, p.second): p for p in campaigns.pair_agreements(rows)}
    assert set(found) == {("ann", "bea"), ("bea", "cid")}
    ab = found[("ann", "bea")]
    # ann: U, U, C, C; bea: U, C, C, A. Raw: tasks 1 and 3 agree -> 0.5.
    # p_o = 2/4; marginals ann U2 C2, bea U1 C2 A1: p_e = (2*1 + 2*2)/16 = 6/16.
    # kappa = (8/16 - 6/16) / (10/16) = 0.2.
    assert (ab.tasks, ab.raw) == (4, 0.5)
    assert ab.kappa == pytest.approx(0.2)
    bc = found[("bea", "cid")]
    assert (bc.tasks, bc.raw, bc.kappa) == (1, 1.0, None)  # p_e = 1: undefined


@pytest.mark.parametrize(("given", "since"), [
    (None, "2026-12-01"), ("2021", "2021-01-01"), ("2021-05", "2021-05-01"),
    ("2021-05-17", "2021-05-17"), ("2021-13", "2026-12-01"), ("2021-02-30", "2026-12-01")])
def test_an_answer_takes_effect_on_the_date_given_else_the_as_of_date(
        given: str | None, since: str) -> None:
    """The gold example's answer_since (benchmark.cutoff reads it): the annotators' date in
    effect, its first day; a date outside the calendar, or none, the campaign's as-of."""
    campaign = Campaign(as_of=date(2026, 12, 1))
    assert campaigns.answer_since(campaign, CampaignTask(final_date=given)) == since
