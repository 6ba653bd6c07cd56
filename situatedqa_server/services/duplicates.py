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
from dataclasses import dataclass

import msgspec
from sqlalchemy import and_, bindparam, func, select

from benchmark import Predictions

from ..extensions import db
from ..models import Submission
from .errors import ServiceError

AUTOMATIC_FLAG = "automatic: the same predictions as an earlier submission of another team"
#: The flag of an upload whose predictions are a baseline entry's (a committed reference
#: file uploaded again): it is that baseline, not a new system.
BASELINE_FLAG = "automatic: the same predictions as the baseline entry #{id}"


class DuplicateSubmission(ServiceError):
    """The team already has a live submission with the same predictions on this board."""

    status = 409
    code = "duplicate_submission"

    def __init__(self, earlier_id: int) -> None:
        super().__init__(f"your team already submitted these predictions as submission "
                         f"#{earlier_id} on this track and split; nothing was stored and no "
                         "quota was spent", {"submission_id": earlier_id})
        self.earlier_id = earlier_id


def digest(predictions: Predictions) -> str:
    """SHA-256 of the canonical normalized predictions (see the module docstring)."""
    content: dict[str, object] = {"track": predictions.track, "split": predictions.split}
    if predictions.answers is not None:
        content["answers"] = predictions.normalized_answers  # the scorer's, not a second pass
    if predictions.labels is not None:
        content["labels"] = [bool(label) for label in predictions.labels]
    if predictions.scores is not None:
        content["scores"] = [float(value).hex() for value in predictions.scores]
    return hashlib.sha256(canonical_json(content)).hexdigest()


def canonical_json(content: dict[str, object]) -> bytes:
    """Compact JSON, non-ASCII kept, as `json.dumps(…, ensure_ascii=False)` writes it.

    msgspec writes the same bytes about eight times faster; a lone surrogate (which only
    the stdlib can encode, with "surrogatepass") takes the stdlib path. Stored digests of
    earlier uploads stay valid because the bytes are identical (tests/server/test_ladder.py).
    """
    try:
        return msgspec.json.encode(content)
    except UnicodeEncodeError:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Earlier:
    """Earlier submissions with the same predictions on a board."""

    own_live: int | None  # the team's live one: the upload is refused
    other_team: int | None  # the earliest of another team: the upload is flagged


_OWN = and_(Submission.team_id == bindparam("team_id"), Submission.deleted_at.is_(None))
#: Built once (its construction cost more than its execution); the values are bound.
_EARLIER = select(
    func.min(Submission.id).filter(_OWN),
    func.min(Submission.id).filter(Submission.team_id != bindparam("team_id"))).where(
    Submission.track == bindparam("track"), Submission.split == bindparam("split"),
    Submission.predictions_sha256 == bindparam("sha256"))


def earlier(team_id: int, track: str, split: str, sha256: str) -> Earlier:
    """Both lookups in one round trip (the board's index on the predictions' hash)."""
    found = db.session.execute(_EARLIER, {"team_id": team_id, "track": track, "split": split,
                                          "sha256": sha256}).one()
    return Earlier(found[0], found[1])


def check(found: Earlier) -> None:
    """Before the quota is spent: DuplicateSubmission for the team's own live duplicate."""
    if found.own_live is not None:
        raise DuplicateSubmission(found.own_live)


def mark(submission: Submission, sha256: str, found: Earlier) -> None:
    """Record the new submission's hash; flag it when another team sent the same before."""
    submission.predictions_sha256 = sha256
    if found.other_team is not None:
        submission.duplicate_of_id = found.other_team
        earlier_entry = db.session.get(Submission, found.other_team)
        submission.flag_reason = (BASELINE_FLAG.format(id=found.other_team)
                                  if earlier_entry is not None and earlier_entry.is_baseline
                                  else AUTOMATIC_FLAG)
