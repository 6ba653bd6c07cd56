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
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import func, select, update

from benchmark import SPLITS, TRACKS

from ..extensions import db
from ..models import (
    UNFINISHED_JOB_STATES,
    GoldVersion,
    Job,
    JobBatch,
    JobKind,
    JobStatus,
    Submission,
    User,
    utcnow,
)
from . import audit, evaluation, gold_store, input_releases, ranking, versions
from .errors import ServiceError
from .quotas import begin_locked

log = logging.getLogger(__name__)
#: A batch that failed this often (not a worker death: an error) fails its job.
MAX_ATTEMPTS = 5
#: Sends one step ("batch", "finish" or "regenerate", and its id) to the job workers.
Dispatcher = Callable[[str, int], None]


class JobError(ServiceError):
    """A job cannot be started: one of its kind is still unfinished, or it is not wanted."""

    status = 409
    code = "job_busy"


def lease_end(now: datetime | None = None) -> datetime:
    """Until when a step dispatched or started now is held."""
    return (now or utcnow()) + timedelta(seconds=current_app.config["JOB_LEASE_SECONDS"])


def unfinished(kind: JobKind) -> list[Job]:
    """Jobs of a kind that are queued or running, oldest first."""
    return list(db.session.scalars(select(Job).where(
        Job.kind == kind.value, Job.status.in_(UNFINISHED_JOB_STATES)).order_by(Job.id)))


# --- starting ------------------------------------------------------------------------------


def start_activation(version: GoldVersion, actor: User | None, *,
                     restart: bool = False, incremental: bool = True,
                     release_inputs_on: date | None = None) -> Job:
    """Plan a rescore job that will activate the version (committed; not yet dispatched).

    Incremental (the default) carries over the parent's scores on boards the version did
    not change; full reads and scores every stored file again. The inputs of the test
    examples the version adds are released when it becomes active, or on
    `release_inputs_on` when that is later (services/input_releases.py).
    """
    if version.is_active:
        raise JobError(f"{version.name!r} is already the active version")
    params: dict[str, Any] = {"incremental": incremental}
    if release_inputs_on is not None:
        params["release_inputs_on"] = release_inputs_on.isoformat()
    job = _start_rescore(version, actor, params, restart=restart)
    audit.record_event("gold_activate", "gold_version", version.id, actor,
                       f"rescore job {job.id} started for {version.name}")
    db.session.commit()
    return job


def start_rescore(version: GoldVersion, actor: User | None, *,
                  incremental: bool = True) -> Job:
    """Plan a rescore job that scores every stored submission into a version again and
    replaces its rows, leaving the active version as it is (committed; not dispatched).

    Only a published version (the active one, or one that has been active) can be rescored
    in place: a built version is activated instead. Incremental (the default) carries rows
    over from the parent version where it allows; full reads every file again, which is
    what a parser or scorer change needs.
    """
    if versions.version_named(version.name) is None:  # the catalog's published rule
        raise JobError(f"{version.name!r} has never been active: activate it "
                       f"(`gold activate {version.name}`) instead of rescoring it")
    job = _start_rescore(version, actor, {"incremental": incremental, "replace": True,
                                          "activate": False})
    audit.record_event("gold_rescore", "gold_version", version.id, actor,
                       f"rescore job {job.id} started for {version.name} (in place)")
    db.session.commit()
    return job


def _start_rescore(version: GoldVersion, actor: User | None, params: dict[str, Any], *,
                   restart: bool = False) -> Job:
    """A planned rescore job into a version (flushed, not committed); JobError when one runs."""
    busy = unfinished(JobKind.RESCORE)
    if busy and not restart:
        job = busy[0]
        raise JobError(
            f"rescore job {job.id} ({job.gold_version.name if job.gold_version else '?'}) is "
            f"still {job.status}; it resumes by itself while a job worker runs "
            "(`flask --app app jobs worker`); abandon it with --restart")
    for job in busy:
        _mark_failed(job, "abandoned for a new activation")
    job = Job(kind=JobKind.RESCORE.value, gold_version=version, params=params,
              actor=actor.username if actor else audit.SYSTEM_ACTOR)
    db.session.add(job)
    db.session.flush()
    plan_batches(job)
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
    query = select(Job).where(Job.status.in_(UNFINISHED_JOB_STATES)).order_by(Job.id)
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


def unscored(version: GoldVersion, first_id: int | None = None,
             last_id: int | None = None) -> list[Submission]:
    """Stored submissions (in an id range) without a score for the version, by id."""
    return _in_range(select(Submission).where(evaluation.unscored_condition(version)),
                     first_id, last_id)


def batch_sources(job: Job, version: GoldVersion, first_id: int | None = None,
                  last_id: int | None = None) -> list[Submission]:
    """The stored submissions (in an id range) a job scores: those without a score for the
    version, or every one when the job replaces the version's rows (an in-place rescore)."""
    if not job.params.get("replace", False):
        return unscored(version, first_id, last_id)
    return _in_range(select(Submission), first_id, last_id)


def _in_range(query: Any, first_id: int | None, last_id: int | None) -> list[Submission]:
    if first_id is not None and last_id is not None:
        query = query.where(Submission.id.between(first_id, last_id))
    return list(db.session.scalars(query.order_by(Submission.id)))


def score_and_store(job: Job, version: GoldVersion, sources: list[Submission]) -> None:
    """Score stored submissions into the job's version and write the rows (not committed)."""
    evaluation.store(evaluation.score_into(version, sources, incremental=_incremental(job)),
                     sources, replace=bool(job.params.get("replace", False)))


def _incremental(job: Job) -> bool:
    return bool(job.params.get("incremental", True))


def run_batch(batch_id: int) -> bool:
    """Score one batch and mark it done in the same transaction; False if nothing to do."""
    write_transaction()
    batch = db.session.get(JobBatch, batch_id)
    if batch is None or batch.done or batch.job.status not in UNFINISHED_JOB_STATES:
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
        pending = batch_sources(job, version, first_id, last_id)
        evaluated = evaluation.score_into(version, pending, incremental=_incremental(job))
    except evaluation.DATA_ERRORS as exc:
        fail(job.id, f"submission file in batch {batch.seq} cannot be scored: "
                     f"{type(exc).__name__}: {exc}")
        return False
    # Scoring reads outside any write lock; the writes take it (SQLite: BEGIN IMMEDIATE).
    write_transaction()
    evaluation.store(evaluated, pending, replace=bool(job.params.get("replace", False)))
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
    evaluation.lock_versions(shared=False)
    job = db.session.get_one(Job, job_id)
    db.session.refresh(job)
    version = job.gold_version
    if job.status not in UNFINISHED_JOB_STATES or version is None:
        db.session.rollback()
        return False
    _start(job)
    try:
        # Uploads made since the batches were planned are scored already (upload_scores);
        # this catches any submission still without a row.
        score_and_store(job, version, batch_sources(job, version) if not
                        job.params.get("replace", False) else [])
    except evaluation.DATA_ERRORS as exc:
        db.session.rollback()
        fail(job_id, f"a late upload cannot be scored: {type(exc).__name__}: {exc}")
        return False
    if job.params.get("activate", True):
        previous = gold_store.active_version()
        previous.is_active = False
        db.session.flush()  # at most one active row at any time
        version.is_active = True
        audit.record_event("gold_activated", "gold_version", version.id, None,
                           f"{version.name} replaces {previous.name} (job {job.id})")
        held = job.params.get("release_inputs_on")
        release = input_releases.make_release(
            version, date.fromisoformat(held) if held else None)
        if release is not None:
            audit.record_event("inputs_release", "input_release", release.id, None,
                               f"input release {release.name} of {version.name}, public "
                               f"from {release.release_on.isoformat()}")
    else:
        audit.record_event("gold_rescored", "gold_version", version.id, None,
                           f"{version.name} rescored in place (job {job.id})")
    job.status, job.finished_at, job.error = JobStatus.DONE.value, utcnow(), None
    job.done = job.total = db.session.scalar(select(func.count(Submission.id))) or 0
    db.session.commit()
    store_rank_pairs(version.id)
    return True


def store_rank_pairs(version_id: int) -> None:
    """Test and store the rank-group decisions of a version's boards, whose rows are new
    since the switch, so that no first view of them tests pairs. A failure is logged: a page
    then tests the pairs it needs (and stores them)."""
    try:
        resamples = ranking.resamples_setting()
        for track in TRACKS:
            for split in SPLITS:
                ranking.fill_pairs(track, split, version_id, resamples)
    except Exception:
        db.session.rollback()
        log.exception("storing the rank-group decisions of gold version %s", version_id)


def run_regeneration(job_id: int, run: Callable[[dict[str, Any], Callable[[str], None]], None]
                     ) -> bool:
    """Run a regeneration job once; `run` does the work and renews the lease on progress."""
    job = db.session.get(Job, job_id)
    if job is None or job.status not in UNFINISHED_JOB_STATES:
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

    try:
        run(params, heartbeat)
    except ServiceError as exc:  # a file or run the organizers must fix: the job fails
        fail(job_id, exc.message)
        return False
    job = db.session.get_one(Job, job_id)
    job.status, job.finished_at, job.done = JobStatus.DONE.value, utcnow(), job.total
    db.session.commit()
    return True


def fail(job_id: int, message: str) -> None:
    """Record a failed job in a fresh transaction; the previous version stays active."""
    db.session.rollback()
    job = db.session.get_one(Job, job_id)
    if job.status in UNFINISHED_JOB_STATES:
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
        if status not in UNFINISHED_JOB_STATES:
            return db.session.get_one(Job, job_id)
        if progress:
            progress(done, total)
    finish(job_id)
    return db.session.get_one(Job, job_id)


def recent_jobs(limit: int) -> Sequence[Job]:
    """The latest jobs, newest first (the organizers' jobs page)."""
    return db.session.scalars(select(Job).order_by(Job.id.desc()).limit(limit)).all()
