"""Celery, following Flask's background-task pattern: every task runs in an app context.

The broker is SITUATEDQA_BROKER_URL (Redis when scaling out). Unset, the embedded default
is Kombu's SQLAlchemy transport on an SQLite file in the instance folder, so the quick
start needs no extra server; `scripts/serve.sh` starts one job worker beside gunicorn.
Messages are only wake-ups: job progress lives in the database (services/jobs.py), and
each worker's sweep dispatches again any step whose lease has passed, whichever broker
loses what.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from celery import Celery, Task
from celery.signals import worker_process_init, worker_ready, worker_shutting_down
from flask import Flask, current_app
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Transport as SqlaTransport

from .extensions import db
from .models import JobBatch
from .services import baselines, gold_store, jobs

log = logging.getLogger(__name__)
TASK_NAMES = {"batch": "situatedqa.run_batch", "finish": "situatedqa.finish",
              "regenerate": "situatedqa.regenerate"}


class EmbeddedTransport(SqlaTransport):
    """Kombu's SQLAlchemy transport polled every 0.1 s, not 1 s: the SQLite file is local,
    and a worker would otherwise idle up to a second between two batches."""

    polling_interval = 0.1


EMBEDDED_SCHEME = "sqlaembedded"
TRANSPORT_ALIASES.setdefault(EMBEDDED_SCHEME, f"{__name__}:EmbeddedTransport")


def broker_url(app: Flask) -> str:
    """The configured broker, or the embedded SQLite one in the instance folder."""
    configured = app.config.get("BROKER_URL")
    if configured:
        return str(configured)
    return f"{EMBEDDED_SCHEME}+sqlite:///{Path(app.instance_path) / 'jobs-broker.sqlite'}"


def celery_init_app(app: Flask) -> Celery:
    """A Celery app whose tasks run inside this Flask app's context (app.extensions)."""
    class FlaskTask(Task):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            with app.app_context():
                return self.run(*args, **kwargs)

    celery = Celery(app.name, task_cls=FlaskTask)
    lease = int(app.config["JOB_LEASE_SECONDS"])
    celery.conf.update(
        broker_url=broker_url(app), task_ignore_result=True,
        # A task is acknowledged only when it has run; a killed worker's task is redelivered.
        task_acks_late=True, task_reject_on_worker_lost=True,
        # Synchronous transports (the embedded broker) ack between 2-second drains: with a
        # few messages reserved ahead, a process never idles waiting for that ack.
        worker_prefetch_multiplier=4,
        task_always_eager=bool(app.config["JOBS_EAGER"]), task_eager_propagates=True,
        # Redis redelivers a message unacknowledged this long (a worker killed mid-task);
        # the SQLAlchemy transport takes no such option (the sweep redelivers there).
        broker_transport_options=({"visibility_timeout": max(lease * 4, 60)}
                                  if broker_url(app).startswith("redis") else {}),
        broker_connection_retry_on_startup=True, worker_hijack_root_logger=False,
        task_default_queue="situatedqa")
    celery.task(name=TASK_NAMES["batch"])(_run_batch)
    celery.task(name=TASK_NAMES["finish"])(_finish)
    celery.task(name=TASK_NAMES["regenerate"])(_regenerate)
    app.extensions["celery"] = celery
    return celery


def _run_batch(batch_id: int) -> None:
    """Score one batch, then try to finish its job."""
    jobs.run_batch(batch_id)
    batch = db.session.get(JobBatch, batch_id)
    if batch is not None:
        jobs.finish(batch.job_id)  # a no-op while other batches are pending


def _finish(job_id: int) -> None:
    """Switch to the job's version when every batch is done."""
    jobs.finish(job_id)


def _regenerate(job_id: int) -> None:
    """Regenerate the baselines as the job's parameters say."""
    jobs.run_regeneration(job_id, baselines.run_job_params)


def dispatch(kind: str, ident: int) -> None:
    """Send one step to the workers; a broker that is down leaves it to the next sweep."""
    task = current_app.extensions["celery"].tasks[TASK_NAMES[kind]]
    try:
        task.apply_async(args=(ident,))
    except Exception:  # broker unreachable: the lease passes and a sweep sends it again
        log.warning("could not send %s %s to the broker; a job worker's sweep will resend it",
                    kind, ident, exc_info=True)


def start(job_id: int) -> None:
    """Dispatch every step of a newly started job."""
    jobs.sweep(dispatch, [job_id])


def sweep_forever(app: Flask, stop: threading.Event) -> None:
    """Every JOB_SWEEP_SECONDS, resend the steps whose lease has passed."""
    interval = float(app.config["JOB_SWEEP_SECONDS"])
    while not stop.is_set():
        try:
            with app.app_context():
                sent = jobs.sweep(dispatch)
                if sent:
                    log.info("sweep: %d job step(s) dispatched", sent)
        except Exception:
            log.exception("job sweep failed; retrying")
        stop.wait(interval)


def run_worker(app: Flask, concurrency: int, loglevel: str) -> None:
    """Run one Celery worker for this app until it is stopped; its sweep runs beside it."""
    celery: Celery = app.extensions["celery"]
    stop = threading.Event()

    @worker_process_init.connect(weak=False)
    def _fresh_connections(**_: Any) -> None:
        # A forked child must not share the parent's database connections.
        with app.app_context():
            db.engine.dispose(close=False)

    @worker_ready.connect(weak=False)
    def _start_sweeping(**_: Any) -> None:
        threading.Thread(target=sweep_forever, args=(app, stop), name="job-sweep",
                         daemon=True).start()

    @worker_shutting_down.connect(weak=False)
    def _stop_sweeping(**_: Any) -> None:
        stop.set()

    # The gold is parsed here, before the pool forks: its processes share it, so a rescore's
    # first batches do not each parse the active version (~1 s) while the job waits.
    with app.app_context():
        try:
            if gold_store.warm_up() is not None:
                log.info("no active gold version yet: the worker parses it on first use")
        finally:
            db.session.remove()
            db.engine.dispose()
    celery.worker_main(["worker", f"--loglevel={loglevel}", f"--concurrency={concurrency}",
                        "--pool=prefork", f"--hostname=situatedqa-{os.getpid()}@%h",
                        "--without-gossip", "--without-mingle", "--queues=situatedqa"])
