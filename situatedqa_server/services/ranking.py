"""Rank groups: entries the paired bootstrap test cannot separate share a range of ranks.

The rule, walking down the ranking by the primary metric (best first): an entry joins the
group of the entry directly above it when the two-sided paired bootstrap test of their
primary-metric difference gives p >= ALPHA; otherwise it starts a new group. A group's
label is the range of the ranks in it ("1–3"), or the single rank ("4").

Only the entries of the visible page are resolved, and a group is cut MAX_WALK entries
from the entry asked for. The pairwise decisions are stored (table rank_pair, by the two score
rows' ids: a decision depends only on their outcomes, which no board change alters): after
an upload for the pairs beside it, after a read for the pairs it tested, at a rescore's
switch for the new rows, and by `flask submissions rank-pairs`. Where the stored decisions
settle a group, one query gives its bounds (window aggregates over the ranking find the
nearest pairs that do not join); the other entries walk up and down until a separation,
reading the ranked rows within MAX_WALK of them and testing the pairs not decided yet. So
the rows read grow with the page, not with the board. What a worker has read, decided and
labelled is cached under the board's generation stamp (see board_generation), which every
request reads afresh from the database: no worker serves a stale group.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from flask import current_app
from sqlalchemy import Select, case, func, or_, select

from benchmark import HIDDEN_SPLIT
from benchmark.metrics import DEFAULT_SEED, BoolArray
from benchmark.paired import compare_primary

from ..extensions import after_response, db, upsert_insert
from ..models import GoldVersion, RankPair, Score, Submission
from . import board, board_cache, input_releases

#: Significance level of the paired bootstrap tests: rank groups (two-sided), the compare
#: page's separated metrics, and the Ladder's "significantly better" (one-sided, p < ALPHA).
ALPHA = 0.05
#: How far the walk may go beyond the page in either direction before it stops looking.
MAX_WALK = 200
#: Outcomes are read for this many neighbours on either side at once.
OUTCOME_BATCH = 30
#: Pairs tested and stored per transaction when a board's missing pairs are filled.
FILL_BATCH = 500
#: Pairwise decisions kept per board (across its generations); beyond it they start afresh
#: (about 160 bytes each).
MAX_DECISIONS = 100_000
EN_DASH = "\u2013"


@dataclass(frozen=True)
class Ranked:
    """One ranked entry: its submission, its score row and the SQL rank() of its metric."""

    submission_id: int
    score_id: int
    rank: int


def paired_p_value(track: str, outcomes_a: bytes, outcomes_b: bytes, resamples: int,
                   paper: BoolArray | None = None) -> float:
    """Two-sided p-value of the primary-metric difference of two stored outcome arrays:
    benchmark.compare's paired test of the primary metric (compare_primary), on the
    examples the board ranks by (`paper`, input_releases.paper_view; None: all)."""
    codes_a = np.frombuffer(outcomes_a, dtype=np.uint8).astype(np.int64)
    codes_b = np.frombuffer(outcomes_b, dtype=np.uint8).astype(np.int64)
    if codes_a.shape != codes_b.shape:
        return 0.0  # scored against different gold: never grouped
    if paper is not None and paper.shape == codes_a.shape:
        codes_a, codes_b = codes_a[paper], codes_b[paper]
    result = compare_primary(track, codes_a, codes_b, seed=DEFAULT_SEED, resamples=resamples)
    return 1.0 if result.p_value is None else result.p_value


def label_of(first_rank: int, last_rank: int) -> str:
    """A group's label: the range of its ranks, or the single rank."""
    return str(first_rank) if first_rank == last_rank else f"{first_rank}{EN_DASH}{last_rank}"


def board_generation(track: str, split: str, version_id: int) -> tuple[Any, ...]:
    """A key that changes whenever the ranking of a board can change.

    The board's stamps (services/board_cache.py), bumped in the transaction of every change
    and read once per request, and the app's cache token (two apps never share a key, even
    on databases whose stamps restarted from zero).
    """
    stamp = board_cache.stamp(track, split)
    database = str(current_app.config["SQLALCHEMY_DATABASE_URI"])
    return (database, track, split, version_id, stamp.board, stamp.every,
            board_cache.cache().token)


def _board_and_generation(generation: tuple[Any, ...]) -> tuple[tuple[Any, ...],
                                                                 tuple[int, ...]]:
    """board_generation's key split into the board (database, track, split, version, token)
    and its stamp numbers (board, every)."""
    return (*generation[:4], generation[6]), (generation[4], generation[5])


#: Per board, the walk of its newest generation only (a busy board's older generations are
#: never read again; one kept per upload would hold every entry).
_WALKS: board_cache.Newest[_Walk] = board_cache.Newest()
#: Per board and resamples, the pairwise decisions of its newest every-board generation.
_DECISIONS: board_cache.Newest[dict[tuple[int, int], bool]] = board_cache.Newest(8)


def _ranking(track: str, split: str, version_id: int) -> Select[Any]:
    """Every visible scored entry of a board with its rank, its position (0 first) in the
    ranking (primary metric, best first; ties by submission id), the score row above it
    (None first) and the entry count."""
    primary = board.ranking_order()
    return (
        select(Submission.id.label("submission_id"), Score.id.label("score_id"),
               board.rank_window().label("rank"),
               (func.row_number().over(order_by=(primary, Submission.id)) - 1)
               .label("position"),
               func.lag(Score.id).over(order_by=(primary, Submission.id))
               .label("above_score_id"),
               func.count().over().label("total"))
        .join(Score, Score.submission_id == Submission.id)
        .where(*board.entries_where(track, split, version_id)))


class _Walk:
    """Pairwise decisions and group bounds along one board generation, filled lazily: the
    ranked rows are read around the entries asked for (see locate)."""

    def __init__(self, generation: tuple[Any, ...], resamples: int,
                 decisions: dict[tuple[int, int], bool] | None = None) -> None:
        _, self.track, self.split, self.version_id = generation[:4]
        self.resamples = resamples
        #: The ranked rows read so far, by position, and the positions of their submissions.
        self.rows: dict[int, Ranked] = {}
        self.position_of: dict[int, int] = {}
        #: Submissions asked for that are not ranked on the board.
        self.unranked: set[int] = set()
        self.total = 0
        self.joined: dict[int, bool] = {}
        #: Decisions by the (above, below) score ids, shared with the board's other
        #: generations (see board_decisions).
        self.decisions: dict[tuple[int, int], bool] = {} if decisions is None else decisions
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.outcomes: dict[int, bytes] = {}
        #: Decisions tested here and not yet stored (see rank_groups).
        self.tested: dict[tuple[int, int], bool] = {}
        #: The group label of each submission resolved so far.
        self.labels: dict[int, str] = {}

    def locate(self, submission_ids: Iterable[int]) -> None:
        """Read, in one query, every ranked row a walk from the submissions not yet located
        can reach (MAX_WALK either way, and the pair beyond): the ranking once, the wanted
        entries' positions from it, and the rows within reach of one of them."""
        wanted = [i for i in submission_ids
                  if i not in self.position_of and i not in self.unranked]
        if not wanted:
            return
        ranking = _ranking(self.track, self.split, self.version_id).cte("ranking")
        # Materialized: PostgreSQL would inline a CTE used once, and scan the whole ranking
        # again for each of its rows.
        positions = (select(ranking.c.position)
                     .where(ranking.c.submission_id.in_(wanted)).cte("wanted")
                     .prefix_with("MATERIALIZED", dialect="postgresql"))
        reach = MAX_WALK + 1
        within = (select(positions.c.position)
                  .where(ranking.c.position.between(positions.c.position - reach,
                                                    positions.c.position + reach))
                  .exists())
        rows = db.session.execute(
            select(ranking.c.submission_id, ranking.c.score_id, ranking.c.rank,
                   ranking.c.position, ranking.c.total, ranking.c.above_score_id,
                   _stored_decision(ranking, self.resamples).scalar_subquery().label("joined"))
            .where(within)).all()
        for row in rows:
            self.rows[row.position] = Ranked(row.submission_id, row.score_id, row.rank)
            self.position_of[row.submission_id] = row.position
            self.total = row.total
            if row.joined is not None:
                if len(self.decisions) >= MAX_DECISIONS:
                    self.decisions.clear()
                self.decisions[row.above_score_id, row.score_id] = row.joined
        # a ranked submission is within reach of itself, so it was read
        self.unranked.update(i for i in wanted if i not in self.position_of)

    def resolve_stored(self, submission_ids: Iterable[int]) -> None:
        """Label, in one query, each entry not yet labelled whose group the stored decisions
        settle: the nearest pair above it and the nearest below it that do not join, within
        MAX_WALK, are both stored (a pair without a stored decision also stops the search;
        an entry whose search stopped at one is left to the walk, which tests it)."""
        wanted = [i for i in submission_ids if i not in self.labels and i not in self.unranked]
        if not wanted:
            return
        found = db.session.execute(_stored_bounds(
            self.track, self.split, self.version_id, self.resamples, wanted)).all()
        located = {row.submission_id for row in found}
        self.unranked.update(i for i in wanted if i not in located)
        for row in found:
            if row.settled:
                self.labels[row.submission_id] = label_of(row.first_rank, row.last_rank)

    def codes(self, position: int) -> bytes:
        """The stored outcomes of a position, read in batches around it."""
        score_id = self.rows[position].score_id
        cached = self.outcomes.get(score_id)
        if cached is not None:
            return cached
        ids = [self.rows[p].score_id
               for p in range(position - OUTCOME_BATCH, position + OUTCOME_BATCH)
               if p in self.rows]
        # read into a dict of its own: another thread may clear the shared one meanwhile
        read: dict[int, bytes] = dict(db.session.execute(
            select(Score.id, Score.outcomes).where(Score.id.in_(ids))).all())
        self.outcomes.update(read)
        return read[score_id]

    def joins_above(self, position: int) -> bool:
        """Whether the entry at position joins the group of the one above it."""
        # A pair not read counts as separated: rows read by a later request of the same
        # generation may come from a newer database state, whose positions shifted.
        if position <= 0 or position not in self.rows or position - 1 not in self.rows:
            return False
        if position not in self.joined:
            pair = (self.rows[position - 1].score_id, self.rows[position].score_id)
            decided = self.decisions.get(pair)
            if decided is None:
                p_value = paired_p_value(self.track, self.codes(position - 1),
                                         self.codes(position), self.resamples,
                                         paper_mask(self.track, self.split, self.version_id))
                decided = p_value >= ALPHA
                if len(self.decisions) >= MAX_DECISIONS:
                    self.decisions.clear()
                self.decisions[pair] = decided
                self.tested[pair] = decided
            self.joined[position] = decided
        return self.joined[position]

    def bound(self, position: int, step: int) -> int:
        """The first (step -1) or last (step +1) position of the group, at most MAX_WALK away.

        What a walk learns is kept for the entries after it: the stop (a pair that does not
        join) that each visited position leads to. A walk cut at its bound learns nothing,
        and a stop found beyond an entry's own bound is cut there.
        """
        memo = self.first if step < 0 else self.last
        limit = (max(0, position - MAX_WALK) if step < 0
                 else min(self.total - 1, position + MAX_WALK))
        path, current = [], position
        while current not in memo and current != limit and self.joins_above(
                current if step < 0 else current + 1):
            path.append(current)
            current += step
        if current in memo:
            stop = memo[current]
        elif current == limit:
            return limit
        else:
            stop = current
        for visited in (*path, current):
            memo[visited] = stop
        return max(stop, limit) if step < 0 else min(stop, limit)


def board_decisions(board: tuple[Any, ...], every: int,
                    resamples: int) -> dict[tuple[int, int], bool]:
    """The pairwise decisions of a board, by (above, below) score ids, kept across its
    generations while the every-board generation (bumped by a rescore in place, which
    rewrites score rows) stays the same. `board`: database, track, split, version, token."""
    return _DECISIONS.get((*board, resamples), (every,), dict)


def _walk(generation: tuple[Any, ...], resamples: int) -> _Walk:
    """The walk of one board generation, shared by the requests a worker serves."""
    board, stamp = _board_and_generation(generation)
    return _WALKS.get((*board, resamples), stamp, lambda: _Walk(
        generation, resamples, board_decisions(board, stamp[1], resamples)))


def rank_groups(track: str, split: str, version_id: int,
                submission_ids: Iterable[int]) -> dict[int, str]:
    """The rank-group label of each listed submission that is ranked on the board."""
    resamples = resamples_setting()
    walk = _walk(board_generation(track, split, version_id), resamples)
    wanted = list(submission_ids)
    walk.resolve_stored(wanted)
    untested = [i for i in wanted if i not in walk.labels and i not in walk.unranked]
    if untested:
        walk.locate(untested)
    for submission_id in untested:
        position = walk.position_of.get(submission_id)
        if position is not None:
            first, last = walk.bound(position, -1), walk.bound(position, +1)
            walk.labels[submission_id] = label_of(walk.rows[first].rank,
                                                  walk.rows[last].rank)
    labels = {i: walk.labels[i] for i in wanted if i in walk.labels}
    walk.outcomes.clear()  # the decisions are kept; the blobs are not worth the memory
    tested, walk.tested = walk.tested, {}
    if tested:
        after_response(lambda: _store_pairs(tested, resamples),
                       f"storing {len(tested)} rank-group decisions")
    return labels


def _stored_decision(ranking: Any, resamples: int) -> Select[Any]:
    """The stored decision of a ranking's row with the row above: correlated, so that each
    row is one primary-key lookup whatever the planner thinks of the table's size."""
    return select(RankPair.joined).where(
        RankPair.above_score_id == ranking.c.above_score_id,
        RankPair.below_score_id == ranking.c.score_id, RankPair.resamples == resamples)


def _stored_bounds(track: str, split: str, version_id: int, resamples: int,
                   submission_ids: list[int]) -> Select[Any]:
    """Per listed ranked submission: whether the stored decisions settle its group, and the
    ranks of the group's first and last entries when they do (see _Walk.resolve_stored).

    A position stops the search when the pair it forms with the entry above does not join
    (stored false) or has no stored decision (the first position has none): the group
    starts at the nearest stop at or above the entry, at most MAX_WALK above, and ends just
    before the nearest stop below it, at most MAX_WALK below. It is settled when neither
    bound is a pair without a decision (a bound at MAX_WALK is settled whatever lies
    beyond). Window aggregates over the ranking find the stops, with the pairs' decisions
    looked up by primary key.
    """
    ranking = _ranking(track, split, version_id).subquery()
    joined = _stored_decision(ranking, resamples).scalar_subquery()
    decided = select(ranking, joined.label("joined")).cte("decided")
    position = decided.c.position
    stop = case((decided.c.joined.is_not(True), position))
    unknown = case((decided.c.joined.is_(None) & (position > 0), position))
    # Both frames start at the first row of their order, so the aggregates run in one pass:
    # a frame whose start moves (1 FOLLOWING …) has PostgreSQL compute min() afresh for
    # every row, quadratic in the board.
    down, up = position, position.desc()
    marks = select(
        decided.c.submission_id, position, decided.c.total,
        func.max(stop).over(order_by=down, rows=(None, 0)).label("stop_above"),
        func.max(unknown).over(order_by=down, rows=(None, 0)).label("unknown_above"),
        func.min(stop).over(order_by=up, rows=(None, -1)).label("stop_below"),
        func.min(unknown).over(order_by=up, rows=(None, -1)).label("unknown_below"),
    ).cte("marks")
    wanted = select(marks).where(marks.c.submission_id.in_(submission_ids)).subquery()
    first = case((wanted.c.stop_above > wanted.c.position - MAX_WALK, wanted.c.stop_above),
                 else_=wanted.c.position - MAX_WALK)
    last = case((wanted.c.stop_below.is_not(None)
                 & (wanted.c.stop_below - 1 < wanted.c.position + MAX_WALK),
                 wanted.c.stop_below - 1),
                (wanted.c.position + MAX_WALK < wanted.c.total - 1,
                 wanted.c.position + MAX_WALK),
                else_=wanted.c.total - 1)
    settled = ~((wanted.c.unknown_above.is_not(None)
                 & (wanted.c.unknown_above == wanted.c.stop_above)
                 & (wanted.c.stop_above > wanted.c.position - MAX_WALK))
                | (wanted.c.unknown_below.is_not(None)
                   & (wanted.c.unknown_below == wanted.c.stop_below)
                   & (wanted.c.stop_below <= wanted.c.position + MAX_WALK)))
    first_row, last_row = decided.alias("first_row"), decided.alias("last_row")
    return (select(wanted.c.submission_id, settled.label("settled"),
                   first_row.c.rank.label("first_rank"), last_row.c.rank.label("last_rank"))
            .join(first_row, first_row.c.position == first)
            .join(last_row, last_row.c.position == last))


def _store_pairs(decisions: dict[tuple[int, int], bool], resamples: int) -> None:
    """Store decisions (committed), skipping those stored meanwhile; none when a score row
    of one was deleted meanwhile (the foreign key refuses the batch, which is then lost)."""
    db.session.execute(upsert_insert(RankPair).on_conflict_do_nothing(), [
        {"above_score_id": above, "below_score_id": below, "resamples": resamples,
         "joined": joined} for (above, below), joined in decisions.items()])
    db.session.commit()


def store_pairs_beside(rows: Iterable[tuple[str, str, int, int]]) -> None:
    """After the response, test and store the decisions of the pairs that new score rows
    (an upload's: track, split, version, score id) form with their neighbours on their
    boards, so that no read tests them."""
    resamples = resamples_setting()
    wanted = list(rows)

    def fill() -> None:
        for track, split, version_id, score_id in wanted:
            pairs = _pairs_beside(track, split, version_id, score_id)
            if pairs is None:  # no primary metric: found through the whole ranking
                fill_pairs(track, split, version_id, resamples, [score_id])
            else:
                _test_and_store(track, _untested(pairs, resamples), resamples,
                                paper_mask(track, split, version_id))
    if wanted:
        after_response(fill, "testing the rank-group pairs beside scores "
                             f"{[row[3] for row in wanted]}")


def _pairs_beside(track: str, split: str, version_id: int,
                  score_id: int) -> list[tuple[int, int]] | None:
    """The (above, below) pairs a ranked score row forms with the rows next to it, each
    found by one read along ix_score_board (a few index entries, not the board); None when
    the row has no primary metric (ranked last, where the index does not lead)."""
    mine = db.session.execute(select(Score.primary_metric, Score.submission_id)
                              .where(Score.id == score_id)).one_or_none()
    if mine is None or mine.primary_metric is None:
        return None
    value, submission_id = mine
    visible = (select(Score.id).join(Submission, Submission.id == Score.submission_id)
               .where(*board.entries_where(track, split, version_id), Score.id != score_id))
    above = db.session.scalar(visible.where(or_(
        Score.primary_metric > value,
        (Score.primary_metric == value) & (Submission.id < submission_id)))
        .order_by(Score.primary_metric.asc(), Submission.id.desc()).limit(1))
    below = db.session.scalar(visible.where(
        Score.primary_metric <= value,
        (Score.primary_metric < value) | (Submission.id > submission_id))
        .order_by(Score.primary_metric.desc(), Submission.id.asc()).limit(1))
    if below is None:  # the first entry without a primary metric, if any, comes next
        below = db.session.scalar(visible.where(Score.primary_metric.is_(None))
                                  .order_by(Submission.id).limit(1))
    return ([(above, score_id)] if above is not None else []) + (
        [(score_id, below)] if below is not None else [])


def _untested(pairs: list[tuple[int, int]], resamples: int) -> list[tuple[int, int]]:
    """The pairs that have no stored decision."""
    stored = {(above, below) for above, below in db.session.execute(
        select(RankPair.above_score_id, RankPair.below_score_id)
        .where(RankPair.resamples == resamples,
               RankPair.below_score_id.in_([below for _, below in pairs])))}
    return [pair for pair in pairs if pair not in stored]


def paper_mask(track: str, split: str, version_id: int) -> BoolArray | None:
    """The examples a board's pairs are tested on (input_releases.paper_view's mask)."""
    version = db.session.get(GoldVersion, version_id)
    if version is None or split != HIDDEN_SPLIT or version.parent_id is None:
        return None
    return input_releases.paper_view(version, track, split)[1]


def _test_and_store(track: str, pairs: list[tuple[int, int]], resamples: int,
                    paper: BoolArray | None = None) -> None:
    """Test pairs of score rows of one track and store their decisions (committed), on the
    board's paper examples (paper_mask)."""
    if not pairs:
        return
    ids = {score_id for pair in pairs for score_id in pair}
    outcomes: dict[int, bytes] = dict(db.session.execute(
        select(Score.id, Score.outcomes).where(Score.id.in_(ids))).all())
    _store_pairs({(above, below): paired_p_value(track, outcomes[above], outcomes[below],
                                                 resamples, paper) >= ALPHA
                  for above, below in pairs}, resamples)


def fill_pairs(track: str, split: str, version_id: int, resamples: int,
               score_ids: Collection[int] | None = None) -> int:
    """Test and store (committed) each neighbouring pair of a board's ranking that has no
    stored decision, only those with one of score_ids when given; how many were tested."""
    ranking = _ranking(track, split, version_id).cte("ranking")
    missing = (select(ranking.c.above_score_id, ranking.c.score_id)
               .where(ranking.c.above_score_id.is_not(None),
                      ~_stored_decision(ranking, resamples).exists()))
    if score_ids is not None:
        missing = missing.where(or_(ranking.c.score_id.in_(score_ids),
                                    ranking.c.above_score_id.in_(score_ids)))
    pairs = [(row.above_score_id, row.score_id) for row in db.session.execute(missing)]
    for start in range(0, len(pairs), FILL_BATCH):
        _test_and_store(track, pairs[start:start + FILL_BATCH], resamples,
                        paper_mask(track, split, version_id))
    return len(pairs)


def resamples_setting() -> int:
    """The resamples of the rank groups' tests (the RANK_GROUP_RESAMPLES setting)."""
    return int(current_app.config["RANK_GROUP_RESAMPLES"])
