"""Disputes: a researcher says an example's gold is wrong, with a proposed answer and
evidence; organizers accept or reject it in the adjudication queue; accepted ones become the
update records of the next disputes build, whose changelog credits their authors.

A dispute can never be used to probe hidden gold: filing one reads only the example's key
in the inputs participants see (test: the release's, as the blank files), never its gold,
so the reply is the same whether the proposed answer is the gold or not. Test disputes name
the key only; no page, reply or changelog line of theirs shows test gold or test keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO, Example

from ..extensions import db
from ..models import Dispute, DisputeStatus, GoldVersion, User, utcnow
from . import audit, gold_store, jobs, proposed_gold, versions
from .errors import ServiceError, UnknownTrack

MAX_COMMENT = 2000
MAX_REASON = 200


class DisputeError(ServiceError):
    """A dispute, decision or build that cannot be: the message names the field."""

    status = 400
    code = "invalid_dispute"


class AlreadyDisputed(DisputeError):
    """The author already disputed this example of this gold version."""

    status = 409
    code = "already_disputed"


class AlreadyDecided(DisputeError):
    """An organizer already decided this dispute."""

    status = 409
    code = "already_decided"


class UnknownExample(ServiceError):
    """No such example in the inputs participants see (the same for any unknown key)."""

    status = 404
    code = "unknown_example"


class DisputeNotFound(ServiceError):
    """No such dispute for this account: the same answer whether it exists or not."""

    status = 404
    code = "not_found"


# --- reading examples -----------------------------------------------------------------------


def example_of(track: str, split: str, key: str) -> Example:
    """The example participants see under this key (test: the release's inputs, so a key
    only a later version added is as unknown as any other), else UnknownExample."""
    if track not in TRACK_INFO:  # the one unknown-track error, saying which board was asked
        raise UnknownTrack(f"no board {track}/{split}: the benchmark has no track {track!r}")
    if split not in SPLITS:
        raise UnknownExample(f"no board {track}/{split}")
    data = gold_store.get_split(track, split)
    position = data.index.get(key)
    if position is None:
        raise UnknownExample(f"key: {track}/{split} has no example with key {key!r}")
    return data.examples[position]


def disputable(track: str) -> bool:
    """Disputes propose answers: QA tracks only (identification tracks have labels)."""
    return track in TRACK_INFO and not TRACK_INFO[track].identification


# --- filing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    """A validated dispute: the answers proposed, the evidence and a comment."""

    answers: tuple[str, ...]
    evidence_url: str
    comment: str


def validate(answers: Iterable[str], evidence_url: str | None,
             comment: str | None) -> Proposal:
    """A proposal, or DisputeError naming the field that is wrong (the answers and the
    evidence checked by proposed_gold, as a campaign's are)."""
    cleaned = proposed_gold.clean_answers(answers, DisputeError)
    url = proposed_gold.clean_url(evidence_url, DisputeError, required=True) or ""
    note = (comment or "").strip()
    if len(note) > MAX_COMMENT:
        raise DisputeError(f"comment: at most {MAX_COMMENT} characters")
    return Proposal(cleaned, url, note)


def file(user: User, track: str, split: str, key: str, proposal: Proposal) -> Dispute:
    """Store a dispute (409 for the same example of the same version twice); commits.

    Reads the example's key only, never its gold: the reply cannot depend on it.
    """
    example_of(track, split, key)
    if not disputable(track):
        raise DisputeError(f"track: {track} is an identification track; disputes propose "
                           "answers")
    # SQLite: hold the write lock from the check on, so a concurrent filing of the same
    # dispute waits and then sees this one (a deferred read could not write after it).
    jobs.write_transaction()
    version = gold_store.active_version()
    if db.session.scalar(select(Dispute.id).where(
            Dispute.user_id == user.id, Dispute.version_id == version.id,
            Dispute.track == track, Dispute.split == split, Dispute.key == key)) is not None:
        db.session.rollback()
        raise AlreadyDisputed(_twice(track, split, key))
    dispute = Dispute(user_id=user.id, version_id=version.id, track=track, split=split,
                      key=key, proposed_answers=list(proposal.answers),
                      evidence_url=proposal.evidence_url, comment=proposal.comment,
                      status=DisputeStatus.OPEN.value)
    try:
        db.session.add(dispute)
        db.session.flush()
        audit.record_event("dispute_file", "dispute", dispute.id, user,
                           f"{track}/{split} {key}")
        db.session.commit()
    except IntegrityError:  # a concurrent filing of the same dispute won
        db.session.rollback()
        raise AlreadyDisputed(_twice(track, split, key)) from None
    return dispute


def _twice(track: str, split: str, key: str) -> str:
    return (f"key: you already disputed {track}/{split} {key!r} under this gold version; "
            "see My disputes")


# --- reading disputes -----------------------------------------------------------------------


def mine(user: User) -> list[Dispute]:
    """The user's own disputes, newest first."""
    return list(db.session.scalars(select(Dispute).where(Dispute.user_id == user.id)
                                   .order_by(Dispute.id.desc())))


def all_disputes() -> list[Dispute]:
    """Every dispute, oldest first (organizers)."""
    return list(db.session.scalars(select(Dispute).order_by(Dispute.id)))


def own(dispute_id: int, user: User) -> Dispute:
    """The user's own dispute; 404 for anyone else's (the same whether it exists)."""
    dispute = db.session.get(Dispute, dispute_id)
    if dispute is None or dispute.user_id != user.id:
        raise DisputeNotFound("no such dispute")
    return dispute


def dispute_by_id(dispute_id: int) -> Dispute:
    """A dispute (organizers), else 404."""
    dispute = db.session.get(Dispute, dispute_id)
    if dispute is None:
        raise DisputeNotFound("no such dispute")
    return dispute


def queue() -> list[Dispute]:
    """Disputes waiting for an organizer, oldest first (their part of the joint queue)."""
    return proposed_gold.open_disputes()


def pending() -> list[Dispute]:
    """Accepted disputes no gold version holds yet, in decision order."""
    return proposed_gold.pending_disputes()


def published_names(rows: Iterable[Dispute]) -> dict[int, str]:
    """The names of the published versions these disputes went into, by version id (an
    accepted dispute names its version once the version has been active)."""
    ids = {d.gold_version_id for d in rows if d.gold_version_id is not None}
    if not ids:
        return {}
    return {v.id: v.name for v in db.session.scalars(select(GoldVersion).where(
        GoldVersion.id.in_(ids), versions.published_filter()))}


def example_or_none(dispute: Dispute) -> Example | None:
    """The disputed example as participants see it, None if it is gone."""
    try:
        return example_of(dispute.track, dispute.split, dispute.key)
    except UnknownExample:
        return None


def current_answers(dispute: Dispute) -> tuple[str, ...]:
    """The active version's answers for the disputed example (organizers only: on test
    this is hidden gold); empty when the active version lacks the example."""
    gold = gold_store.gold_of(gold_store.active_version())
    if (dispute.track, dispute.split) not in gold.splits:
        return ()
    data = gold.splits[(dispute.track, dispute.split)]
    position = data.index.get(dispute.key)
    return () if position is None else data.examples[position].answers


# --- deciding -------------------------------------------------------------------------------


def decide(dispute: Dispute, accept: bool, answers: Sequence[str], reason: str | None,
           actor: User) -> None:
    """Accept (with the organizer's answers) or reject (with a one-line reason the author
    sees) an open dispute, once: the row is locked; commits."""
    final = proposed_gold.clean_answers(answers, DisputeError) if accept else ()
    why = " ".join((reason or "").split())
    if not accept and not why:
        raise DisputeError("reason: a rejection needs a one-line reason (the author sees it)")
    if len(why) > MAX_REASON:
        raise DisputeError(f"reason: at most {MAX_REASON} characters on one line")
    jobs.write_transaction()
    db.session.refresh(dispute, with_for_update=True)
    if dispute.status != DisputeStatus.OPEN.value:
        db.session.rollback()
        raise AlreadyDecided("this dispute is already decided")
    dispute.status = (DisputeStatus.ACCEPTED if accept else DisputeStatus.REJECTED).value
    dispute.final_answers = list(final) if accept else None
    dispute.reason = None if accept else why
    dispute.decided_at = utcnow()
    dispute.decided_by_id = actor.id
    audit.record_event("dispute_accept" if accept else "dispute_reject", "dispute",
                       dispute.id, actor, why)
    db.session.commit()


# --- the gold version -----------------------------------------------------------------------


def proposals(disputes: Sequence[Dispute]) -> list[proposed_gold.ProposedAnswers]:
    """One proposal per disputed example: the last decision's answers (several accepted
    disputes of one example are one change, crediting each author)."""
    by_example: dict[tuple[str, str, str], list[Dispute]] = {}
    for dispute in disputes:
        by_example.setdefault((dispute.track, dispute.split, dispute.key), []).append(dispute)
    found = []
    for (track, split, key), group in by_example.items():
        answers = tuple(group[-1].final_answers or group[-1].proposed_answers)
        credit = ", ".join(f"#{d.id} by {d.user.username}" for d in group)
        found.append(proposed_gold.ProposedAnswers(track, split, key, answers,
                                                   f"dispute {credit}"))
    return found


def update_text(disputes: Sequence[Dispute]) -> str:
    """The accepted disputes' update file (JSON Lines), as `gold build --from-update` reads."""
    return proposed_gold.update_text(proposals(disputes))


def changelog_line(disputes: Sequence[Dispute]) -> str:
    """The changelog's credit: each example (test: no key, as the public changelog lists
    none) with its disputes' authors."""
    parts = []
    for dispute in disputes:
        where = ("a test example" if dispute.split == HIDDEN_SPLIT
                 else f"{dispute.track}/{dispute.split} {dispute.key}")
        parts.append(f"{where} (dispute #{dispute.id}, by {dispute.user.username})")
    return "Accepted disputes: " + "; ".join(parts) + "." if parts else ""


def build(name: str, as_of: date | None, note: str, actor: User | None) -> GoldVersion:
    """Build a gold version from every accepted dispute not yet in one, through the
    `gold build` path (checked against the active version, key by key)."""
    waiting = pending()
    if not waiting:
        raise DisputeError("no accepted dispute waits for a gold version")
    parent = gold_store.active_version()
    changelog = " ".join(p for p in (note.strip(), changelog_line(waiting)) if p)
    version = proposed_gold.build(proposals(waiting), "disputes.jsonl", name,
                                  as_of or max(date.today(), parent.as_of), changelog, actor)
    for dispute in waiting:
        dispute.gold_version_id = version.id
    db.session.commit()
    return version
