"""Validate, score and store an upload (scored by the evaluation room); per-example rows."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from sqlalchemy import Insert, insert, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import MANYTOONE, InstanceState, Mapper, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from benchmark import (
    HIDDEN_SPLIT,
    ValidationError,
)
from benchmark.harness_files import harness_summary
from benchmark.incremental import encode_predictions
from benchmark.provenance import origins

from ..extensions import db
from ..models import InputRelease, Score, Submission, User, Visibility, utcnow
from . import (
    audit,
    blobs,
    board_cache,
    duplicates,
    evaluation,
    gold_store,
    input_releases,
    ladder,
    quotas,
    ranking,
)
from .errors import ServiceError


class HiddenSplitError(ServiceError):
    """Per-example feedback was asked for on the hidden test split."""

    status = 404
    code = "hidden_split"


@dataclass(frozen=True)
class SubmissionMeta:
    """What the submitter says about the method (already validated by the form)."""

    method_name: str
    description: str = ""
    paper_url: str | None = None
    code_url: str | None = None
    model_type: str = "other"
    fine_tuned: bool = False
    knowledge_date: str | None = None
    #: The day the model's knowledge stops (a past date): the figures after it.
    knowledge_cutoff: date | None = None
    parameter_count: int | None = None
    public: bool = False
    #: The filter to read of an lm-eval samples file with several.
    harness_filter: str | None = None


#: Called with the new submission and its released score (its own, or the one the Ladder
#: shows instead) just before the upload's commit (e.g. to record an idempotency key in the
#: same transaction).
BeforeCommit = Callable[[Submission, Score], None]


def submit(user: User, track: str, split: str, data: bytes, filename: str,
           meta: SubmissionMeta,
           before_commit: BeforeCommit | None = None) -> tuple[Submission, Score]:
    """Validate, score and store an upload: all of it, or nothing and no quota spent.

    Returns the submission and its released score (see score_for). Raises
    evaluation.InvalidFile (after counting the rejection), DuplicateSubmission,
    QuotaExceeded or GoldUnavailable.
    """
    gold_store.get_split(track, split)  # GoldUnavailable before any quota is read
    team_id = user.team_id
    quotas.check_before_scoring(team_id, track, split)  # the locked check is in consume()
    try:
        upload, releases = evaluation.read_answering(data, track, split, filename,
                                                     meta.harness_filter)
    except ValidationError as exc:
        quotas.record_rejection(team_id)
        raise evaluation.rejection(exc, track, split) from None
    try:
        return _insert(user, track, split, filename, meta, data, upload, before_commit,
                       releases)
    except IntegrityError:
        db.session.rollback()
        # A concurrent upload of the same predictions won the team's unique index.
        earlier = duplicates.earlier(team_id, track, split,
                                     duplicates.digest(upload.predictions))
        if earlier.own_live is None:
            raise
        raise duplicates.DuplicateSubmission(earlier.own_live) from None
    except BaseException:
        db.session.rollback()
        raise


def _insert(user: User, track: str, split: str, filename: str, meta: SubmissionMeta,
            data: bytes, upload: evaluation.Predicted,
            before_commit: BeforeCommit | None,
            releases: Sequence[InputRelease] = ()) -> tuple[Submission, Score]:
    """One transaction: store the file, add the submission and its scores, lock and spend
    the quota, decide the Ladder's release (the caller rolls back on any error: none of it
    stays)."""
    quotas.begin_locked()
    predictions, inputs = upload.predictions, upload.inputs
    predictions_sha256 = duplicates.digest(predictions)
    earlier = duplicates.earlier(user.team_id, track, split, predictions_sha256)
    duplicates.check(earlier)
    now = utcnow()
    sha256 = blobs.put(data)
    submission = Submission(
        user_id=user.id, team_id=user.team_id, track=track, split=split, file_sha256=sha256,
        filename=filename[:255], format=predictions.format, method_name=meta.method_name,
        description=meta.description, paper_url=meta.paper_url, code_url=meta.code_url,
        model_type=meta.model_type, fine_tuned=meta.fine_tuned,
        knowledge_date=meta.knowledge_date, knowledge_cutoff=meta.knowledge_cutoff,
        parameter_count=meta.parameter_count,
        visibility=(Visibility.PUBLIC if meta.public else Visibility.PRIVATE).value,
        published_at=now if meta.public else None, created_at=now,
        predictions=encode_predictions(predictions, inputs),
        harness=harness_summary(predictions.harness),
        harness_hashes=(dict(predictions.harness.get("hashes") or {})
                        if predictions.harness is not None else None),
        harness_filter=meta.harness_filter if predictions.harness is not None else None)
    duplicates.mark(submission, predictions_sha256, earlier)
    _store(submission)
    input_releases.record(submission.id, releases)
    # Also scored against any version being rescored, so none is missing after its switch;
    # GoldUnavailable (no active version) is raised here, before any quota is spent.
    # The predictions in hand carry the declared cutoff, as a stored submission's column does.
    scores = evaluation.upload_scores(
        submission, replace(upload, knowledge_cutoff=meta.knowledge_cutoff))
    # Stored the same way, instead of by a flush; being new, the submission has exactly these
    # (set as loaded: nothing is left for a flush to find, so none runs before the commit).
    for score_row in scores:
        _store(score_row)
    set_committed_value(submission, "scores", scores)
    row = scores[0]
    # The team's quota rows stay locked from here to the commit, which also serialises the
    # team's Ladder decisions; the file and the rows above are written before, so a team's
    # concurrent uploads wait only for what follows (PostgreSQL; SQLite locks at BEGIN).
    if split == quotas.QUOTA_SPLIT:
        quotas.consume(user.team_id, track)
    shown = ladder.decide(submission, row)  # a withheld submission stays private
    if submission.is_public:
        audit.add_now("publish", submission.id, user)
    if before_commit is not None:
        before_commit(submission, shown)
    pending = [row.id for row in scores if row.errors_pending]  # read before the commit
    ranked = [(row.track, row.split, row.gold_version_id, row.id) for row in scores
              if submission.is_public]
    db.session.commit()
    evaluation.complete_after_response(pending)
    ranking.store_pairs_beside(ranked)
    return submission, shown


@functools.cache
def _insert_statement(model: type[Any], given: frozenset[str]) -> Insert:
    """INSERT of a model's row with the given columns; RETURNING the columns whose defaults
    the statement fills, the id among them (built once per model and set of columns), but
    not the columns the database computes (deferred: the ORM never holds them)."""
    table = model.__table__
    return insert(table).returning(*[column for column in table.columns
                                     if column.key not in given and column.computed is None])


def _store(instance: Submission | Score) -> None:
    """INSERT a new (transient) row now and add it to the session as persistent.

    What a flush of it would do, at about half the CPU: one prebuilt Core statement instead
    of the ORM's unit of work. The foreign keys of its many-to-one relationships are read
    from the related (stored) objects, as a flush would. It runs on the session's
    connection, not through Session.execute, which would count a bulk insert as a change to
    every board; the board it changes is noted for the stamp bump instead. The upload then
    uses the object like any loaded one.
    """
    mapper: Mapper[Any] = inspect(type(instance))
    state: InstanceState[Any] = inspect(instance)
    values = {prop.columns[0].key: state.dict[prop.key] for prop in mapper.column_attrs
              if prop.key in state.dict}
    for relationship in mapper.relationships:
        target = state.dict.get(relationship.key)
        if relationship.direction is MANYTOONE and target is not None:
            for local, remote in relationship.local_remote_pairs:
                values[str(local.key)] = getattr(target, str(remote.key))
    row = db.session.connection().execute(
        _insert_statement(type(instance), frozenset(values)), values).one()
    for column, value in zip(row._fields, row, strict=True):
        set_committed_value(instance, mapper.get_property_by_column(
            mapper.local_table.c[column]).key, value)
    make_transient_to_detached(instance)
    db.session.add(instance)
    board_cache.changed(db.session(), {(instance.track, instance.split)})


def harness_shown(submission: Submission) -> dict[str, Any] | None:
    """The harness run a submission records, as pages, the API and exports show it: every
    path the uploaded file named reduced to its last component."""
    return harness_summary(submission.harness)


def shown_id(submission: Submission) -> int:
    """The submission whose scores are shown for this one: itself unless the Ladder withheld it."""
    return submission.shown_submission_id or submission.id


def score_for(submission: Submission) -> Score | None:
    """The submission's released score against the active gold version.

    Its own, or, when the Ladder withheld it, that of the submission shown in its place:
    an unreleased submission's own test scores never leave this module.
    """
    version = gold_store.active_version()
    row = db.session.scalar(select(Score).where(
        Score.submission_id == shown_id(submission), Score.gold_version_id == version.id))
    # An upload's row whose completion has not run yet is shown complete (never written).
    if row is not None:
        evaluation.complete_errors([row], shown=True)
    return row


def example_rows(submission: Submission) -> list[dict[str, Any]]:
    """Per-example gold, prediction and correctness; never for the hidden test split."""
    if submission.split == HIDDEN_SPLIT:
        raise HiddenSplitError("per-example feedback is not available on the test split")
    gold = gold_store.get_split(submission.track, submission.split)
    # From the outcomes stored when it was scored (the evaluation room reads them).
    rows = evaluation.example_rows(submission, gold)
    # Where each example comes from: the release, or a gold version since (dev and train
    # gold is public, refreshed answers included).
    release = gold_store.get_gold()
    if (submission.track, submission.split) in release.splits:
        for row, origin in zip(rows, origins(release.get(submission.track, submission.split),
                                             gold), strict=True):
            row["origin"] = origin
    return rows


def score_payload(row: Score | None) -> dict[str, Any]:
    """Metrics, CIs and counts in the CLI's --json shape."""
    if row is None:
        return {"metrics": {}, "ci": {}, "counts": {}, "n": None}
    payload = {"n": row.n, "metrics": row.metrics, "ci": row.ci, "counts": row.counts}
    if row.horizon is not None:
        payload["horizon"] = row.horizon
    return payload
