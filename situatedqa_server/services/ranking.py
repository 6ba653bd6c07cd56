"""Rank groups: entries the paired bootstrap test cannot separate share a range of ranks.

The rule, walking down the ranking by the primary metric (best first): an entry joins the
group of the entry directly above it when the two-sided paired bootstrap test of their
primary-metric difference gives p >= ALPHA; otherwise it starts a new group. A group's
label is the range of the ranks in it ("1–3"), or the single rank ("4").

Only the entries of the visible page are resolved: the walk goes up from the page until a
separation is found (where the page's first group starts) and down until one is found
(where its last group ends). Each pair's p-value depends on two immutable stored score
rows, so it is memoized per worker under their ids and scoring times; a new submission or
a rescore adds or replaces rows and therefore keys, so no worker ever reads a stale group.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from flask import current_app
from sqlalchemy import select

from benchmark import TRACK_INFO
from benchmark.metrics import accuracy_from_binary, id_f1, paired_difference
from benchmark.scoring import CORRECT

from ..extensions import db
from ..models import Score, Submission, Visibility

ALPHA = 0.05
DEFAULT_RESAMPLES = 1000
#: How far the walk may go beyond the page in either direction before it stops looking.
MAX_WALK = 500
EN_DASH = "\u2013"


@dataclass(frozen=True)
class Ranked:
    """One ranked entry: its submission, its score row and the SQL rank() of its metric."""

    submission_id: int
    score_id: int
    scored_at: datetime
    rank: int


def primary_codes(track: str, outcomes: np.ndarray) -> tuple[np.ndarray, int]:
    """The per-example categories the primary metric is computed from, and their count."""
    if TRACK_INFO[track].primary == "f1":
        return outcomes.astype(np.int64), 4
    return (outcomes.astype(np.int64) & CORRECT), 2


def paired_p_value(track: str, outcomes_a: bytes, outcomes_b: bytes, resamples: int) -> float:
    """Two-sided p-value of the primary-metric difference of two outcome arrays."""
    codes_a, categories = primary_codes(track, np.frombuffer(outcomes_a, dtype=np.uint8))
    codes_b, _ = primary_codes(track, np.frombuffer(outcomes_b, dtype=np.uint8))
    if codes_a.shape != codes_b.shape:
        return 0.0  # scored against different gold: never grouped
    primary = TRACK_INFO[track].primary
    statistic = id_f1 if primary == "f1" else accuracy_from_binary
    # The same name and default seed as benchmark.compare, so both report one p-value.
    result = paired_difference(codes_a, codes_b, categories, statistic, name=primary,
                               seed=20211107, resamples=resamples)
    return 1.0 if result.p_value is None else result.p_value


@functools.lru_cache(maxsize=65536)
def _cached_p_value(database: str, track: str, key_a: tuple[int, datetime],
                    key_b: tuple[int, datetime], resamples: int) -> float:
    """p-value of two stored scores, read once per worker and kept under immutable keys."""
    rows = dict(db.session.execute(
        select(Score.id, Score.outcomes).where(Score.id.in_([key_a[0], key_b[0]]))).all())
    return paired_p_value(track, rows[key_a[0]], rows[key_b[0]], resamples)


def label_of(first_rank: int, last_rank: int) -> str:
    """A group's label: the range of its ranks, or the single rank."""
    return str(first_rank) if first_rank == last_rank else f"{first_rank}{EN_DASH}{last_rank}"


def ranked_rows(track: str, split: str, version_id: int) -> list[Ranked]:
    """Every visible scored entry of a board in primary-metric order (ids only, no outcomes)."""
    rank = db.func.rank().over(order_by=Score.primary_metric.desc().nulls_last())
    rows = db.session.execute(
        select(Submission.id, Score.id, Score.scored_at, rank)
        .join(Score, Score.submission_id == Submission.id)
        .where(Score.gold_version_id == version_id, Score.track == track, Score.split == split,
               Submission.visibility == Visibility.PUBLIC.value,
               Submission.hidden.is_(False), Submission.deleted_at.is_(None))
        .order_by(Score.primary_metric.desc().nulls_last(), Submission.id)).all()
    return [Ranked(*row) for row in rows]


class _Walk:
    """Pairwise decisions along a ranking, computed lazily and memoized."""

    def __init__(self, track: str, rows: Sequence[Ranked], resamples: int) -> None:
        self.track, self.rows, self.resamples = track, rows, resamples
        self.joined: dict[int, bool] = {}
        self.database = str(current_app.config["SQLALCHEMY_DATABASE_URI"])

    def joins_above(self, position: int) -> bool:
        """Whether the entry at position joins the group of the one above it."""
        if position <= 0:
            return False
        if position not in self.joined:
            above, below = self.rows[position - 1], self.rows[position]
            p_value = _cached_p_value(self.database, self.track,
                                      (above.score_id, above.scored_at),
                                      (below.score_id, below.scored_at), self.resamples)
            self.joined[position] = p_value >= ALPHA
        return self.joined[position]


def rank_groups(track: str, split: str, version_id: int,
                submission_ids: Iterable[int]) -> dict[int, str]:
    """The rank-group label of each listed submission that is ranked on the board."""
    rows = ranked_rows(track, split, version_id)
    position_of = {row.submission_id: i for i, row in enumerate(rows)}
    resamples = int(current_app.config.get("RANK_GROUP_RESAMPLES", DEFAULT_RESAMPLES))
    walk = _Walk(track, rows, resamples)
    labels = {}
    for submission_id in submission_ids:
        position = position_of.get(submission_id)
        if position is None:
            continue
        first, last = position, position
        while first > max(0, position - MAX_WALK) and walk.joins_above(first):
            first -= 1
        while last + 1 < min(len(rows), position + MAX_WALK) and walk.joins_above(last + 1):
            last += 1
        labels[submission_id] = label_of(rows[first].rank, rows[last].rank)
    return labels
