"""The living benchmark: building gold versions, rescoring into them, activating, changelogs.

A version's gold lives in GOLD_DIR/versions/<id>/ (the first version is GOLD_DIR itself).
Scores are kept per (submission, version). Activating a version rescores every stored
submission in batches (invisible: leaderboards read only the active version), then flips
`is_active` in one transaction. A version is *published* (selectable, with a public
changelog) once it has been active: the first version, or one with a finished rescore job.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from sqlalchemy import exists, func, or_, select, text

from benchmark import (
    GoldSet,
    GoldSplit,
    Predictions,
    ScoreResult,
    ValidationError,
    parse_predictions,
    score,
)
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

from ..extensions import db
from ..models import (
    GoldVersion,
    JobStatus,
    RescoreJob,
    Score,
    Submission,
    User,
    Visibility,
    utcnow,
)
from . import audit, gold_store
from .storage import UploadStore, upload_store

log = logging.getLogger(__name__)
CHANGES_FILE = "changes.json"
BATCH_SIZE = 200
#: Splits whose changed keys and answers the public changelog lists (test: counts only).
PUBLIC_SPLITS = ("train", "dev")
#: Serialises version switches with uploads on PostgreSQL (SQLite uses its write lock).
SWITCH_LOCK_KEY = 0x5174_0006


class VersionError(Exception):
    """An organizer asked for something impossible: a bad name, a busy or unknown version."""


# --- reading versions -----------------------------------------------------------------------


def gold_of(version: GoldVersion) -> GoldSet:
    """A version's gold, cached per worker (bounded LRU in gold_store)."""
    return gold_store.load_gold_dir(gold_store.version_dir(version))


def published_filter() -> Any:
    """SQL condition: the version has been active (the release, or a finished rescore)."""
    done = exists().where(RescoreJob.gold_version_id == GoldVersion.id,
                          RescoreJob.status == JobStatus.DONE.value)
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


def latest_job(version: GoldVersion) -> RescoreJob | None:
    """The newest rescore job of a version."""
    return db.session.scalar(select(RescoreJob).where(RescoreJob.gold_version_id == version.id)
                             .order_by(RescoreJob.id.desc()).limit(1))


def stored_changes(version: GoldVersion) -> list[Change]:
    """Every change of a version against its parent, as recorded when it was built."""
    path = gold_store.version_dir(version) / CHANGES_FILE
    if version.parent_id is None or not path.is_file():
        return []
    return [Change.from_json(record) for record in json.loads(path.read_text())]


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
    """Validate an update file and write the new version's gold and row: all or nothing.

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
    return _store_version(new_gold, changes, name, as_of, note, parent, actor)


def _store_version(gold: GoldSet, changes: list[Change], name: str, as_of: date, note: str,
                   parent: GoldVersion, actor: User | None) -> GoldVersion:
    """Write the gold to a temporary folder, insert the row, rename, commit (undo on failure)."""
    root = Path(current_app.config["GOLD_DIR"]) / gold_store.VERSIONS_DIR
    staging = root / f".tmp-{secrets.token_hex(8)}"
    gold.save(staging)
    (staging / CHANGES_FILE).write_text(json.dumps([c.to_json() for c in changes]))
    version = GoldVersion(name=name, as_of=as_of, fingerprint=gold.meta["source_fingerprint"],
                          changelog=note.strip(), parent_id=parent.id, is_active=False)
    final: Path | None = None
    try:
        db.session.add(version)
        db.session.flush()
        final = root / str(version.id)
        staging.rename(final)  # atomic: the folder is complete or absent
        audit.record_event("gold_build", "gold_version", version.id, actor,
                           f"{name}: {len(changes)} changes from {parent.name}")
        db.session.commit()
    except BaseException:
        db.session.rollback()
        shutil.rmtree(final if final is not None and final.exists() else staging,
                      ignore_errors=True)
        raise
    return version


def diff_versions(a: GoldVersion, b: GoldVersion) -> list[Change]:
    """Every example that differs from version a to version b."""
    return diff_gold(gold_of(a), gold_of(b))


# --- scoring stored files ----------------------------------------------------------------


@dataclass(frozen=True)
class StoredFile:
    """What a worker needs to score one stored submission against a version."""

    submission_id: int
    sha256: str
    filename: str
    track: str
    split: str
    #: Gold folders whose keys the file may have been validated against, likeliest first.
    input_dirs: tuple[str, ...]


def read_stored(item: StoredFile, store: UploadStore, max_bytes: int) -> Predictions:
    """Parse a stored file against the inputs it was accepted for (ValidationError if none)."""
    data = store.read(item.sha256)
    error: ValidationError | None = None
    for directory in item.input_dirs:
        inputs = gold_store.load_gold_dir(Path(directory)).get(item.track, item.split)
        try:
            return parse_predictions(data, inputs, filename=item.filename, max_bytes=max_bytes)
        except ValidationError as exc:
            error = exc
    raise error or ValidationError([])


def score_stored(item: StoredFile, target_dir: str, store_root: str, max_bytes: int,
                 resamples: int) -> ScoreResult:
    """Score one stored file against a version's gold (runs in worker processes too)."""
    predictions = read_stored(item, UploadStore(Path(store_root)), max_bytes)
    target = gold_store.load_gold_dir(Path(target_dir)).get(item.track, item.split)
    return score(target, realign(predictions, target), resamples=resamples)


def input_dir(version: GoldVersion, split: str) -> str:
    """The folder of the inputs participants answered under a version (test: the release's)."""
    if split == gold_store.HIDDEN_SPLIT:
        return str(current_app.config["GOLD_DIR"])
    return str(gold_store.version_dir(version))


def stored_files(submissions: list[Submission]) -> list[StoredFile]:
    """StoredFile items; the version a file was uploaded under is its first score's."""
    versions = {v.id: v for v in all_versions()}
    first: dict[int, int] = {}
    for submission_id, version_id in db.session.execute(
            select(Score.submission_id, Score.gold_version_id)
            .where(Score.submission_id.in_([s.id for s in submissions])).order_by(Score.id)):
        first.setdefault(submission_id, version_id)
    items = []
    for s in submissions:
        uploaded = versions.get(first.get(s.id, -1))
        ordered = ([uploaded] if uploaded else []) + list(versions.values())
        dirs = tuple(dict.fromkeys(input_dir(v, s.split) for v in ordered))
        items.append(StoredFile(s.id, s.file_sha256, s.filename, s.track, s.split, dirs))
    return items


def predictions_for(submission: Submission, gold: GoldSplit) -> Predictions:
    """A stored submission's predictions aligned to a gold split (for per-example pages)."""
    [item] = stored_files([submission])
    predictions = read_stored(item, upload_store(), current_app.config["MAX_DECOMPRESSED_BYTES"])
    return realign(predictions, gold)


# --- uploads while a version is being rescored ---------------------------------------------


def lock_versions(*, shared: bool) -> None:
    """Hold the version-switch lock for this transaction (PostgreSQL advisory lock)."""
    if db.session.get_bind().dialect.name == "postgresql":
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        db.session.execute(text(f"SELECT {function}(:key)"), {"key": SWITCH_LOCK_KEY})


def upload_scores(submission: Submission, predictions: Predictions, inputs: GoldSplit,
                  result: ScoreResult) -> Score:
    """Add an upload's scores for the active version and every version being rescored.

    Call inside the upload's locked transaction; returns the active version's row.
    """
    from .scoring import new_score

    lock_versions(shared=True)
    active = gold_store.active_version()
    rescoring = db.session.scalars(select(GoldVersion).join(RescoreJob).where(
        RescoreJob.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]),
        GoldVersion.id != active.id).distinct()).all()
    rows = []
    for version in (active, *rescoring):
        target = gold_of(version).get(submission.track, submission.split)
        same = target is inputs or target.examples == inputs.examples
        rows.append(new_score(submission, version, result if same else score(
            target, realign(predictions, target),
            resamples=current_app.config["BOOTSTRAP_RESAMPLES"])))
    db.session.add_all(rows)
    return rows[0]


# --- activation ------------------------------------------------------------------------------


def start_activation(version: GoldVersion, actor: User | None, *, restart: bool = False) -> RescoreJob:
    """Queue a rescore job that will activate the version (committed)."""
    if version.is_active:
        raise VersionError(f"{version.name!r} is already the active version")
    busy = db.session.scalars(select(RescoreJob).where(RescoreJob.status.in_(
        [JobStatus.QUEUED.value, JobStatus.RUNNING.value]))).all()
    if busy and not restart:
        raise VersionError(f"rescore job {busy[0].id} ({busy[0].gold_version.name}) is still "
                           f"{busy[0].status}; wait, or restart it if its process died")
    for job in busy:
        job.status, job.error, job.finished_at = JobStatus.FAILED.value, "interrupted", utcnow()
    job = RescoreJob(gold_version=version, actor=actor.username if actor else audit.SYSTEM_ACTOR)
    db.session.add(job)
    db.session.flush()
    audit.record_event("gold_activate", "gold_version", version.id, actor,
                       f"rescore job {job.id} started for {version.name}")
    db.session.commit()
    return job


def _missing(version: GoldVersion, limit: int) -> list[Submission]:
    """Stored submissions without a score for the version, oldest first."""
    scored = exists().where(Score.submission_id == Submission.id,
                            Score.gold_version_id == version.id)
    return list(db.session.scalars(select(Submission).where(~scored)
                                   .order_by(Submission.id).limit(limit)))


def _score_batch(version: GoldVersion, batch: list[Submission],
                 mapper: Callable[..., Iterator[ScoreResult]]) -> None:
    """Score a batch of stored submissions against a version and add the rows."""
    from .scoring import new_score

    config = current_app.config
    work = partial(score_stored, target_dir=str(gold_store.version_dir(version)),
                   store_root=config["SUBMISSIONS_DIR"],
                   max_bytes=config["MAX_DECOMPRESSED_BYTES"],
                   resamples=config["BOOTSTRAP_RESAMPLES"])
    for submission, result in zip(batch, mapper(work, stored_files(batch)), strict=True):
        db.session.add(new_score(submission, version, result))


def run_job(job_id: int, *, workers: int = 1, batch_size: int = BATCH_SIZE,
            progress: Callable[[int, int], None] | None = None) -> RescoreJob:
    """Rescore every stored submission into the job's version, then switch to it.

    Scores are committed per batch and stay invisible until the switch. On any error the
    job is marked failed and the previous version stays active; running the activation
    again resumes where the scores stop.
    """
    job = db.session.get_one(RescoreJob, job_id)
    version = job.gold_version
    job.status, job.started_at, job.error = JobStatus.RUNNING.value, utcnow(), None
    job.total = db.session.scalar(select(func.count(Submission.id))) or 0
    job.done = db.session.scalar(select(func.count(Score.id)).where(
        Score.gold_version_id == version.id)) or 0
    db.session.commit()
    pool = (ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
            if workers > 1 else None)
    mapper: Callable[..., Iterator[ScoreResult]] = (
        partial(pool.map, chunksize=8) if pool else map)
    try:
        while batch := _missing(version, batch_size):
            _score_batch(version, batch, mapper)
            job.done = min(job.total, job.done + len(batch))
            db.session.commit()
            if progress:
                progress(job.done, job.total)
        _switch(job, mapper)
    except BaseException as exc:
        _fail(job_id, exc)
        raise
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    return job


def run_in_background(app: Flask, job_id: int) -> threading.Thread:
    """Run a rescore job in a daemon thread, with its own app context and session."""
    def target() -> None:
        with app.app_context():
            try:
                run_job(job_id, workers=app.config.get("RESCORE_WORKERS", 1))
            except Exception:
                # run_job has marked the job failed; the traceback goes to the log only.
                log.exception("rescore job %s failed", job_id)

    thread = threading.Thread(target=target, name=f"rescore-{job_id}", daemon=True)
    thread.start()
    return thread


def _switch(job: RescoreJob, mapper: Callable[..., Iterator[ScoreResult]]) -> None:
    """One transaction: score late uploads, flip is_active, finish the job, audit."""
    from .quotas import begin_locked

    version = job.gold_version
    begin_locked()  # SQLite: the write lock keeps uploads out until the flip commits
    lock_versions(shared=False)
    while batch := _missing(version, BATCH_SIZE):
        _score_batch(version, batch, mapper)
        db.session.flush()
    previous = gold_store.active_version()
    previous.is_active = False
    db.session.flush()  # at most one active row at any time
    version.is_active = True
    job.status, job.finished_at = JobStatus.DONE.value, utcnow()
    job.done = job.total = db.session.scalar(select(func.count(Submission.id))) or 0
    audit.record_event("gold_activated", "gold_version", version.id, None,
                       f"{version.name} replaces {previous.name} (job {job.id})")
    db.session.commit()


def _fail(job_id: int, exc: BaseException) -> None:
    """Record a failed job in a fresh transaction (the failed one is rolled back)."""
    db.session.rollback()
    job = db.session.get_one(RescoreJob, job_id)
    job.status, job.finished_at = JobStatus.FAILED.value, utcnow()
    job.error = f"{type(exc).__name__}: {exc}"[:2000]
    audit.record_event("gold_activate_failed", "gold_version", job.gold_version_id, None,
                       f"job {job_id}: {job.error}")
    db.session.commit()


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
