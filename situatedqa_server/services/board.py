"""What a board is: which entries it shows and which scores are its own.

Every reader of a board (the leaderboard, the rank groups and the Ladder's walk, the plots,
the version pages' rank changes and drift, snapshots through the leaderboard) takes its
conditions from here, so a rule changes in one place.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from ..models import Score, Submission, Visibility


def board_where(track: str, split: str, version_id: int) -> tuple[Any, ...]:
    """The SQL conditions of a board's scores (all in the covering index ix_score_board)."""
    return (Score.gold_version_id == version_id, Score.track == track, Score.split == split)


def listed_where() -> tuple[Any, ...]:
    """Published and not hidden by the organizers, as SQL conditions on Submission: what
    anyone may see of another team (visibility.seen_clause adds the team's own)."""
    return (Submission.visibility == Visibility.PUBLIC.value, Submission.hidden.is_(False))


def shown_where() -> tuple[Any, ...]:
    """The visibility rule of every board, as SQL conditions on Submission: listed, and not
    deleted."""
    return (*listed_where(), Submission.deleted_at.is_(None))


def entries_where(track: str, split: str, version_id: int) -> tuple[Any, ...]:
    """A board's scores of the entries it shows (join Score to Submission)."""
    return (*board_where(track, split, version_id), *shown_where())


def ranking_order(primary: Any = Score.primary_metric) -> Any:
    """The order a board ranks by: the primary metric, best first, unscored entries last."""
    return primary.desc().nulls_last()


def rank_window(primary: Any = Score.primary_metric) -> Any:
    """A board's rank as SQL: rank() over ranking_order, so tied entries share a rank."""
    return func.rank().over(order_by=ranking_order(primary))
