"""Rank changes and drift between gold versions: what the version pages show.

Each board is read through the board module's rule (services/board.py): a published,
unhidden, live entry's score on that version.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from ..extensions import db
from ..models import GoldVersion, Score, Submission
from . import board, gold_store, versions


def _ranked(version: GoldVersion, track: str, split: str) -> dict[int, tuple[int, float | None]]:
    """Rank (as on the leaderboard: ties share a rank) and primary metric of public entries."""
    rank = board.rank_window()
    rows = db.session.execute(
        select(Score.submission_id, rank, Score.primary_metric).join(Submission)
        .where(*board.entries_where(track, split, version.id)))
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


def ranks_between(track: str, split: str, a: GoldVersion, b: GoldVersion) -> list[RankChange]:
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
    published = versions.published_versions()
    active = gold_store.active_version()
    top = sorted(_ranked(active, track, split).items(), key=lambda item: item[1][0])[:limit]
    per_version = {v.id: _ranked(v, track, split) for v in published}
    submissions = {s.id: s for s in db.session.scalars(
        select(Submission).where(Submission.id.in_([i for i, _ in top])))}
    series = [(submissions[i], [per_version[v.id].get(i, (0, None))[1] for v in published])
              for i, _ in top]
    return published, series
