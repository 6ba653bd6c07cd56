"""Citable snapshots: a leaderboard frozen into stored rows that nothing recomputes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from benchmark import SPLITS, TRACK_INFO

from ..extensions import db
from ..models import AuditLog, Snapshot, User, utcnow
from . import gold_store, ranking
from .board import MAX_PER_PAGE, BoardQuery
from .errors import ServiceError
from .exports import board_payload
from .leaderboards import load_board

BIBTEX_UNSAFE = re.compile(r"[{}\\%#&$^_~]")


class SnapshotError(ServiceError):
    """A snapshot request named an unknown track or split, or had no title."""

    status = 400
    code = "invalid_snapshot"


def full_board(track: str, split: str) -> dict[str, Any]:
    """Every entry of a leaderboard with its rank group, against the active gold version."""
    version = gold_store.active_version()
    board = load_board(BoardQuery(track, split, per_page=MAX_PER_PAGE))
    for page in range(2, board.pages + 1):
        board.entries += load_board(BoardQuery(track, split, page=page,
                                               per_page=MAX_PER_PAGE)).entries
    groups = ranking.rank_groups(track, split, version.id,
                                 [e["id"] for e in board.entries if e["id"]])
    return {**board_payload(board, groups, version.name), "per_page": len(board.entries)}


def by_slug(slug: str) -> Snapshot | None:
    """The snapshot with this slug (None if there is none)."""
    return db.session.scalar(select(Snapshot).where(Snapshot.slug == slug))


def newest_first(track: str | None) -> Sequence[Snapshot]:
    """Every snapshot (of one track, when given), newest first."""
    query = select(Snapshot).order_by(Snapshot.created_at.desc(), Snapshot.id.desc())
    if track is not None:
        query = query.where(Snapshot.track == track)
    return db.session.scalars(query).all()


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 of the payload's canonical JSON: what a citation pins."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def unique_slug(track: str, split: str) -> str:
    """track-split-YYYY-MM-DD, with -2, -3… when that day already has a snapshot."""
    base = f"{track}-{split}-{utcnow():%Y-%m-%d}"
    taken = set(db.session.scalars(select(Snapshot.slug).where(Snapshot.slug.like(f"{base}%"))))
    slug, number = base, 1
    while slug in taken:
        number += 1
        slug = f"{base}-{number}"
    return slug


def freeze(track: str, split: str, title: str, note: str, actor: User) -> Snapshot:
    """Freeze the current leaderboard of a track and split (committed, audited)."""
    if track not in TRACK_INFO or split not in SPLITS:
        raise SnapshotError(f"unknown leaderboard {track!r} / {split!r}")
    if not title.strip():
        raise SnapshotError("a snapshot needs a title")
    payload = full_board(track, split)
    snapshot = Snapshot(slug=unique_slug(track, split), track=track, split=split,
                        title=title.strip()[:200], note=note.strip(),
                        gold_version_name=payload["gold_version"], actor=actor.username,
                        payload=payload, sha256=digest(payload), created_at=utcnow())
    db.session.add(snapshot)
    db.session.flush()
    db.session.add(AuditLog(actor_id=actor.id, actor=actor.username, action="snapshot",
                            target_type="snapshot", target_id=snapshot.id, reason=snapshot.slug))
    db.session.commit()
    return snapshot


def bibtex(snapshot: Snapshot, url: str) -> str:
    """A BibTeX @misc entry citing the snapshot by its stable URL and digest."""
    title = " ".join(BIBTEX_UNSAFE.sub("", snapshot.title).split())
    created = snapshot.created_at
    return (
        f"@misc{{situatedqa-{snapshot.slug},\n"
        f"  title        = {{{{{title}}}}},\n"
        f"  author       = {{{{SituatedQA leaderboard organizers}}}},\n"
        f"  year         = {{{created:%Y}}},\n"
        f"  month        = {{{created:%b}}},\n"
        f"  howpublished = {{\\url{{{url}}}}},\n"
        f"  note         = {{Leaderboard snapshot of {snapshot.track}/{snapshot.split} taken "
        f"{created:%Y-%m-%d}, gold version "
        f"{BIBTEX_UNSAFE.sub('', snapshot.gold_version_name)}, SHA-256 {snapshot.sha256}}},\n"
        f"}}\n"
    )
