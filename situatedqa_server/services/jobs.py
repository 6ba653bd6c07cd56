"""Long jobs in idempotent steps whose progress lives in the database.

A rescore job is planned as batches of submission-id ranges (job_batch). A Celery message
only says "run batch B" or "finish job J"; running a batch twice writes the same rows
(INSERT … ON CONFLICT DO NOTHING on (submission, version)), and a batch is marked done
in the transaction that writes its scores. Every dispatched step carries a lease: a step
whose lease passes unfinished (its worker was killed, its message lost) is dispatched
again by the sweep that every job worker runs. So after a kill -9 anywhere, the job
completes once a worker is back, no submission is missed or scored twice, and no job
stays "running" with nothing running it.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import msgspec
import numpy as np
from flask import current_app
from sqlalchemy import DateTime, Integer, exists, func, literal, select, update

from benchmark import GoldError, GoldSplit, ScoreResult, ValidationError, incremental

from ..extensions import db, upsert_insert
from ..models import (
    GoldVersion,
    Job,
    JobBatch,
    JobKind,
    JobStatus,
    Score,
    Submission,
    User,
    utcnow,
)
from . import audit, blobs, gold_store, versions
from .quotas import begin_locked
from .score_rows import score_columns

log = logging.getLogger(__name__)
UNFINISHED = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)
#: A batch that failed this often (not a worker death: an error) fails its job.
MAX_ATTEMPTS = 5
#: Errors of the data, not of the process: retrying cannot help, the job fails.
DATA_ERRORS = (ValidationError, GoldError, gold_store.GoldUnavailable, blobs.MissingFile)
#: Sends one step ("batch", "finish" or "regenerate", and its id) to the job workers.
Dispatcher = Callable[[str, int], None]


class JobError(Exception):
    """A job cannot be started: one of its kind is still unfinished, or it is not wanted."""


def lease_end(now: datetime | None = None) -> datetime:
    """Until when a step dispatched or started now is held."""
    return (now or utcnow()) + timedelta(seconds=current_app.config["JOB_LEASE_SECONDS"])


def unfinished(kind: JobKind) -> list[Job]:
    """Jobs of a kind that are queued or running, oldest first."""
    return list(db.session.scalars(select(Job).where(
        Job.kind == kind.value, Job.status.in_(UNFINISHED)).order_by(Job.id)))


# --- starting ------------------------------------------------------------------------------


def start_activation(version: GoldVersion, actor: User | None, *,
                     restart: bool = False, incremental: bool = True) -> Job:
    """Plan a rescore job that will activate the version (committed; not yet dispatched).

    Incremental (the default) carries over the parent's scores on boards the version did
    not change; full reads and scores every stored file again.
    """
    if version.is_active:
        raise versions.VersionError(f"{version.name!r} is already the active version")
    busy = unfinished(JobKind.RESCORE)
    if busy and not restart:
        job = busy[0]
        raise versions.VersionError(
            f"rescore job {job.id} ({job.gold_version.name if job.gold_version else '?'}) is "
            f"still {job.status}; it resumes by itself while a job worker runs "
            "(`flask --app app jobs worker`); abandon it with --restart")
    for job in busy:
        _mark_failed(job, "abandoned for a new activation")
    job = Job(kind=JobKind.RESCORE.value, gold_version=version,
              params={"incremental": incremental},
              actor=actor.username if actor else audit.SYSTEM_ACTOR)
    db.session.add(job)
    db.session.flush()
    plan_batches(job)
    audit.record_event("gold_activate", "gold_version", version.id, actor,
                       f"rescore job {job.id} started for {version.name}")
    db.session.commit()
    return job


#: In planning an incremental job, a submission on a board the version did not change costs
#: this fraction of one rescored (a row copied in one INSERT … SELECT, nothing evaluated).
CARRIED_COST = 20


def changed_boards(version: GoldVersion | None) -> set[tuple[str, str]] | None:
    """The boards a version's recorded changes touch (None if it records none: unknown)."""
    if version is None or version.parent_id is None or version.changes is None:
        return None
    return {(change["track"], change["split"]) for change in version.changes}


def plan_batches(job: Job) -> None:
    """Split the stored submissions into id ranges of about RESCORE_BATCH_SIZE rescored ones.

    An incremental job counts a submission on an unchanged board as 1/CARRIED_COST of one:
    its row is only copied, and each batch has a fixed cost of its own (its transactions,
    queries, dispatch), so a 50-example update is not 50 batches of mostly copies.
    """
    size = current_app.config["RESCORE_BATCH_SIZE"] * CARRIED_COST
    changed = changed_boards(job.gold_version) if job.params.get("incremental", True) else None
    rows = db.session.execute(select(Submission.id, Submission.track, Submission.split)
                              .order_by(Submission.id)).all()
    chunks: list[list[int]] = []
    cost = size
    for ident, track, split in rows:
        if cost >= size:  # a batch ends once full (the last row may overfill it a little)
            chunks.append([])
            cost = 0
        chunks[-1].append(ident)
        cost += CARRIED_COST if changed is None or (track, split) in changed else 1
    for seq, chunk in enumerate(chunks):
        db.session.add(JobBatch(job_id=job.id, seq=seq, first_id=chunk[0], last_id=chunk[-1],
                                size=len(chunk)))
    job.total, job.done = len(rows), 0


def start_regeneration(params: dict[str, Any], actor: User | None, total: int = 1) -> Job:
    """Queue a baseline regeneration of TOTAL progress steps (committed; not yet dispatched)."""
    busy = unfinished(JobKind.REGENERATE)
    if busy:
        raise JobError(f"regeneration job {busy[0].id} is still {busy[0].status}")
    job = Job(kind=JobKind.REGENERATE.value, params=params, total=max(1, total),
              actor=actor.username if actor else audit.SYSTEM_ACTOR)
    db.session.add(job)
    db.session.flush()
    audit.record_event("baselines_regenerate", "job", job.id, actor,
                       f"regeneration job {job.id}: {params}")
    db.session.commit()
    return job


# --- dispatching -----------------------------------------------------------------------------


def due_steps(job: Job, now: datetime) -> list[tuple[str, int]]:
    """The steps of a job to dispatch now: unleased or expired, leased again (not committed)."""
    if job.kind == JobKind.REGENERATE.value:
        if job.leased_until is None or job.leased_until < now:
            job.leased_until = lease_end(now)
            return [("regenerate", job.id)]
        return []
    pending = [b for b in job.batches if not b.done]
    steps = []
    for batch in pending:
        if batch.leased_until is None or batch.leased_until < now:
            batch.leased_until = lease_end(now)
            steps.append(("batch", batch.id))
    if not pending and (job.leased_until is None or job.leased_until < now):
        job.leased_until = lease_end(now)
        steps.append(("finish", job.id))
    return steps


def sweep(dispatch: Dispatcher, job_ids: Sequence[int] | None = None) -> int:
    """Dispatch every due step of unfinished jobs (all, or those named); the count sent.

    Leases are committed before the messages go out, so two sweeps at once send each
    step once; a message that is lost anyway is sent again when its lease passes.
    """
    now = utcnow()
    query = select(Job).where(Job.status.in_(UNFINISHED)).order_by(Job.id)
    if job_ids is not None:
        query = query.where(Job.id.in_(job_ids))
    steps = [step for job in db.session.scalars(query.with_for_update(skip_locked=True))
             for step in due_steps(job, now)]
    db.session.commit()
    for kind, ident in steps:
        dispatch(kind, ident)
    return len(steps)


# --- running ---------------------------------------------------------------------------------


def _start(job: Job) -> None:
    if job.status == JobStatus.QUEUED.value:
        job.status, job.started_at = JobStatus.RUNNING.value, utcnow()


def score_values(submission_id: int, version_id: int, result: ScoreResult) -> dict[str, Any]:
    """A score row's column values from a benchmark result, for insert_scores."""
    return {"submission_id": submission_id, "gold_version_id": version_id,
            **score_columns(result)}


def insert_scores(rows: list[dict[str, Any]]) -> None:
    """Insert score rows, skipping those a concurrent run of the same step wrote first."""
    if not rows:
        return
    # Parameters apart (executemany, "insertmanyvalues"): the statement compiles once and is
    # cached, where a multi-row VALUES compiles again for every batch (~0.6 ms a row).
    db.session.execute(upsert_insert(Score).on_conflict_do_nothing(
        index_elements=["submission_id", "gold_version_id"]), rows)


def unscored(version: GoldVersion, first_id: int | None = None,
             last_id: int | None = None) -> list[Submission]:
    """Stored submissions (in an id range) without a score for the version, by id."""
    scored = exists().where(Score.submission_id == Submission.id,
                            Score.gold_version_id == version.id)
    query = select(Submission).where(~scored).order_by(Submission.id)
    if first_id is not None and last_id is not None:
        query = query.where(Submission.id.between(first_id, last_id))
    return list(db.session.scalars(query))


#: (version gold, donor gold) → boards whose examples are identical in both, per process.
_unchanged: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}


def unchanged_boards(version: GoldVersion, donor: GoldVersion) -> frozenset[tuple[str, str]]:
    """The (track, split) boards whose gold examples a version shares with another."""
    key = (version.gold_sha256, donor.gold_sha256)
    if key not in _unchanged:
        new, old = versions.gold_of(version), versions.gold_of(donor)
        _unchanged[key] = frozenset(
            board for board, split in new.splits.items()
            if board in old.splits and old.splits[board].examples == split.examples)
    return _unchanged[key]


def carriable(version: GoldVersion, submissions: list[Submission]) -> tuple[int | None, set[int]]:
    """The parent's id and the submissions whose parent row carries over unchanged.

    Scores depend only on the gold examples of a board (and the file, the seed and the
    resamples), so on a board the version did not change the parent's row is exactly what
    a rescore gives.
    """
    parent = db.session.get(GoldVersion, version.parent_id) if version.parent_id else None
    if parent is None:
        return None, set()
    same = unchanged_boards(version, parent)
    eligible = [s.id for s in submissions if (s.track, s.split) in same]
    if not eligible:
        return parent.id, set()
    return parent.id, set(db.session.scalars(select(Score.submission_id).where(
        Score.gold_version_id == parent.id, Score.submission_id.in_(eligible))))


def copy_rows(version_id: int, parent_id: int, submission_ids: set[int]) -> None:
    """Copy parent-version score rows to a version: one INSERT … SELECT, nothing read."""
    if not submission_ids:
        return
    copied = ("submission_id", "track", "split", "n", "metrics", "ci", "counts",
              "primary_metric", "outcomes", "f1")
    source = select(*(getattr(Score, name) for name in copied),
                    literal(version_id, Integer), literal(utcnow(), DateTime)).where(
        Score.gold_version_id == parent_id, Score.submission_id.in_(submission_ids))
    db.session.execute(upsert_insert(Score).from_select(
        [*copied, "gold_version_id", "scored_at"], source).on_conflict_do_nothing(
        index_elements=["submission_id", "gold_version_id"]))


@dataclass
class Scored:
    """A batch's new score rows, and the stored predictions to write (Submission.predictions)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    #: {"id": submission id, "predictions": encoded} where the stored value differs.
    predictions: list[dict[str, Any]] = field(default_factory=list)
    #: How many rows came from the parent's outcomes (the others were read and scored).
    incremental: int = 0


def incremental_result(parent: GoldSplit, target: GoldSplit, submission: Submission,
                       outcomes: bytes, f1: bytes | None, stored: bytes) -> ScoreResult | None:
    """A submission's score from its parent row and stored predictions; None if they cannot
    give it (a row older than the lenient metrics or of another length, unknown inputs)."""
    try:
        predictions = incremental.decode_predictions(stored)
        f1_values = incremental.decode_f1(f1, len(parent)) if f1 is not None else None
    except (msgspec.DecodeError, zlib.error):
        log.warning("submission %s: stored predictions or F1 unreadable; scored in full",
                    submission.id)
        return None
    if f1_values is None and not target.is_identification:
        return None
    keys = versions.keys_named(predictions.keys_sha256, submission.track, submission.split,
                               parent, target)
    if keys is None:
        return None
    try:
        return incremental.rescore(
            parent, target, np.frombuffer(outcomes, dtype=np.uint8), predictions, keys,
            f1_values, resamples=current_app.config["BOOTSTRAP_RESAMPLES"])
    except ValueError:
        return None


def incremental_rows(version: GoldVersion, parent_id: int, submissions: list[Submission],
                     scored: Scored) -> list[Submission]:
    """Rescore from the parent's rows where possible (into scored); the rest, to read in full.

    One query reads the batch's parent rows with the stored predictions; only the examples
    the update changed or added are evaluated again (benchmark.incremental).
    """
    ids = [s.id for s in submissions]
    if not ids:
        return []
    found = {sid: (outcomes, f1, stored) for sid, outcomes, f1, stored in db.session.execute(
        select(Score.submission_id, Score.outcomes, Score.f1, Submission.predictions)
        .join(Submission, Submission.id == Score.submission_id)
        .where(Score.gold_version_id == parent_id, Score.submission_id.in_(ids),
               Submission.predictions.is_not(None))) if stored is not None}
    if not found:
        return submissions
    gold = versions.gold_of(version)
    parent_gold = versions.gold_of(db.session.get_one(GoldVersion, parent_id))
    rest = []
    for submission in submissions:
        board = (submission.track, submission.split)
        result = None
        if submission.id in found and board in gold.splits and board in parent_gold.splits:
            result = incremental_result(parent_gold.splits[board], gold.splits[board],
                                        submission, *found[submission.id])
        if result is None:
            rest.append(submission)
        else:
            scored.rows.append(score_values(submission.id, version.id, result))
            scored.incremental += 1
    return rest


def full_rows(version: GoldVersion, submissions: list[Submission], scored: Scored) -> None:
    """Read and score stored files (into scored), refreshing their stored predictions.

    The stored predictions are compared with the file's parse and written where they differ
    (absent on old rows; or the parser changed, which is when a full rescore is run), so an
    incremental rescore after this one reads what this one scored.
    """
    if not submissions:
        return
    gold = versions.gold_of(version)
    uploaded = versions.uploaded_under(submissions)
    files = blobs.get_many(s.file_sha256 for s in submissions)  # one round trip, not one a file
    have: dict[int, bytes | None] = dict(db.session.execute(
        select(Submission.id, Submission.predictions).where(
            Submission.id.in_([s.id for s in submissions]))).all())
    for s in submissions:
        predictions, result = versions.read_and_score(
            s, gold.get(s.track, s.split), uploaded.get(s.id),
            blobs.decompress(files[s.file_sha256]) if s.file_sha256 in files else None)
        scored.rows.append(score_values(s.id, version.id, result))
        blob = incremental.encode_predictions(predictions)
        if have.get(s.id) != blob:
            scored.predictions.append({"id": s.id, "predictions": blob})


def score_rows(version: GoldVersion, submissions: list[Submission],
               parent_id: int | None = None) -> Scored:
    """Score stored submissions against a version (DATA_ERRORS when one cannot be).

    With a parent version: incrementally from its rows where they allow; the others (and
    all of them without a parent) are read from their files and scored in full.
    """
    scored = Scored()
    rest = (incremental_rows(version, parent_id, submissions, scored) if parent_id is not None
            else submissions)
    full_rows(version, rest, scored)
    if submissions:
        log.info("version %s: %d rows from the parent's outcomes, %d files read and scored",
                 version.name, scored.incremental, len(rest))
    return scored


def write_scored(scored: Scored) -> None:
    """Insert a batch's rows and write the stored predictions that changed (not committed)."""
    insert_scores(scored.rows)
    if scored.predictions:
        # ORM bulk UPDATE by primary key: one executemany.
        db.session.execute(update(Submission), scored.predictions)


def rescore_into(version: GoldVersion, submissions: list[Submission], *,
                 incremental: bool = True) -> None:
    """Add the version's scores of stored submissions (not committed).

    Incremental: rows on boards the update did not touch are carried over from the parent;
    on the changed boards only the examples the update changed are evaluated again (from
    the parent's outcomes and the stored predictions). Full: every file is read and scored.
    """
    parent_id, carried = carriable(version, submissions) if incremental else (None, set())
    scored = score_rows(version, [s for s in submissions if s.id not in carried], parent_id)
    if parent_id is not None:
        copy_rows(version.id, parent_id, carried)
    write_scored(scored)


def run_batch(batch_id: int) -> bool:
    """Score one batch and mark it done in the same transaction; False if nothing to do."""
    write_transaction()
    batch = db.session.get(JobBatch, batch_id)
    if batch is None or batch.done or batch.job.status not in UNFINISHED:
        db.session.rollback()
        return False
    job = batch.job
    if batch.attempts >= MAX_ATTEMPTS:
        fail(job.id, f"batch {batch.seq} failed {batch.attempts} times; see the worker log")
        return False
    _start(job)
    batch.attempts += 1
    batch.leased_until = lease_end()
    db.session.commit()
    version = job.gold_version
    if version is None:
        fail(job.id, "the job names no gold version")
        return False
    version_id, first_id, last_id = version.id, batch.first_id, batch.last_id
    db.session.rollback()
    try:
        version = db.session.get_one(GoldVersion, version_id)
        pending = unscored(version, first_id, last_id)
        parent_id, carried = (carriable(version, pending)
                              if job.params.get("incremental", True) else (None, set()))
        scored = score_rows(version, [s for s in pending if s.id not in carried], parent_id)
    except DATA_ERRORS as exc:
        fail(job.id, f"submission file in batch {batch.seq} cannot be scored: "
                     f"{type(exc).__name__}: {exc}")
        return False
    # Scoring reads outside any write lock; the writes take it (SQLite: BEGIN IMMEDIATE).
    write_transaction()
    if parent_id is not None:
        copy_rows(version_id, parent_id, carried)
    write_scored(scored)
    marked = db.session.execute(update(JobBatch).where(
        JobBatch.id == batch_id, JobBatch.done.is_(False)).values(
        done=True, finished_at=utcnow()))
    if getattr(marked, "rowcount", 0):
        db.session.execute(update(Job).where(Job.id == job.id).values(
            done=Job.done + batch.size))
    db.session.commit()
    return True


def write_transaction() -> None:
    """End the session's transaction and open one that holds SQLite's write lock at once.

    A deferred SQLite transaction that read before another connection wrote cannot write
    (SQLITE_BUSY at once, no waiting); PostgreSQL needs nothing here.
    """
    db.session.commit()
    if db.session.get_bind().dialect.name == "sqlite":
        db.session.connection(execution_options={"sqlite_immediate": True})


def pending_batches(job_id: int) -> int:
    """Batches of a job not yet done."""
    return db.session.scalar(select(func.count(JobBatch.id)).where(
        JobBatch.job_id == job_id, JobBatch.done.is_(False))) or 0


def finish(job_id: int) -> bool:
    """Switch to the job's version once every batch is done; False if not (yet) due.

    One transaction under the upload lock: score late uploads, flip is_active, finish
    the job. A second call finds the job done and does nothing.
    """
    if pending_batches(job_id):
        db.session.rollback()
        return False
    begin_locked()  # SQLite: the write lock keeps uploads out until the flip commits
    versions.lock_versions(shared=False)
    job = db.session.get_one(Job, job_id)
    db.session.refresh(job)
    version = job.gold_version
    if job.status not in UNFINISHED or version is None:
        db.session.rollback()
        return False
    _start(job)
    try:
        rescore_into(version, unscored(version),
                     incremental=bool(job.params.get("incremental", True)))
    except DATA_ERRORS as exc:
        db.session.rollback()
        fail(job_id, f"a late upload cannot be scored: {type(exc).__name__}: {exc}")
        return False
    previous = gold_store.active_version()
    previous.is_active = False
    db.session.flush()  # at most one active row at any time
    version.is_active = True
    job.status, job.finished_at, job.error = JobStatus.DONE.value, utcnow(), None
    job.done = job.total = db.session.scalar(select(func.count(Submission.id))) or 0
    audit.record_event("gold_activated", "gold_version", version.id, None,
                       f"{version.name} replaces {previous.name} (job {job.id})")
    db.session.commit()
    return True


def run_regeneration(job_id: int, run: Callable[[dict[str, Any], Callable[[str], None]], None]
                     ) -> bool:
    """Run a regeneration job once; `run` does the work and renews the lease on progress."""
    job = db.session.get(Job, job_id)
    if job is None or job.status not in UNFINISHED:
        db.session.rollback()
        return False
    _start(job)
    job.leased_until = lease_end()
    params, total = dict(job.params), job.total
    done = 0
    db.session.commit()

    def heartbeat(line: str) -> None:
        # each line is one step: the page shows done/total and the step being run
        nonlocal done
        log.info("regeneration job %s: %s", job_id, line)
        done += 1
        db.session.execute(update(Job).where(Job.id == job_id).values(
            leased_until=lease_end(), done=min(done - 1, max(0, total - 1)),
            params={**params, "step": line}))
        db.session.commit()

    run(params, heartbeat)
    job = db.session.get_one(Job, job_id)
    job.status, job.finished_at, job.done = JobStatus.DONE.value, utcnow(), job.total
    db.session.commit()
    return True


def fail(job_id: int, message: str) -> None:
    """Record a failed job in a fresh transaction; the previous version stays active."""
    db.session.rollback()
    job = db.session.get_one(Job, job_id)
    if job.status in UNFINISHED:
        _mark_failed(job, message)
        db.session.commit()


def _mark_failed(job: Job, message: str) -> None:
    job.status, job.finished_at, job.error = JobStatus.FAILED.value, utcnow(), message[:2000]
    audit.record_event(f"{job.kind}_failed", "job", job.id, None, f"job {job.id}: {job.error}")


def run_inline(job_id: int, progress: Callable[[int, int], None] | None = None) -> Job:
    """Run every remaining step of a job in this process (the CLI, eager mode)."""
    job = db.session.get_one(Job, job_id)
    batch_ids = [b.id for b in job.batches if not b.done]
    for batch_id in batch_ids:
        run_batch(batch_id)
        job = db.session.get_one(Job, job_id)
        status, done, total = job.status, job.done, job.total
        db.session.rollback()  # end the read: SQLite cannot upgrade a stale snapshot later
        if status not in UNFINISHED:
            return db.session.get_one(Job, job_id)
        if progress:
            progress(done, total)
    finish(job_id)
    return db.session.get_one(Job, job_id)
