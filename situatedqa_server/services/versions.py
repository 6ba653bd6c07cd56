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
from dataclasses import dataclass
from datetime import date
from typing import Any

from flask import current_app
from sqlalchemy import exists, func, or_, select, text

from benchmark import (
    HIDDEN_SPLIT,
    GoldSet,
    GoldSplit,
    Predictions,
    ScoreResult,
    ValidationError,
    parse_predictions,
    score,
)
from benchmark.incremental import split_digest
from benchmark.versions import (
    Change,
    apply_update,
    change_counts,
    diff_gold,
    fingerprint,
    gold_checksums,
    parse_update,
    realign,
)

from ..extensions import db, prebuilt
from ..models import (
    GoldVersion,
    Job,
    JobKind,
    JobStatus,
    Score,
    Submission,
    User,
    Visibility,
)
from . import audit, blobs, gold_store
from .score_rows import upload_score

log = logging.getLogger(__name__)
#: Splits whose changed keys and answers the public changelog lists (test: counts only).
PUBLIC_SPLITS = ("train", "dev")
#: Serialises version switches with uploads on PostgreSQL (SQLite uses its write lock).
SWITCH_LOCK_KEY = 0x5174_0006


class VersionError(Exception):
    """An organizer asked for something impossible: a bad name, a busy or unknown version."""


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

    Raises UpdateError (problems by line and key) or VersionError.
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
    records = parse_update(update_text, parent_gold, filename=filename)
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


# --- scoring stored files ----------------------------------------------------------------


def uploaded_under(submissions: list[Submission]) -> dict[int, int]:
    """Submission id → id of the version it was uploaded under (its first score's)."""
    first: dict[int, int] = {}
    for submission_id, version_id in db.session.execute(
            select(Score.submission_id, Score.gold_version_id)
            .where(Score.submission_id.in_([s.id for s in submissions])).order_by(Score.id)):
        first.setdefault(submission_id, version_id)
    return first


def _versions_of_transaction() -> tuple[dict[int, GoldVersion], GoldVersion | None]:
    """Every version by id and the first, read once per transaction (a rescore batch reads
    hundreds of files in one)."""
    session = db.session()
    transaction = session.get_transaction()
    memo = session.info.get("versions_of_transaction")
    if transaction is not None and memo is not None and memo[0] is transaction:
        found: tuple[dict[int, GoldVersion], GoldVersion | None] = memo[1]
        return found
    versions = {v.id: v for v in all_versions()}
    roots = [v for v in versions.values() if v.parent_id is None]
    found = versions, min(roots, key=lambda v: v.id) if roots else None
    if transaction is not None:
        session.info["versions_of_transaction"] = (transaction, found)
    return found


def read_stored(submission: Submission, uploaded_version_id: int | None = None,
                data: bytes | None = None) -> Predictions:
    """Parse a stored file against the inputs it was accepted for (ValidationError if none).

    The inputs tried are those of the version it was uploaded under first, then every other.
    `data` is the file's bytes when the caller fetched them already (blobs.get_many).
    """
    if data is None:
        data = blobs.get(submission.file_sha256)
    return parse_for_some_version(data, submission.track, submission.split,
                                  submission.filename, uploaded_version_id)[0]


def parse_for_some_version(data: bytes, track: str, split: str, filename: str,
                           preferred_version_id: int | None = None,
                           ) -> tuple[Predictions, GoldSplit]:
    """A file's predictions and the inputs they answer: those of the preferred version first,
    then of every other version (ValidationError of the first one tried if none accepts it).

    A file made for an earlier version (a release-made dev file, a reference baseline) keeps
    answering that version's inputs after a version retires or adds examples; scoring it
    against another version aligns it (realign: retired examples dropped, added ones wrong).
    """
    versions, first = _versions_of_transaction()
    if first is None:
        first = gold_store.first_version()  # raises GoldUnavailable
    ordered = ([versions[preferred_version_id]] if preferred_version_id in versions else [])
    ordered += list(versions.values())
    # The inputs of the hidden test split stay the release's (gold_store.inputs_of).
    candidates = dict.fromkeys(
        (first if split == HIDDEN_SPLIT else v).gold_sha256
        for v in ordered)
    error: ValidationError | None = None
    max_bytes = current_app.config["MAX_DECOMPRESSED_BYTES"]
    for sha256 in candidates:
        inputs = gold_store.load(sha256).get(track, split)
        try:
            return parse_predictions(data, inputs, filename=filename,
                                     max_bytes=max_bytes), inputs
        except ValidationError as exc:
            error = error or exc
    raise error or ValidationError([])


def score_submission(submission: Submission, target: GoldSplit,
                     uploaded_version_id: int | None, data: bytes | None = None) -> ScoreResult:
    """Score one stored submission against a version's gold split."""
    return read_and_score(submission, target, uploaded_version_id, data)[1]


def read_and_score(submission: Submission, target: GoldSplit, uploaded_version_id: int | None,
                   data: bytes | None = None) -> tuple[Predictions, ScoreResult]:
    """A stored file's predictions as parsed, and its score against a version's gold split."""
    predictions = read_stored(submission, uploaded_version_id, data)
    return predictions, score(target, realign(predictions, target),
                              resamples=current_app.config["BOOTSTRAP_RESAMPLES"])


#: keys_digest → the key order it names, per process (rescoring asks once per file).
_keys_of: dict[str, tuple[str, ...]] = {}


def keys_named(digest: str, track: str, split: str, *likely: GoldSplit) -> tuple[str, ...] | None:
    """The inputs' keys whose keys_digest a stored prediction set names (None if no version's).

    The likely splits (a rescore's parent and target) are tried first, then every version's.
    """
    found = _keys_of.get(digest)
    if found is not None:
        return found
    for gold in likely:
        _keys_of.setdefault(split_digest(gold), gold.keys)
    if digest not in _keys_of:
        for version in _versions_of_transaction()[0].values():
            splits = gold_of(version).splits
            if (track, split) in splits:
                gold = splits[(track, split)]
                _keys_of.setdefault(split_digest(gold), gold.keys)
    return _keys_of.get(digest)


def predictions_for(submission: Submission, gold: GoldSplit) -> Predictions:
    """A stored submission's predictions aligned to a gold split (for per-example pages)."""
    predictions = read_stored(submission, uploaded_under([submission]).get(submission.id))
    return realign(predictions, gold)


# --- uploads while a version is being rescored ---------------------------------------------


def lock_versions(*, shared: bool) -> None:
    """Hold the version-switch lock for this transaction (PostgreSQL advisory lock)."""
    if db.session.get_bind().dialect.name == "postgresql":
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        db.session.execute(text(f"SELECT {function}(:key)"), {"key": SWITCH_LOCK_KEY})


def rescoring_versions(active: GoldVersion) -> list[GoldVersion]:
    """Versions with an unfinished rescore job (besides the active one)."""
    busy = select(Job.gold_version_id).where(
        rescore_jobs(), Job.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]))
    return list(db.session.scalars(select(GoldVersion).where(
        GoldVersion.id.in_(busy), GoldVersion.id != active.id).order_by(GoldVersion.id)))


def _active_and_rescoring_statement(_dialect: str) -> Any:
    busy = select(Job.gold_version_id).where(
        rescore_jobs(), Job.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]))
    return (select(GoldVersion).where(or_(GoldVersion.is_active.is_(True),
                                          GoldVersion.id.in_(busy)))
            .order_by(GoldVersion.is_active.desc(), GoldVersion.id))


#: Read by every upload: built once (see extensions.prebuilt).
_active_and_rescoring = prebuilt(_active_and_rescoring_statement)


def active_and_rescoring() -> list[GoldVersion]:
    """The active version, then those with an unfinished rescore job, in one round trip."""
    found = list(db.session.scalars(_active_and_rescoring()))
    if not found or not found[0].is_active:
        gold_store.active_version()  # raises GoldUnavailable
    return found


def upload_scores(submission: Submission, predictions: Predictions, inputs: GoldSplit,
                  result: ScoreResult) -> list[Score]:
    """An upload's new score rows: the active version's first, then one for every version
    being rescored (not added to the session: the upload stores them).

    Call inside the upload's locked transaction.
    """
    lock_versions(shared=True)
    rows = []
    for version in active_and_rescoring():
        target = gold_of(version).get(submission.track, submission.split)
        same = target is inputs or target.examples == inputs.examples
        rows.append(upload_score(submission, version, result if same else score(
            target, realign(predictions, target),
            resamples=current_app.config["BOOTSTRAP_RESAMPLES"])))
    return rows


def missing_count(version: GoldVersion) -> int:
    """Stored submissions without a score for the version."""
    scored = exists().where(Score.submission_id == Submission.id,
                            Score.gold_version_id == version.id)
    return db.session.scalar(select(func.count(Submission.id)).where(~scored)) or 0


# --- reading the history -----------------------------------------------------------------


def score_history(submission: Submission) -> list[tuple[GoldVersion, Score]]:
    """A submission's scores under every published version, oldest version first."""
    rows = db.session.execute(
        select(GoldVersion, Score).join(Score, Score.gold_version_id == GoldVersion.id)
        .where(Score.submission_id == submission.id, published_filter())
        .order_by(GoldVersion.as_of, GoldVersion.id)).all()
    return [(version, row) for version, row in rows]


def _ranked(version: GoldVersion, track: str, split: str) -> dict[int, tuple[int, float | None]]:
    """Rank (as on the leaderboard: ties share a rank) and primary metric of public entries."""
    rank = func.rank().over(order_by=Score.primary_metric.desc().nulls_last())
    rows = db.session.execute(
        select(Score.submission_id, rank, Score.primary_metric).join(Submission)
        .where(Score.gold_version_id == version.id, Score.track == track, Score.split == split,
               Submission.visibility == Visibility.PUBLIC.value, Submission.hidden.is_(False),
               Submission.deleted_at.is_(None)))
    return {submission_id: (int(position), metric) for submission_id, position, metric in rows}


@dataclass(frozen=True)
class RankChange:
    """One entry's rank and primary metric under two versions."""

    submission: Submission
    rank_a: int | None
    rank_b: int | None
    metric_a: float | None
    metric_b: float | None

    @property
    def moved(self) -> int:
        """Places gained (positive) or lost (negative) from version a to b."""
        if self.rank_a is None or self.rank_b is None:
            return 0
        return self.rank_a - self.rank_b

    @property
    def delta(self) -> float | None:
        """Change of the primary metric, in points."""
        if self.metric_a is None or self.metric_b is None:
            return None
        return self.metric_b - self.metric_a


def rank_changes(track: str, split: str, a: GoldVersion, b: GoldVersion) -> list[RankChange]:
    """Every public entry's rank under versions a and b, ordered by its rank under b."""
    ranks_a, ranks_b = _ranked(a, track, split), _ranked(b, track, split)
    ids = set(ranks_a) | set(ranks_b)
    submissions = {s.id: s for s in db.session.scalars(
        select(Submission).where(Submission.id.in_(ids)))}
    changes = [RankChange(submissions[i], *_pair(ranks_a.get(i), ranks_b.get(i))) for i in ids]
    return sorted(changes, key=lambda c: (c.rank_b is None, c.rank_b or 0, c.submission.id))


def _pair(a: tuple[int, float | None] | None,
          b: tuple[int, float | None] | None) -> tuple[int | None, int | None,
                                                     float | None, float | None]:
    """(rank a, rank b, metric a, metric b) with None where an entry is unranked."""
    return (a[0] if a else None, b[0] if b else None, a[1] if a else None, b[1] if b else None)


def drift_series(track: str, split: str, limit: int = 10) -> tuple[
        list[GoldVersion], list[tuple[Submission, list[float | None]]]]:
    """EM of the top public entries (by the active version) under every published version."""
    published = published_versions()
    active = gold_store.active_version()
    top = sorted(_ranked(active, track, split).items(), key=lambda item: item[1][0])[:limit]
    per_version = {v.id: _ranked(v, track, split) for v in published}
    submissions = {s.id: s for s in db.session.scalars(
        select(Submission).where(Submission.id.in_([i for i, _ in top])))}
    series = [(submissions[i], [per_version[v.id].get(i, (0, None))[1] for v in published])
              for i, _ in top]
    return published, series
