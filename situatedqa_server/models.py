"""The server's tables as typed SQLAlchemy 2 models."""

from __future__ import annotations

import enum
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .extensions import Base


def utcnow() -> datetime:
    """The current UTC time, naive, as every timestamp column stores it."""
    return datetime.now(UTC).replace(tzinfo=None)


class ModelType(enum.StrEnum):
    """How a submitted system answers: with retrieval, closed-book, or otherwise."""

    RETRIEVAL = "retrieval"
    CLOSED_BOOK = "closed-book"
    OTHER = "other"


class Visibility(enum.StrEnum):
    """Whether the owner has published a submission on the leaderboard."""

    PRIVATE = "private"
    PUBLIC = "public"


class Team(Base):
    """A group of users; quotas count per team."""

    __tablename__ = "team"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    members: Mapped[list[User]] = relationship(back_populates="team")


class User(Base):
    """An account; its password is stored only as an argon2id hash."""

    __tablename__ = "user_account"
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(40), unique=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"), index=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    #: An organizer gave the account the annotator role: it answers campaign tasks.
    is_annotator: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    session_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    team: Mapped[Team] = relationship(back_populates="members")


class ApiToken(Base):
    """A bearer token: only its SHA-256 is kept; revocable and expiring."""

    __tablename__ = "api_token"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    user: Mapped[User] = relationship()


class GoldVersion(Base):
    """One version of the gold answers; leaderboards read the scores of the active one."""

    __tablename__ = "gold_version"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    as_of: Mapped[date] = mapped_column(Date)
    fingerprint: Mapped[str] = mapped_column(String(64))
    changelog: Mapped[str] = mapped_column(Text, default="")
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("gold_version.id"))
    is_active: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The canonical gold, named by its content: hosts load it from the database, never from
    # a folder, so a version cannot outlive its database or be missing on another host.
    gold_sha256: Mapped[str] = mapped_column(ForeignKey("stored_file.sha256"))
    #: Every change against the parent as recorded when the version was built (JSON list).
    #: Deferred: every upload reads the active version's row, never its change list.
    changes: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list, deferred=True)


class InputRelease(Base):
    """The inputs of the test examples a gold version added (key, question, context; never
    an answer), published under a name from a date (services/input_releases.py).

    Made when the version becomes active; published from `release_on` (the activation's
    date, or the later date the organizer held it back to). Until then its examples are
    unknown keys everywhere. A submission records the releases it answered
    (SubmissionRelease), so each release's examples can be scored as a window of their own.
    """

    __tablename__ = "input_release"
    id: Mapped[int] = mapped_column(primary_key=True)
    #: A slug of the version's name (lower case, digits and dashes): `?release=NAME`.
    name: Mapped[str] = mapped_column(String(80), unique=True)
    gold_version_id: Mapped[int] = mapped_column(ForeignKey("gold_version.id"), unique=True)
    #: The UTC date from which the inputs are public.
    release_on: Mapped[date] = mapped_column(Date, index=True)
    #: Track → the keys of its test examples in the release, in the version's gold order.
    keys: Mapped[dict[str, list[str]]] = mapped_column(JSON)
    #: Track → {"total": n, partition: n, …} of those examples.
    counts: Mapped[dict[str, dict[str, int]]] = mapped_column(JSON)
    #: Track → SHA-256 of the release's blank file of that track (`?release=NAME`).
    blank_sha256: Mapped[dict[str, str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    gold_version: Mapped[GoldVersion] = relationship()


class StoredFile(Base):
    """Bytes named by their SHA-256, zlib-compressed: uploads, gold versions, baseline files.

    Written in the same transaction as the row that names them, so neither can exist
    without the other; the same content is stored once.
    """

    __tablename__ = "stored_file"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Submission(Base):
    """An accepted, scored prediction file and what its owner says about the method."""

    __tablename__ = "submission"
    __table_args__ = (
        Index("ix_submission_track_split", "track", "split"),
        Index("ix_submission_predictions", "track", "split", "predictions_sha256"),
        # The same predictions twice from one team on one board: 409 (live rows only).
        Index("uq_submission_team_predictions", "team_id", "track", "split",
              "predictions_sha256", unique=True, sqlite_where=text("deleted_at IS NULL"),
              postgresql_where=text("deleted_at IS NULL")),
        # A submission whose scores the Ladder withheld can never be public.
        CheckConstraint("shown_submission_id IS NULL OR visibility = 'private'",
                        name="withheld_private"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"), index=True)
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    file_sha256: Mapped[str] = mapped_column(ForeignKey("stored_file.sha256"), index=True)
    # The client's filename is shown to its owner only; storage uses file_sha256.
    filename: Mapped[str] = mapped_column(String(255))
    format: Mapped[str] = mapped_column(String(16))
    method_name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    paper_url: Mapped[str | None] = mapped_column(String(500))
    code_url: Mapped[str | None] = mapped_column(String(500))
    model_type: Mapped[str] = mapped_column(String(16), default=ModelType.OTHER.value)
    fine_tuned: Mapped[bool] = mapped_column(Boolean, default=False)
    knowledge_date: Mapped[str | None] = mapped_column(String(10))
    #: The date the model's knowledge stops, as declared (a past date): the figures after
    #: it (benchmark.cutoff). Not knowledge_date, the date of a retrieval corpus.
    knowledge_cutoff: Mapped[date | None] = mapped_column(Date)
    parameter_count: Mapped[int | None] = mapped_column(BigInteger)
    visibility: Mapped[str] = mapped_column(String(8), default=Visibility.PRIVATE.value)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    hidden_reason: Mapped[str | None] = mapped_column(Text)
    flag_reason: Mapped[str | None] = mapped_column(Text)
    is_baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    baseline_runner: Mapped[str | None] = mapped_column(String(200))
    baseline_settings: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    published_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Soft delete: the row stays so a deleted submission still counts against the quota.
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)
    #: SHA-256 of the canonical normalized predictions (services/duplicates.py); None for
    #: rows stored before it was recorded.
    predictions_sha256: Mapped[str | None] = mapped_column(String(64))
    #: The Ladder's decision (SITUATEDQA_TEST_FEEDBACK=ladder): None when this submission's
    #: own scores are released, else the team's released submission whose scores stand in.
    shown_submission_id: Mapped[int | None] = mapped_column(ForeignKey("submission.id"))
    #: Another team's earlier submission with the same predictions (for moderators).
    duplicate_of_id: Mapped[int | None] = mapped_column(ForeignKey("submission.id"))
    #: The predictions as parsed (benchmark.incremental.encode_predictions: zlib'd msgpack,
    #: keys left out), so a rescore re-evaluates changed examples without reading the file;
    #: None for rows stored before it was recorded (rescored in full, which fills it).
    #: Deferred: ~12 KB a row that only rescoring reads.
    predictions: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    #: A harness file's run (benchmark.harness_files.HarnessInfo: harness, version, task,
    #: model, scorer, filter, task hash); None for other files.
    harness: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: Its per-sample hashes by example key (lm-eval: doc, prompt, target). Deferred.
    harness_hashes: Mapped[dict[str, Any] | None] = mapped_column(JSON, deferred=True)
    #: The lm-eval filter the uploader chose (a file with several); reading the file again
    #: (a rescore) takes the same one.
    harness_filter: Mapped[str | None] = mapped_column(String(100))
    user: Mapped[User] = relationship()
    team: Mapped[Team] = relationship()
    scores: Mapped[list[Score]] = relationship(back_populates="submission")

    @property
    def is_public(self) -> bool:
        """Published by its owner."""
        return self.visibility == Visibility.PUBLIC.value

    @property
    def is_released(self) -> bool:
        """Its own scores are shown (the Ladder did not withhold them)."""
        return self.shown_submission_id is None


class SubmissionRelease(Base):
    """An input release a test submission answered (every one of its examples): the
    release's own inputs are always answered and are not recorded."""

    __tablename__ = "submission_release"
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), primary_key=True)
    input_release_id: Mapped[int] = mapped_column(ForeignKey("input_release.id"),
                                                  primary_key=True, index=True)


class Score(Base):
    """The result of one submission against one gold version."""

    __tablename__ = "score"
    __table_args__ = (
        UniqueConstraint("submission_id", "gold_version_id"),
        # Leaderboards filter on version, track and split and sort by the primary metric.
        Index("ix_score_board", "gold_version_id", "track", "split", "primary_metric"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id"))
    gold_version_id: Mapped[int] = mapped_column(ForeignKey("gold_version.id"))
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    n: Mapped[int] = mapped_column(Integer)
    primary_metric: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    #: The metrics again, as the database computes and stores them from `metrics` (jsonb on
    #: PostgreSQL), for boards sorted by a metric: a sort by a json value re-parses every
    #: row's text, one by a jsonb value reads it parsed. `metrics` stays json, which keeps
    #: the key order shown. Deferred: only the sort reads it, in SQL.
    sort_metrics: Mapped[dict[str, Any]] = mapped_column(
        JSON().with_variant(JSONB(), "postgresql"), Computed("metrics", persisted=True),
        deferred=True)
    ci: Mapped[dict[str, Any]] = mapped_column(JSON)
    counts: Mapped[dict[str, Any]] = mapped_column(JSON)
    # One uint8 outcome code per gold example (benchmark.ScoreResult.outcomes).
    outcomes: Mapped[bytes] = mapped_column(LargeBinary)
    #: Per-example token F1 of a QA score (benchmark.incremental.encode_f1: zlib'd float64,
    #: f1 then f1_any unless equal), which the outcome codes lack; None on identification
    #: tracks and on rows stored before it was recorded. Deferred: only rescoring reads it.
    f1: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    #: One uint8 situated error class per gold example of a QA score (benchmark.situations.
    #: ERROR_CLASSES' positions), which a paired comparison and an incremental rescore read;
    #: None on identification tracks and on rows stored before they were recorded. Deferred,
    #: and never shown per example on the test split.
    error_classes: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    #: The knowledge horizon of a dated track's score (benchmark.horizon.Horizon.to_json:
    #: year, CI, reason when not determined, the year-binned curve); its year is also the
    #: "horizon" metric, so boards sort by it.
    horizon: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    #: True while the error figures lack their CIs and the horizon its CI and test: an upload
    #: stores them without (most of their cost) and completes them after its response
    #: (evaluation.complete_errors; a read of the submission completes a row left so).
    errors_pending: Mapped[bool] = mapped_column(Boolean, default=False,
                                                 server_default=false())
    scored_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    submission: Mapped[Submission] = relationship(back_populates="scores")
    gold_version: Mapped[GoldVersion] = relationship()


class ReportedEntry(Base):
    """A number reported in the paper, shown in rank position without a CI."""

    __tablename__ = "reported_entry"
    __table_args__ = (Index("ix_reported_entry_board", "track", "split"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    method_name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(200))
    model_type: Mapped[str] = mapped_column(String(16), default=ModelType.OTHER.value)
    fine_tuned: Mapped[bool] = mapped_column(Boolean, default=False)
    paper_url: Mapped[str | None] = mapped_column(String(500))
    primary_metric: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class QuotaCounter(Base):
    """Accepted test submissions of a team on a track, per UTC day or in total ("total")."""

    __tablename__ = "quota_counter"
    __table_args__ = (UniqueConstraint("team_id", "track", "period"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"))
    track: Mapped[str] = mapped_column(String(16))
    period: Mapped[str] = mapped_column(String(10))
    used: Mapped[int] = mapped_column(Integer, default=0)


class RejectedUpload(Base):
    """Rejected uploads of a team per UTC day, capped separately from the quota."""

    __tablename__ = "rejected_upload"
    __table_args__ = (UniqueConstraint("team_id", "day"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"))
    day: Mapped[date] = mapped_column(Date)
    count: Mapped[int] = mapped_column(Integer, default=0)


class AuditLog(Base):
    """One organizer action or visibility change, readable by organizers."""

    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(primary_key=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    actor: Mapped[str] = mapped_column(String(80))
    action: Mapped[str] = mapped_column(String(40))
    target_type: Mapped[str] = mapped_column(String(40))
    target_id: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class JobStatus(enum.StrEnum):
    """Where a job is: waiting, working, finished or failed."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


#: The states of a job that is not finished yet (queued, or running).
UNFINISHED_JOB_STATES = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)


class JobKind(enum.StrEnum):
    """What a job does: rescore into a gold version and activate it, or regenerate baselines."""

    RESCORE = "rescore"
    REGENERATE = "regenerate"


class Job(Base):
    """A long job run by the job workers; its progress lives here, not in a process."""

    __tablename__ = "job"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), default=JobKind.RESCORE.value)
    gold_version_id: Mapped[int | None] = mapped_column(ForeignKey("gold_version.id"),
                                                        index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(8), default=JobStatus.QUEUED.value, index=True)
    actor: Mapped[str] = mapped_column(String(80))
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    #: Until when a worker holds the job's unbatched step (regeneration, the final switch).
    leased_until: Mapped[datetime | None] = mapped_column(DateTime)
    error: Mapped[str | None] = mapped_column(Text)
    gold_version: Mapped[GoldVersion | None] = relationship()
    batches: Mapped[list[JobBatch]] = relationship(back_populates="job",
                                                   order_by="JobBatch.seq")


class JobBatch(Base):
    """One idempotent slice of a job: the submissions with ids first_id..last_id."""

    __tablename__ = "job_batch"
    __table_args__ = (UniqueConstraint("job_id", "seq"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("job.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    first_id: Mapped[int] = mapped_column(Integer)
    last_id: Mapped[int] = mapped_column(Integer)
    size: Mapped[int] = mapped_column(Integer)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    #: A batch whose lease has passed unfinished is handed out again (its worker died).
    leased_until: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    job: Mapped[Job] = relationship(back_populates="batches")


class IdempotencyKey(Base):
    """The first response to an upload sent with an Idempotency-Key, replayed for 24 hours."""

    __tablename__ = "idempotency_key"
    __table_args__ = (UniqueConstraint("user_id", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"))
    key: Mapped[str] = mapped_column(String(200))
    #: SHA-256 of the request (form fields and file): the same key with another request is 422.
    request_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class Snapshot(Base):
    """A leaderboard frozen by an organizer: its rows are stored, never recomputed."""

    __tablename__ = "snapshot"
    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(80), unique=True)
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    title: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    gold_version_name: Mapped[str] = mapped_column(String(80))
    actor: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The frozen board (columns, entries, CIs, rank groups) and its SHA-256, for citation.
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    sha256: Mapped[str] = mapped_column(String(64))


class BoardStamp(Base):
    """A leaderboard's generation: bumped in the transaction of every change it shows.

    One row per (track, split); the row ("*", "*") counts changes to every board (a gold
    switch, a team rename). Board caches are keyed by both numbers (services/board_cache.py).
    """

    __tablename__ = "board_stamp"
    track: Mapped[str] = mapped_column(String(16), primary_key=True)
    split: Mapped[str] = mapped_column(String(8), primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class CampaignKind(enum.StrEnum):
    """What a campaign annotates: today's answers, new dates, or new locations."""

    REFRESH = "refresh"
    CONTEXTS = "contexts"
    LOCATIONS = "locations"


class TaskStatus(enum.StrEnum):
    """Where a task is: waiting for answers, accepted, adjudication, or adjudicated."""

    OPEN = "open"
    ACCEPTED = "accepted"
    ADJUDICATION = "adjudication"
    ADJUDICATED = "adjudicated"


class Campaign(Base):
    """An annotation campaign an organizer started: its tasks become a gold version."""

    __tablename__ = "campaign"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    #: The date the questions are asked as of (refresh: "what is the answer as of DATE?").
    as_of: Mapped[date] = mapped_column(Date)
    note: Mapped[str] = mapped_column(Text, default="")
    #: The gold version the campaign's tasks were built from, the version's parent.
    parent_version_id: Mapped[int] = mapped_column(ForeignKey("gold_version.id"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    #: The gold version built from the campaign (None until one is).
    gold_version_id: Mapped[int | None] = mapped_column(ForeignKey("gold_version.id"))
    tasks: Mapped[list[CampaignTask]] = relationship(back_populates="campaign",
                                                     order_by="CampaignTask.id")


class CampaignTask(Base):
    """One question in one context, answered blind by two annotators."""

    __tablename__ = "campaign_task"
    __table_args__ = (UniqueConstraint("campaign_id", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), index=True)
    #: The example's key: an existing one (refresh) or the new one's (contexts, locations).
    key: Mapped[str] = mapped_column(String(200))
    nq_id: Mapped[int] = mapped_column(BigInteger)
    question: Mapped[str] = mapped_column(Text)
    context: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    partitions: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: The last known answers and the date they are known as of (None: unknown).
    last_answers: Mapped[list[str]] = mapped_column(JSON, default=list)
    last_date: Mapped[str | None] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(16), default=TaskStatus.OPEN.value, index=True)
    #: The accepted (or adjudicated) response: kind, answers, evidence and date in effect.
    final_kind: Mapped[str | None] = mapped_column(String(20))
    final_answers: Mapped[list[str] | None] = mapped_column(JSON)
    final_evidence: Mapped[str | None] = mapped_column(String(500))
    final_date: Mapped[str | None] = mapped_column(String(10))
    adjudicator_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    campaign: Mapped[Campaign] = relationship(back_populates="tasks")
    annotations: Mapped[list[Annotation]] = relationship(back_populates="task",
                                                         order_by="Annotation.slot")


class Annotation(Base):
    """One annotator's blind response to a task (empty until submitted)."""

    __tablename__ = "annotation"
    __table_args__ = (UniqueConstraint("task_id", "slot"),
                      UniqueConstraint("task_id", "annotator_id"))
    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("campaign_task.id"), index=True)
    slot: Mapped[int] = mapped_column(Integer)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    kind: Mapped[str | None] = mapped_column(String(20))
    answers: Mapped[list[str]] = mapped_column(JSON, default=list)
    evidence_url: Mapped[str | None] = mapped_column(String(500))
    #: The date the answer took effect, when the annotator knows it (YYYY or YYYY-MM-DD).
    effective_date: Mapped[str | None] = mapped_column(String(10))
    #: When the annotator first opened the task, and when they submitted it.
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime)
    task: Mapped[CampaignTask] = relationship(back_populates="annotations")
    annotator: Mapped[User] = relationship()


class DisputeStatus(enum.StrEnum):
    """Where a researcher's dispute is: waiting, accepted, or rejected (with a reason)."""

    OPEN = "open"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class Dispute(Base):
    """A researcher's claim that an example's gold is wrong, with a proposed answer.

    One per author, gold version and example: the same claim twice is refused (409). An
    accepted dispute becomes an update record of the next disputes build (gold_version_id).
    """

    __tablename__ = "dispute"
    __table_args__ = (UniqueConstraint("user_id", "version_id", "track", "split", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    #: The active gold version when the dispute was filed (the gold it disputes).
    version_id: Mapped[int] = mapped_column(ForeignKey("gold_version.id"))
    track: Mapped[str] = mapped_column(String(16))
    split: Mapped[str] = mapped_column(String(8))
    key: Mapped[str] = mapped_column(String(200))
    proposed_answers: Mapped[list[str]] = mapped_column(JSON, default=list)
    evidence_url: Mapped[str] = mapped_column(String(500))
    comment: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default=DisputeStatus.OPEN.value,
                                        index=True)
    #: The organizer's answers when accepted (default: the proposal).
    final_answers: Mapped[list[str] | None] = mapped_column(JSON)
    #: The one-line reason of a rejection, which the author sees.
    reason: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime)
    decided_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
    #: The gold version an accepted dispute went into (None until built).
    gold_version_id: Mapped[int | None] = mapped_column(ForeignKey("gold_version.id"))
    user: Mapped[User] = relationship(foreign_keys=[user_id])


class RankPair(Base):
    """A stored rank-group decision: whether two score rows, neighbours in their board's
    ranking, join one group (their paired bootstrap test gives p >= ALPHA; services/
    ranking.py) at a number of resamples.

    A decision depends only on the two rows' outcomes, which never change (a rescore writes
    new rows), so it is kept until either row is deleted. Stored after an upload for the
    pairs beside it and after a read for the pairs it tested, so that a page's first view in
    any worker reads its groups' decisions instead of testing them.
    """

    __tablename__ = "rank_pair"
    # The cascades on deleted scores look pairs up by either side.
    __table_args__ = (Index("ix_rank_pair_below", "below_score_id"),)
    above_score_id: Mapped[int] = mapped_column(
        ForeignKey("score.id", ondelete="CASCADE"), primary_key=True)
    below_score_id: Mapped[int] = mapped_column(
        ForeignKey("score.id", ondelete="CASCADE"), primary_key=True)
    resamples: Mapped[int] = mapped_column(Integer, primary_key=True)
    joined: Mapped[bool] = mapped_column(Boolean)
