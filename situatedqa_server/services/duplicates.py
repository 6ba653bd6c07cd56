"""The same predictions submitted twice: 409 within a team, flagged across teams.

"The same file" means the same predictions as the scorer reads them, not the same bytes:
the SHA-256 of a canonical JSON of the track, the split and, in gold order, the normalized
answers (QA tracks: exact match only sees the normalized answer) or the labels and scores
(identification). So gzip, JSONL versus CSV, key order, whitespace, case and punctuation do
not make a file new. Nothing in it depends on the gold answers: a duplicate answer never
says anything about the hidden labels.
"""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import select

from benchmark import Predictions
from benchmark.normalize import normalize_many

from ..extensions import db
from ..models import Submission

AUTOMATIC_FLAG = "automatic: the same predictions as an earlier submission of another team"


class DuplicateSubmission(Exception):
    """The team already has a live submission with the same predictions on this board."""

    def __init__(self, earlier_id: int) -> None:
        super().__init__(f"your team already submitted these predictions as submission "
                         f"#{earlier_id} on this track and split; nothing was stored and no "
                         "quota was spent")
        self.earlier_id = earlier_id


def digest(predictions: Predictions) -> str:
    """SHA-256 of the canonical normalized predictions (see the module docstring)."""
    content: dict[str, object] = {"track": predictions.track, "split": predictions.split}
    if predictions.answers is not None:
        content["answers"] = normalize_many(predictions.answers)
    if predictions.labels is not None:
        content["labels"] = [bool(label) for label in predictions.labels]
    if predictions.scores is not None:
        content["scores"] = [float(value).hex() for value in predictions.scores]
    canonical = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def same_team(team_id: int, track: str, split: str, sha256: str) -> int | None:
    """The id of the team's live submission with these predictions on the board, if any."""
    return db.session.scalar(select(Submission.id).where(
        Submission.team_id == team_id, Submission.track == track, Submission.split == split,
        Submission.predictions_sha256 == sha256, Submission.deleted_at.is_(None))
        .order_by(Submission.id).limit(1))


def other_team(team_id: int, track: str, split: str, sha256: str) -> int | None:
    """The earliest submission of another team with these predictions on the board, if any."""
    return db.session.scalar(select(Submission.id).where(
        Submission.team_id != team_id, Submission.track == track, Submission.split == split,
        Submission.predictions_sha256 == sha256).order_by(Submission.id).limit(1))


def check(team_id: int, track: str, split: str, sha256: str) -> None:
    """Before the quota is spent: DuplicateSubmission for the team's own live duplicate."""
    earlier = same_team(team_id, track, split, sha256)
    if earlier is not None:
        raise DuplicateSubmission(earlier)


def mark(submission: Submission, sha256: str) -> None:
    """Record the new submission's hash; flag it when another team sent the same before."""
    submission.predictions_sha256 = sha256
    copied = other_team(submission.team_id, submission.track, submission.split, sha256)
    if copied is not None:
        submission.duplicate_of_id = copied
        submission.flag_reason = AUTOMATIC_FLAG
