"""The living benchmark: building gold versions, rescoring into them, activating, changelogs.

A version's gold and its change list live in the database (gold_version.gold_sha256 names
a stored file). Scores are kept per (submission, version). Activating a version starts a
rescore job (services/jobs.py) that scores every stored submission in idempotent batches
(invisible: leaderboards read only the active version), then flips `is_active` in one
transaction. A version is *published* (selectable, with a public changelog) once it has
been active: the first version, or one with a finished rescore job.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import date
from typing import Any

from sqlalchemy import exists, func, or_, select

from benchmark import GoldSet, Problem
from benchmark.versions import (
    Change,
    UpdateError,
    apply_update,
    change_counts,
    diff_gold,
    fingerprint,
    gold_checksums,
    parse_update,
)

from ..extensions import db
from ..models import (
    GoldVersion,
    Job,
    JobKind,
    JobStatus,
    Score,
    Submission,
    User,
)
from . import audit, evaluation, gold_store
from .errors import ServiceError

log = logging.getLogger(__name__)
#: Splits whose changed keys and answers the public changelog lists (test: counts only).
PUBLIC_SPLITS = ("train", "dev")


class VersionError(ServiceError):
    """An organizer asked for something impossible: a bad name, a busy or unknown version."""

    status = 400
    code = "invalid_version"


class UpdateRejected(VersionError):
    """An update file does not apply to its parent; `problems` names each bad record by
    line and key (e.g. a campaign's update after a later version retired its example)."""

    code = "invalid_update"

    def __init__(self, message: str, problems: list[Problem]) -> None:
        super().__init__(message, [p.to_json() for p in problems])
        self.problems = problems


# --- reading versions -----------------------------------------------------------------------


def gold_of(version: GoldVersion) -> GoldSet:
    """A version's gold, parsed once per process (gold_store)."""
    return gold_store.gold_of(version)


def rescore_jobs() -> Any:
    """SQL condition: a job that rescores into a version."""
    return Job.kind == JobKind.RESCORE.value


def published_filter() -> Any:
    """SQL condition: the version has been active (the release, or a finished rescore)."""
    done = exists().where(Job.gold_version_id == GoldVersion.id, rescore_jobs(),
                          Job.status == JobStatus.DONE.value)
    return or_(GoldVersion.parent_id.is_(None), done)


def published_versions() -> list[GoldVersion]:
    """Versions that may be shown publicly, oldest first."""
    return list(db.session.scalars(
        select(GoldVersion).where(published_filter()).order_by(GoldVersion.as_of,
                                                               GoldVersion.id)))


def all_versions() -> list[GoldVersion]:
    """Every version, built or published, oldest first (organizers)."""
    return list(db.session.scalars(select(GoldVersion).order_by(GoldVersion.id)))


def version_named(name: str, *, published_only: bool = True) -> GoldVersion | None:
    """The version with this name (None if unknown, or unpublished when published_only)."""
    query = select(GoldVersion).where(GoldVersion.name == name)
    if published_only:
        query = query.where(published_filter())
    return db.session.scalar(query)


def version_id_named(name: str) -> int | None:
    """The id of the version with this name, built or published (None if unknown)."""
    return db.session.scalar(select(GoldVersion.id).where(GoldVersion.name == name))


def submission_total() -> int:
    """How many submissions there are (what an activation rescores)."""
    return db.session.scalar(select(func.count(Submission.id))) or 0


def latest_job(version: GoldVersion) -> Job | None:
    """The newest rescore job of a version."""
    return db.session.scalar(select(Job).where(Job.gold_version_id == version.id, rescore_jobs())
                             .order_by(Job.id.desc()).limit(1))


def stored_changes(version: GoldVersion) -> list[Change]:
    """Every change of a version against its parent, as recorded when it was built."""
    return [Change.from_json(record) for record in version.changes or []]


def public_changes(changes: Iterable[Change]) -> dict[str, Any]:
    """Counts per track, split and partition; key-level entries only on non-test splits."""
    changes = list(changes)
    return {"counts": {track: {split: {p: dict(c) for p, c in parts.items()}
                               for split, parts in per_track.items()}
                       for track, per_track in change_counts(changes).items()},
            "examples": [c.to_json() for c in changes if c.split in PUBLIC_SPLITS]}


def version_json(version: GoldVersion) -> dict[str, Any]:
    """A version's public description (no test keys, answers or reasons)."""
    parent = db.session.get(GoldVersion, version.parent_id) if version.parent_id else None
    return {"name": version.name, "as_of": version.as_of.isoformat(),
            "fingerprint": version.fingerprint, "note": version.changelog,
            "parent": parent.name if parent else None, "active": version.is_active}


# --- building ------------------------------------------------------------------------------


def build_version(update_text: str, filename: str, name: str, as_of: date, note: str,
                  actor: User | None, parent: GoldVersion | None = None) -> GoldVersion:
    """Validate an update file and store the new version's gold and row in one transaction.

    Raises VersionError; UpdateRejected (a 400 naming each bad record by line and key)
    when the update does not apply to the parent.
    """
    name = name.strip()
    if not name or len(name) > 80:
        raise VersionError("a version needs a name of 1 to 80 characters")
    if db.session.scalar(select(GoldVersion.id).where(GoldVersion.name == name)) is not None:
        raise VersionError(f"a gold version named {name!r} exists already")
    parent = parent or gold_store.active_version()
    if as_of < parent.as_of:
        raise VersionError(f"as-of date {as_of} is before the parent's ({parent.as_of})")
    parent_gold = gold_of(parent)
    try:
        records = parse_update(update_text, parent_gold, filename=filename)
    except UpdateError as exc:
        raise UpdateRejected(f"the update does not apply to {parent.name!r}: {exc}",
                             exc.problems) from None
    new_gold = apply_update(parent_gold, records)
    reasons = {(r.track, r.split, r.key): r.reason for r in records}
    changes = diff_gold(parent_gold, new_gold, reasons)
    checksums = gold_checksums(new_gold)
    new_gold.meta.update(version=name, as_of=as_of.isoformat(), parent=parent.name,
                         parent_fingerprint=parent.fingerprint, files=checksums,
                         source_fingerprint=fingerprint(checksums))
    try:
        version = GoldVersion(name=name, as_of=as_of, fingerprint=fingerprint(checksums),
                              changelog=note.strip(), parent_id=parent.id, is_active=False,
                              gold_sha256=gold_store.store(new_gold),
                              changes=[c.to_json() for c in changes])
        db.session.add(version)
        db.session.flush()
        audit.record_event("gold_build", "gold_version", version.id, actor,
                           f"{name}: {len(changes)} changes from {parent.name}")
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    return version


def diff_versions(a: GoldVersion, b: GoldVersion) -> list[Change]:
    """Every example that differs from version a to version b, with its reasons."""
    return diff_gold(gold_of(a), gold_of(b), reasons_between(a, b))


def reasons_between(a: GoldVersion, b: GoldVersion) -> dict[tuple[str, str, str], str]:
    """The reasons recorded by the versions between a and b (also when they are not
    adjacent), by (track, split, key); a key changed by several, in build order."""
    by_id = {version.id: version for version in all_versions()}

    def lineage(version: GoldVersion | None) -> list[int]:
        found = []
        while version is not None:
            found.append(version.id)
            version = by_id.get(version.parent_id) if version.parent_id else None
        return found

    first, second = lineage(a), lineage(b)
    between = sorted(set(first) ^ set(second))  # below the common ancestor, on either side
    collected: dict[tuple[str, str, str], list[str]] = {}
    for version_id in between:
        for change in stored_changes(by_id[version_id]):
            if change.reason:
                collected.setdefault((change.track, change.split, change.key),
                                     []).append(change.reason)
    return {key: "; ".join(dict.fromkeys(reasons)) for key, reasons in collected.items()}


def missing_count(version: GoldVersion) -> int:
    """Stored submissions without a score for the version."""
    return db.session.scalar(select(func.count(Submission.id)).where(
        evaluation.unscored_condition(version))) or 0


# --- reading the history -----------------------------------------------------------------


def score_history(submission: Submission) -> list[tuple[GoldVersion, Score]]:
    """A submission's scores under every published version, oldest version first."""
    rows = db.session.execute(
        select(GoldVersion, Score).join(Score, Score.gold_version_id == GoldVersion.id)
        .where(Score.submission_id == submission.id, published_filter())
        .order_by(GoldVersion.as_of, GoldVersion.id)).all()
    return [(version, row) for version, row in rows]
