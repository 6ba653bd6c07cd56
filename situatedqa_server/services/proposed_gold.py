"""Proposed gold: the one wing every change of the gold by people goes through.

Campaigns (annotators' answers) and disputes (researchers' corrections) are its two
sources. Both validate answers and evidence here, with one set of limits; both turn what
was accepted into update records here (every accepted answer into `answer`, and
`any_answer` rebuilt for all the question's contexts, as the release builds it); both build
through versions.build_version; both wait in one adjudication queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select

from benchmark import TRACK_INFO, GoldSet
from benchmark.normalize import normalize_answer

from ..extensions import db
from ..models import CampaignTask, Dispute, DisputeStatus, GoldVersion, TaskStatus, User
from . import gold_store, versions
from .errors import ServiceError

MAX_ANSWERS = 10
MAX_ANSWER_LENGTH = 500
MAX_URL = 500


# --- validation ------------------------------------------------------------------------------


def distinct_answers(answers: Iterable[str]) -> tuple[str, ...]:
    """Non-empty answers, stripped, each once after the benchmark's normalization (the
    first spelling kept): "Japan and China" and "japan and china" are one answer."""
    kept: dict[str, str] = {}
    for answer in answers:
        text = (answer or "").strip()
        if text:
            kept.setdefault(normalize_answer(text) or text, text)
    return tuple(kept.values())


def clean_answers(answers: Iterable[str], error: type[ServiceError]) -> tuple[str, ...]:
    """At least one answer, within the limits; else `error` naming the field."""
    cleaned = distinct_answers(answers)
    if not cleaned:
        raise error("answer: give at least one non-empty answer")
    if len(cleaned) > MAX_ANSWERS or any(len(a) > MAX_ANSWER_LENGTH for a in cleaned):
        raise error(f"answer: at most {MAX_ANSWERS} answers of {MAX_ANSWER_LENGTH} "
                    "characters")
    return cleaned


def clean_url(url: str | None, error: type[ServiceError], *, required: bool) -> str | None:
    """An http(s) evidence URL of at most MAX_URL characters (None when absent and not
    required); else `error` naming the field."""
    text = (url or "").strip()
    if not text and not required:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(text) > MAX_URL:
        raise error(f"evidence: give an http:// or https:// address of at most {MAX_URL} "
                    "characters" + ("" if text else " (an answer needs an evidence URL)"))
    return text


# --- update records --------------------------------------------------------------------------


@dataclass(frozen=True)
class NewExample:
    """What an `add` record needs beyond the answers: the question and its context."""

    nq_id: int
    question: str
    context: Mapping[str, str]
    partitions: tuple[str, ...]


@dataclass(frozen=True)
class ProposedAnswers:
    """Accepted answers for one example (an existing one, or `new` when it is added)."""

    track: str
    split: str
    key: str
    answers: tuple[str, ...]
    reason: str
    new: NewExample | None = None
    #: The date (YYYY-MM-DD) the answers took effect, when known (a campaign's): the
    #: record's `answer_since`, the gold example's (benchmark.cutoff reads it).
    since: str | None = None


@dataclass
class _Context:
    """One context of a question while the records are built: its answers before and after."""

    key: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    any_before: tuple[str, ...] = ()
    proposal: ProposedAnswers | None = None
    others: list[str] = field(default_factory=list)


def update_records(proposals: Sequence[ProposedAnswers],
                   parent: GoldSet) -> list[dict[str, Any]]:
    """The update file's records for accepted answers, against the parent gold.

    Every accepted answer goes into `answer` (EM One takes any of them). `any_answer` is
    rebuilt for every context of each question touched, as the release builds it: the
    answers of all the question's contexts, plus what the old `any_answer` held that no
    context carried (present's previous answers). A context whose `any_answer` keeps the
    same answers keeps its list; one whose set changes gets an update of `any_answer` alone.
    """
    by_question: dict[tuple[str, str, int | None], list[ProposedAnswers]] = {}
    for proposal in proposals:
        split = parent.splits.get((proposal.track, proposal.split))
        position = split.index.get(proposal.key) if split is not None else None
        if proposal.new is not None:
            nq_id = proposal.new.nq_id
        elif split is not None and position is not None:
            nq_id = split.examples[position].id
        else:  # an update of a key the parent lacks: parse_update names the record
            nq_id = None
        by_question.setdefault((proposal.track, proposal.split, nq_id), []).append(proposal)
    records: list[dict[str, Any]] = []
    for (track, split_name, nq_id), group in by_question.items():
        records.extend(_question_records(track, split_name, nq_id, group, parent))
    return records


def _question_records(track: str, split_name: str, nq_id: int | None,
                      group: Sequence[ProposedAnswers], parent: GoldSet) -> list[dict[str, Any]]:
    """The records of one question: its proposals, then its other contexts' any_answer."""
    split = parent.splits.get((track, split_name))
    contexts: dict[str, _Context] = {}
    if split is not None and nq_id is not None:  # (NQ ids may be negative)
        for example in split.examples:
            if example.id == nq_id:
                contexts[example.key] = _Context(example.key, example.answers, example.answers,
                                                 example.any_answers or example.answers)
    for proposal in group:
        found = contexts.get(proposal.key)
        if found is None:
            contexts[proposal.key] = _Context(proposal.key, (), proposal.answers, (), proposal)
        else:
            found.after, found.proposal = proposal.answers, proposal
    carried_before = {a for c in contexts.values() for a in c.before}
    # Answers no context carries (present: the previous answers) stay in any_answer.
    extras = [a for c in contexts.values() for a in c.any_before if a not in carried_before]
    union = tuple(dict.fromkeys([*(a for c in contexts.values() for a in c.after), *extras]))
    records, rebuilt = [], []
    for context in contexts.values():
        any_answer = (list(context.any_before) if set(context.any_before) == set(union)
                      else list(union))
        if context.proposal is not None:
            records.append(_proposal_record(context.proposal, any_answer))
        elif set(context.any_before) != set(union):
            rebuilt.append({"track": track, "split": split_name, "key": context.key,
                            "action": "update", "any_answer": any_answer,
                            "reason": "any_answer rebuilt: another context of the question "
                                      "changed"})
    return records + rebuilt  # the proposals first, in their order


def _proposal_record(proposal: ProposedAnswers, any_answer: list[str]) -> dict[str, Any]:
    """The record of one proposal: an update, or an add with the question and context."""
    record: dict[str, Any] = {"track": proposal.track, "split": proposal.split,
                              "key": proposal.key, "answer": list(proposal.answers),
                              "any_answer": any_answer, "reason": proposal.reason}
    if proposal.since is not None:
        record["answer_since"] = proposal.since
    new = proposal.new
    if new is None:
        return {**record, "action": "update"}
    record.update(action="add", id=new.nq_id, question=new.question, context=dict(new.context))
    if TRACK_INFO[proposal.track].partition_rule is None:
        record["partitions"] = list(new.partitions)
    return record


def update_text(proposals: Sequence[ProposedAnswers], parent: GoldVersion | None = None) -> str:
    """The update file (JSON Lines) as `gold build --from-update` reads it, against the
    parent version (default: the active one)."""
    gold = gold_store.gold_of(parent or gold_store.active_version())
    return "".join(json.dumps(r, ensure_ascii=False) + "\n"
                   for r in update_records(proposals, gold))


def build(proposals: Sequence[ProposedAnswers], filename: str, name: str, as_of: date,
          changelog: str, actor: User | None) -> GoldVersion:
    """Build a gold version from accepted answers, on the active version, through
    versions.build_version (an update a later version made invalid: its 400 names the
    record)."""
    parent = gold_store.active_version()
    return versions.build_version(update_text(proposals, parent), filename, name, as_of,
                                  changelog, actor, parent)


# --- the adjudication queue ------------------------------------------------------------------


def waiting_tasks(campaign_id: int | None = None) -> list[CampaignTask]:
    """Campaign tasks waiting for an organizer (of one campaign, or of all), in order."""
    query = select(CampaignTask).where(CampaignTask.status == TaskStatus.ADJUDICATION.value)
    if campaign_id is not None:
        query = query.where(CampaignTask.campaign_id == campaign_id)
    return list(db.session.scalars(query.order_by(CampaignTask.campaign_id, CampaignTask.id)))


def open_disputes() -> list[Dispute]:
    """Disputes waiting for an organizer, oldest first."""
    return list(db.session.scalars(select(Dispute).where(
        Dispute.status == DisputeStatus.OPEN.value).order_by(Dispute.id)))


def pending_disputes() -> list[Dispute]:
    """Accepted disputes no gold version holds yet, in decision order."""
    return list(db.session.scalars(select(Dispute).where(
        Dispute.status == DisputeStatus.ACCEPTED.value, Dispute.gold_version_id.is_(None))
        .order_by(Dispute.decided_at, Dispute.id)))


@dataclass(frozen=True)
class AdjudicationQueue:
    """What waits for an organizer: disagreeing campaign tasks, open disputes, and the
    accepted disputes no version holds yet."""

    tasks: list[CampaignTask]
    disputes: list[Dispute]
    pending: list[Dispute]


def adjudication_queue() -> AdjudicationQueue:
    """The joint queue of both sources."""
    return AdjudicationQueue(waiting_tasks(), open_disputes(), pending_disputes())
