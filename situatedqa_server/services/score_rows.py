"""Score rows from benchmark results: shared by uploads, version rescoring and baselines.

A leaf under scoring and versions, so that neither needs the other to build a row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sqlalchemy.orm.attributes import set_committed_value

from benchmark import TRACK_INFO, ScoreResult
from benchmark.incremental import encode_f1

from ..models import GoldVersion, Score, Submission, utcnow


def finite(value: float | None) -> float | None:
    """A float for JSON: NaN and infinities (undefined metrics) become None."""
    return value if value is not None and math.isfinite(value) else None


def score_columns(result: ScoreResult) -> dict[str, Any]:
    """A score row's columns from a benchmark result, ids aside (NaN stored as null)."""
    metrics = {name: finite(value) for name, value in result.metrics.items()}
    ci = {name: ([finite(v) for v in interval] if interval and all(map(math.isfinite, interval))
                 else None) for name, interval in result.ci.items()}
    return {"track": result.track, "split": result.split, "n": result.n, "metrics": metrics,
            "ci": ci, "counts": dict(result.counts),
            "primary_metric": metrics.get(TRACK_INFO[result.track].primary),
            "outcomes": np.asarray(result.outcomes, dtype=np.uint8).tobytes(),
            "f1": encode_f1(result.f1, result.f1_any), "scored_at": utcnow()}


def new_score(submission: Submission, version: GoldVersion, result: ScoreResult) -> Score:
    """A Score row from a benchmark result."""
    return Score(submission=submission, gold_version=version, **score_columns(result))


def upload_score(submission: Submission, version: GoldVersion, result: ScoreResult) -> Score:
    """new_score for a submission the upload has just stored (it has its id).

    The row names the submission by id and holds it as loaded, without the backref event
    that would append it to `submission.scores`: that event marks the submission changed,
    and every later statement of the upload would then autoflush a unit of work with
    nothing to write (0.56 ms). The upload sets the collection itself once the rows are
    stored.
    """
    row = Score(submission_id=submission.id, gold_version=version, **score_columns(result))
    set_committed_value(row, "submission", submission)
    return row
