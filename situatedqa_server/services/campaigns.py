"""Annotation campaigns: tasks answered blind by two annotators, agreement, adjudication,
and the gold version a campaign builds (through proposed_gold, as disputes do).

A campaign is one of three kinds: *refresh* (a track's examples asked again as of a date),
*contexts* (chosen questions of a dated track at new dates) and *locations* (chosen
questions of a located track at new locations). Each task has two annotation slots, given
to two annotators; neither sees the other's response. Two agreeing responses accept the
task; otherwise it waits in the adjudication queue for an organizer.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import select, update

from benchmark import TRACK_INFO
from benchmark.agreement import (
    ANSWER,
    RESPONSE_KINDS,
    Response,
    agree,
    category,
    cohen_kappa,
    raw_agreement,
)
from benchmark.gold import Example, GoldSplit

from ..extensions import db
from ..models import (
    Annotation,
    Campaign,
    CampaignKind,
    CampaignTask,
    GoldVersion,
    TaskStatus,
    User,
    utcnow,
)
from . import audit, gold_store, jobs, proposed_gold
from .errors import ServiceError, known_track

MAX_TASKS = 2000
DATE_PATTERN = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
#: The context field a kind of campaign sets on new examples.
KIND_FIELD = {CampaignKind.CONTEXTS.value: "date", CampaignKind.LOCATIONS.value: "location"}


class CampaignError(ServiceError):
    """An organizer asked for a campaign, an adjudication or a build that cannot be."""

    status = 400
    code = "invalid_campaign"


class AnnotationError(ServiceError):
    """A response that cannot be accepted: empty answer, bad URL or date."""

    status = 400
    code = "invalid_annotation"


class AlreadyAnswered(AnnotationError):
    """The annotator (or an organizer) already answered this task."""

    status = 409
    code = "already_answered"


class TaskNotFound(ServiceError):
    """No such task for this account: the same answer whether it exists or not."""

    status = 404
    code = "not_found"


# --- roles -----------------------------------------------------------------------------------


def set_annotator(user: User, on: bool, actor: User | None) -> None:
    """Give or take the annotator role (audited); commits."""
    user.is_annotator = on
    audit.record_event("annotator_grant" if on else "annotator_revoke", "user", user.id, actor,
                       user.username)
    db.session.commit()


def annotators() -> list[User]:
    """Every account with the annotator role."""
    return list(db.session.scalars(select(User).where(User.is_annotator.is_(True))
                                   .order_by(User.username)))


# --- creating --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSpec:
    """What one task asks: an example's key, question, context and last known answer."""

    key: str
    nq_id: int
    question: str
    context: dict[str, str]
    partitions: tuple[str, ...]
    last_answers: tuple[str, ...]
    last_date: str | None


def date_order(text: str) -> tuple[int, int, int]:
    """A context date ("2021", "2021-05-01" or the release's "May 01, 2021") as
    (year, month, day) for ordering; unknown parts are 0."""
    for form in ("%Y-%m-%d", "%B %d, %Y", "%Y"):
        try:
            moment = datetime.strptime(text.strip(), form)
        except ValueError:
            continue
        return (moment.year, moment.month if form != "%Y" else 0,
                moment.day if form != "%Y" else 0)
    found = re.search(r"\d{4}", text)
    return (int(found.group()) if found else 0, 0, 0)


def release_date(value: str) -> str:
    """A new date as the release writes it: "2023" stays, "2023-05-01" is "May 01, 2023"."""
    if len(value) == 10:
        return datetime.strptime(value, "%Y-%m-%d").strftime("%B %d, %Y")
    return value


def _latest_by_id(split: GoldSplit, field: str | None) -> dict[int, Example]:
    """Each question's example with the latest value of a context field (its last known)."""
    latest: dict[int, Example] = {}
    for example in split.examples:
        current = latest.get(example.id)
        if current is None or (field is not None and date_order(
                str(example.context.get(field, ""))) > date_order(
                str(current.context.get(field, "")))):
            latest[example.id] = example
    return latest


def refresh_specs(split: GoldSplit, limit: int, as_of_parent: date) -> list[TaskSpec]:
    """The first `limit` examples of a split, with their answers as the last known."""
    specs = []
    for example in split.examples[:limit]:
        known = example.context.get("date") or as_of_parent.isoformat()
        specs.append(TaskSpec(example.key, example.id, example.question, dict(example.context),
                              example.partitions, example.answers, str(known)[:40]))
    return specs


def new_context_specs(track: str, split: GoldSplit, ids: Sequence[int], values: Sequence[str],
                      limit: int) -> list[TaskSpec]:
    """Chosen questions at new context values (dates or locations) the split lacks."""
    info = TRACK_INFO[track]
    field = "date" if "date" in info.context_fields else "location"
    latest = _latest_by_id(split, "date" if field == "date" else None)
    specs: list[TaskSpec] = []
    for nq_id in ids:
        template = latest.get(nq_id)
        if template is None:
            raise CampaignError(f"{track}/{split.split} has no question with id {nq_id}")
        for value in values:
            context = {**template.context, field: value}
            if field == "date":
                context["date_type"] = "sampled_year" if len(value) == 4 else "sampled_date"
                context["date"] = release_date(value)
            key = info.key(nq_id, context)
            if key in split.index or len(specs) >= limit:
                continue
            try:
                partitions = info.partitions_of(context)
            except ValueError as exc:
                raise CampaignError(f"{value!r}: {exc}") from None
            last = template.context.get("date") if field == "date" else None
            specs.append(TaskSpec(key, nq_id, template.question, context, partitions,
                                  template.answers if field == "date" else (), last))
    return specs


def create_campaign(name: str, kind: str, track: str, split: str, as_of: date,
                    annotator_names: Sequence[str], actor: User | None, *, limit: int = 100,
                    ids: Sequence[int] = (), values: Sequence[str] = (),
                    note: str = "") -> Campaign:
    """Validate and store a campaign and its tasks (two slots each) in one transaction."""
    name = name.strip()
    if not name or len(name) > 80:
        raise CampaignError("a campaign needs a name of 1 to 80 characters")
    if db.session.scalar(select(Campaign.id).where(Campaign.name == name)) is not None:
        raise CampaignError(f"a campaign named {name!r} exists already")
    if kind not in {k.value for k in CampaignKind}:
        raise CampaignError(f"kind must be one of {[k.value for k in CampaignKind]}")
    info = TRACK_INFO[known_track(track)]
    if info.identification:
        raise CampaignError(f"{track} is an identification track: campaigns annotate answers")
    if kind in KIND_FIELD and KIND_FIELD[kind] not in info.context_fields:
        raise CampaignError(f"a {kind} campaign needs a track with a {KIND_FIELD[kind]!r} "
                            f"context; {track} has {list(info.context_fields)}")
    if not 1 <= limit <= MAX_TASKS:
        raise CampaignError(f"the number of tasks must be 1 to {MAX_TASKS}")
    people = _annotators_named(annotator_names)
    parent = gold_store.active_version()
    gold = gold_store.gold_of(parent)
    if (track, split) not in gold.splits:
        raise CampaignError(f"the gold has no {track}/{split}")
    data = gold.get(track, split)
    if kind == CampaignKind.REFRESH.value:
        specs = refresh_specs(data, limit, parent.as_of)
    else:
        cleaned = [v.strip() for v in values if v.strip()]
        if not ids or not cleaned:
            raise CampaignError(f"a {kind} campaign needs question ids and "
                                f"{'dates' if kind == 'contexts' else 'locations'}")
        if kind == CampaignKind.CONTEXTS.value and not all(map(_new_date, cleaned)):
            raise CampaignError("dates must be YYYY or YYYY-MM-DD")
        specs = new_context_specs(track, data, ids, cleaned, limit)
    if not specs:
        raise CampaignError("the campaign would have no tasks (every context exists already)")
    try:
        campaign = Campaign(name=name, kind=kind, track=track, split=split, as_of=as_of,
                            note=note.strip(), parent_version_id=parent.id,
                            created_by_id=actor.id if actor else None)
        db.session.add(campaign)
        db.session.flush()
        for position, spec in enumerate(specs):
            task = CampaignTask(campaign_id=campaign.id, key=spec.key, nq_id=spec.nq_id,
                                question=spec.question, context=spec.context,
                                partitions=list(spec.partitions),
                                last_answers=list(spec.last_answers), last_date=spec.last_date,
                                status=TaskStatus.OPEN.value)
            db.session.add(task)
            db.session.flush()
            first, second = people[position % len(people)], people[(position + 1) % len(people)]
            for slot, person in ((1, first), (2, second)):
                db.session.add(Annotation(task_id=task.id, slot=slot, annotator_id=person.id,
                                          answers=[]))
        audit.record_event("campaign_create", "campaign", campaign.id, actor,
                           f"{name}: {kind} on {track}/{split}, {len(specs)} tasks")
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    return campaign


def _new_date(value: str) -> bool:
    """A new context date: YYYY or a real YYYY-MM-DD."""
    if len(value) == 4:
        return value.isdigit()
    try:
        return len(value) == 10 and date.fromisoformat(value) is not None
    except ValueError:
        return False


def _annotators_named(names: Sequence[str]) -> list[User]:
    """The accounts named, each an annotator; at least two, so every task gets two."""
    unique = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if len(unique) < 2:
        raise CampaignError("a campaign needs at least two annotators")
    people = list(db.session.scalars(select(User).where(User.username.in_(unique))))
    found = {p.username: p for p in people}
    missing = [n for n in unique if n not in found or not found[n].is_annotator]
    if missing:
        raise CampaignError(f"not annotators: {missing} (give them the annotator role first)")
    return [found[n] for n in unique]


# --- answering -------------------------------------------------------------------------------


def answer_date(campaign: Campaign, task: CampaignTask) -> str:
    """The one date a task's answer must hold for, shown alike on the task page, the
    adjudication page and the campaign page.

    A task whose example has a date (temp: a refresh re-checks the example at its own date,
    a contexts campaign asks at the new date) holds for that date; every other task
    (present, curprev, geo; the locations campaigns) for the campaign's as-of date.
    """
    when = task.context.get("date") if task.context else None
    return str(when) if when else campaign.as_of.isoformat()


def date_rule(campaign: Campaign) -> str:
    """The campaign's rule for its tasks' dates, in words (the campaign page)."""
    track_dated = "date" in TRACK_INFO[campaign.track].context_fields
    if campaign.kind == CampaignKind.CONTEXTS.value:
        return "each task's answer must hold as of the task's new date"
    if track_dated:
        return "each task's answer must hold as of its example's own date"
    return f"every task's answer must hold as of {campaign.as_of.isoformat()}"


def own_annotation(annotation_id: int, user: User | None) -> Annotation:
    """The user's own annotation; 404 for anyone else's (or when not an annotator)."""
    annotation = db.session.get(Annotation, annotation_id)
    if (user is None or not user.is_annotator or annotation is None
            or annotation.annotator_id != user.id):
        raise TaskNotFound("no such task")
    return annotation


def my_annotations(user: User) -> list[Annotation]:
    """The user's annotations, open ones first, in task order."""
    rows = db.session.scalars(select(Annotation).where(Annotation.annotator_id == user.id)
                              .order_by(Annotation.task_id)).all()
    return sorted(rows, key=lambda a: a.submitted_at is not None)


def next_open(user: User) -> Annotation | None:
    """The user's next unanswered annotation."""
    return db.session.scalar(select(Annotation).where(
        Annotation.annotator_id == user.id, Annotation.submitted_at.is_(None))
        .order_by(Annotation.task_id).limit(1))


def start(annotation: Annotation) -> None:
    """Record when the annotator first opened the task (for the time per task); commits."""
    if annotation.started_at is None and annotation.submitted_at is None:
        annotation.started_at = utcnow()
        db.session.commit()


@dataclass(frozen=True)
class Answer:
    """A validated response."""

    kind: str
    answers: tuple[str, ...]
    evidence_url: str | None
    effective_date: str | None


def validate(kind: str, answers: Iterable[str], evidence_url: str | None,
             effective_date: str | None) -> Answer:
    """A response, or AnnotationError saying what is wrong with it (the answers and the
    evidence checked by proposed_gold, as a dispute's are)."""
    if kind not in RESPONSE_KINDS:
        raise AnnotationError(f"the outcome must be one of {list(RESPONSE_KINDS)}")
    when = (effective_date or "").strip() or None
    if kind == ANSWER:
        cleaned = proposed_gold.clean_answers(answers, AnnotationError)
    elif proposed_gold.distinct_answers(answers):
        raise AnnotationError(f"{kind!r} takes no answer")
    else:
        cleaned = ()
    url = proposed_gold.clean_url(evidence_url, AnnotationError, required=kind == ANSWER)
    if when is not None and not DATE_PATTERN.match(when):
        raise AnnotationError("the date in effect must be YYYY, YYYY-MM or YYYY-MM-DD")
    return Answer(kind, cleaned, url, when)


def submit(annotation: Annotation, response: Answer) -> CampaignTask:
    """Store an annotator's response once (409 the second time) and resolve the task when
    both are in. The write is conditional, so two concurrent submissions store one."""
    # The task's row is locked first (PostgreSQL: FOR UPDATE; SQLite: the write lock from
    # the transaction's start), so the two annotators' last submissions cannot both miss
    # the other's and leave the task open.
    jobs.write_transaction()
    now = utcnow()
    db.session.execute(select(CampaignTask.id).where(CampaignTask.id == annotation.task_id)
                       .with_for_update())
    written = db.session.execute(
        update(Annotation).where(Annotation.id == annotation.id,
                                 Annotation.submitted_at.is_(None))
        .values(kind=response.kind, answers=list(response.answers),
                evidence_url=response.evidence_url, effective_date=response.effective_date,
                submitted_at=now, started_at=annotation.started_at or now)
        .execution_options(synchronize_session=False))
    if getattr(written, "rowcount", 0) != 1:
        db.session.rollback()
        raise AlreadyAnswered("you already answered this task")
    db.session.expire_all()
    task = db.session.get(CampaignTask, annotation.task_id)
    assert task is not None
    _resolve(task)
    db.session.commit()
    return task


def response_of(annotation: Annotation) -> Response:
    """The annotation as the agreement functions read it."""
    return Response(annotation.kind or "", tuple(annotation.answers or ()))


def _resolve(task: CampaignTask) -> None:
    """Both responses in: accept agreeing ones, queue the others for adjudication."""
    done = [a for a in task.annotations if a.submitted_at is not None]
    if task.status != TaskStatus.OPEN.value or len(done) < 2:
        return
    first, second = done[0], done[1]
    if agree(response_of(first), response_of(second)):
        task.status = TaskStatus.ACCEPTED.value
        task.final_kind = first.kind
        # One answer per normalized form, the first spelling kept ("Japan and China",
        # not also "japan and china").
        task.final_answers = list(proposed_gold.distinct_answers([*first.answers,
                                                                  *second.answers]))
        task.final_evidence = first.evidence_url or second.evidence_url
        task.final_date = first.effective_date or second.effective_date
    else:
        task.status = TaskStatus.ADJUDICATION.value


def adjudicate(task: CampaignTask, response: Answer, actor: User) -> None:
    """An organizer's decision on a disagreeing task (once: the row is locked); commits."""
    jobs.write_transaction()
    db.session.refresh(task, with_for_update=True)
    if task.status != TaskStatus.ADJUDICATION.value:
        db.session.rollback()
        raise AlreadyAnswered("this task is not waiting for adjudication")
    task.status = TaskStatus.ADJUDICATED.value
    task.final_kind = response.kind
    task.final_answers = list(response.answers)
    task.final_evidence = response.evidence_url
    task.final_date = response.effective_date
    task.adjudicator_id = actor.id
    audit.record_event("campaign_adjudicate", "campaign_task", task.id, actor, task.key)
    db.session.commit()


def task_of(campaign: Campaign, task_id: int) -> CampaignTask:
    """A task of the campaign, else 404."""
    task = db.session.get(CampaignTask, task_id)
    if task is None or task.campaign_id != campaign.id:
        raise TaskNotFound("no such task")
    return task


# --- progress and agreement ------------------------------------------------------------------


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of one pair of annotators over the tasks both answered."""

    first: str
    second: str
    tasks: int
    raw: float | None
    kappa: float | None


@dataclass(frozen=True)
class Progress:
    """A campaign's progress, time per task and agreement per annotator pair."""

    tasks: int
    answered: int  # tasks with both responses
    responses: int
    slots: int
    accepted: int
    waiting: int  # in the adjudication queue
    adjudicated: int
    median_seconds: float | None
    mean_seconds: float | None
    pairs: list[PairAgreement]
    #: Each annotator's responses in and median seconds per task.
    annotators: list[tuple[str, int, float | None]]

    @property
    def percent(self) -> int:
        """Share of responses in, in whole percent."""
        return round(100 * self.responses / self.slots) if self.slots else 0


def pair_agreements(rows: Iterable[tuple[str, str, Response, Response, Sequence[str]]],
                    ) -> list[PairAgreement]:
    """Raw agreement and kappa per pair of annotators (pure): rows of (first annotator,
    second annotator, first's response, second's response, the last known answers)."""
    grouped: dict[tuple[str, str], list[tuple[Response, Response, Sequence[str]]]] = {}
    for first, second, a, b, known in rows:
        if first > second:
            first, second, a, b = second, first, b, a
        grouped.setdefault((first, second), []).append((a, b, known))
    found = []
    for (first, second), items in sorted(grouped.items()):
        pairs = [(a, b) for a, b, _ in items]
        categories = [(category(a, known), category(b, known)) for a, b, known in items]
        found.append(PairAgreement(first, second, len(items), raw_agreement(pairs),
                                   cohen_kappa(categories)))
    return found


def progress(campaign: Campaign) -> Progress:
    """Counts, time per task and per-pair agreement of a campaign."""
    tasks = campaign.tasks
    names = {u.id: u.username for u in db.session.scalars(select(User).where(User.id.in_(
        {a.annotator_id for t in tasks for a in t.annotations})))}
    timed: dict[str, list[float]] = {name: [] for name in names.values()}
    answered: dict[str, int] = dict.fromkeys(names.values(), 0)
    for task in tasks:
        for a in task.annotations:
            if a.submitted_at is not None:
                answered[names[a.annotator_id]] += 1
                if a.started_at is not None:
                    timed[names[a.annotator_id]].append(
                        (a.submitted_at - a.started_at).total_seconds())
    seconds = [value for values in timed.values() for value in values]
    rows = []
    for task in tasks:
        done = [a for a in task.annotations if a.submitted_at is not None]
        if len(done) == 2:
            rows.append((names[done[0].annotator_id], names[done[1].annotator_id],
                         response_of(done[0]), response_of(done[1]), task.last_answers))
    status = [t.status for t in tasks]
    return Progress(
        tasks=len(tasks), answered=len(rows),
        responses=sum(a.submitted_at is not None for t in tasks for a in t.annotations),
        slots=sum(len(t.annotations) for t in tasks),
        accepted=status.count(TaskStatus.ACCEPTED.value),
        waiting=status.count(TaskStatus.ADJUDICATION.value),
        adjudicated=status.count(TaskStatus.ADJUDICATED.value),
        median_seconds=statistics.median(seconds) if seconds else None,
        mean_seconds=statistics.fmean(seconds) if seconds else None,
        pairs=pair_agreements(rows),
        annotators=[(name, answered[name], statistics.median(timed[name]) if timed[name]
                     else None) for name in sorted(timed)])


def queue(campaign: Campaign) -> list[CampaignTask]:
    """The campaign's tasks waiting for adjudication (its part of the joint queue)."""
    return proposed_gold.waiting_tasks(campaign.id)


def all_campaigns() -> list[Campaign]:
    """Every campaign, newest first."""
    return list(db.session.scalars(select(Campaign).order_by(Campaign.id.desc())))


def campaign_by_id(campaign_id: int) -> Campaign:
    """A campaign, else 404."""
    campaign = db.session.get(Campaign, campaign_id)
    if campaign is None:
        raise TaskNotFound("no such campaign")
    return campaign


# --- the gold version ------------------------------------------------------------------------


def proposals(campaign: Campaign) -> list[proposed_gold.ProposedAnswers]:
    """The accepted and adjudicated tasks' answers, as proposed gold.

    Refresh: answers that differ from the last known update the example; unchanged answers
    and non-answers change nothing. Contexts and locations: every answer adds the example;
    non-answers add nothing.
    """
    found = []
    for task in campaign.tasks:
        if task.final_kind != ANSWER or not task.final_answers:
            continue
        reason = f"campaign {campaign.name}: answer {answer_date(campaign, task)}"
        if task.final_date:
            reason += f", in effect since {task.final_date}"
        new = None
        if campaign.kind == CampaignKind.REFRESH.value:
            if category(Response(ANSWER, tuple(task.final_answers)),
                        task.last_answers) != "changed":
                continue
        else:
            new = proposed_gold.NewExample(task.nq_id, task.question, dict(task.context),
                                           tuple(task.partitions))
        found.append(proposed_gold.ProposedAnswers(
            campaign.track, campaign.split, task.key, tuple(task.final_answers), reason, new,
            answer_since(campaign, task)))
    return found


def answer_since(campaign: Campaign, task: CampaignTask) -> str:
    """The date (YYYY-MM-DD) a task's accepted answer took effect, for its gold example:
    the date in effect the annotators (or the organizer) gave, a year or a month read as
    its first day; else, or when that is no calendar date ("2021-13"), the campaign's
    as-of date, by which the answer held."""
    given = (task.final_date or "").strip()
    parts = given.split("-")
    try:
        if given and DATE_PATTERN.match(given):
            year, month, day = (int(p) for p in (*parts, "1", "1")[:3])
            return date(year, month, day).isoformat()
    except ValueError:
        pass
    return campaign.as_of.isoformat()


def update_records(campaign: Campaign) -> list[dict[str, Any]]:
    """The update file's records (proposed_gold's builder, against the active version)."""
    gold = gold_store.gold_of(gold_store.active_version())
    return proposed_gold.update_records(proposals(campaign), gold)


def update_text(campaign: Campaign) -> str:
    """The campaign's update file (JSON Lines), as `gold build --from-update` reads it."""
    return proposed_gold.update_text(proposals(campaign))


def credit(campaign: Campaign) -> str:
    """Who annotated and who adjudicated, for the changelog."""
    ids = {a.annotator_id for t in campaign.tasks for a in t.annotations
           if a.submitted_at is not None}
    judges = {t.adjudicator_id for t in campaign.tasks if t.adjudicator_id is not None}

    def named(found: set[int]) -> str:
        return ", ".join(sorted(db.session.scalars(
            select(User.username).where(User.id.in_(found))))) or "nobody"
    return f"Annotated by {named(ids)}; adjudicated by {named(judges)}."


def build(campaign: Campaign, name: str, as_of: date | None, note: str,
          actor: User | None) -> GoldVersion:
    """Build a gold version from a (partly) finished campaign, as `gold build` does: its
    parent is the active version (the update is checked against it, key by key)."""
    if campaign.gold_version_id is not None:
        raise CampaignError("this campaign already built a gold version")
    found = proposals(campaign)
    if not found:
        raise CampaignError("no accepted or adjudicated task changes the gold yet")
    changelog = " ".join(p for p in (note.strip() or campaign.note,
                                     f"From campaign {campaign.name!r}.", credit(campaign)) if p)
    version = proposed_gold.build(found, f"campaign-{campaign.id}.jsonl", name,
                                  as_of or campaign.as_of, changelog, actor)
    campaign = db.session.get(Campaign, campaign.id) or campaign
    campaign.gold_version_id = version.id
    db.session.commit()
    return version
