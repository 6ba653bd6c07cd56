"""Board generation stamps in the database, and the per-process leaderboard cache keyed by them.

Every change to what a leaderboard shows bumps its row in `board_stamp` in the change's own
transaction: session events collect the boards an ORM flush or a DML statement touched
(submissions, scores and paper rows: their board; gold versions, teams and bulk statements:
every board, through the row ("*", "*")) and bump them just before the commit. So no code
path has to remember to bump, and a direct SQL write outside the session must bump itself
(see bump_sql).

A request reads the two numbers of its board once (one indexed read). The cache keeps, per
(track, split, gold version), the pages asked for (each cut in SQL: ids and ranks), the
entry count of each filter, and the entries of the pages shown, of the newest board numbers
read: a newer stamp
replaces them, so a busy board holds one generation, not one per upload. A reader reads the
stamp before the data, so what it caches is never older than the stamp it is filed under:
whichever process or host made a change, the next read anywhere misses the cache and sees
it (a reader that read an older stamp than the cached one computes its answer uncached).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flask import current_app, g, has_app_context
from sqlalchemy import and_, event, or_, select, text
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction

from ..extensions import db
from ..models import BoardStamp, GoldVersion, ReportedEntry, Score, Submission, Team

#: The row every board reads as well: a change to it invalidates every board.
EVERY = ("*", "*")
#: Boards (track, split, gold version) per process whose newest generation's orders and
#: entries are kept (least recently used dropped).
MAX_BOARDS = 16
#: Pages and entry counts (of a filter, sort and page) kept per board generation, least
#: recently used dropped: a page of 1,000 entries is about 100 KB.
MAX_PAGES = 256
#: Entries kept per board generation (the pages shown so far, about 1.5 KB each); beyond it
#: the dict starts afresh. A page holds at most 1,000.
MAX_ENTRIES = 2_000
_PENDING = "situatedqa_changed_boards"
_BOARD_TABLES = {"submission", "score", "reported_entry"}
_EVERY_TABLES = {"gold_version", "team"}
T = TypeVar("T")


@dataclass(frozen=True)
class Stamp:
    """A board's generation and the every-board generation, as read from the database."""

    board: int
    every: int


# --- bumping: collected from the session, written just before its commit ---------------------


def _boards_of(instance: object) -> set[tuple[str, str]]:
    """The boards a changed row belongs to (EVERY for rows shown on every board)."""
    if isinstance(instance, Submission | Score | ReportedEntry):
        return {(instance.track, instance.split)}
    if isinstance(instance, GoldVersion | Team):
        return {EVERY}
    return set()


def _pending(session: Session) -> set[tuple[str, str]]:
    changed: set[tuple[str, str]] = session.info.setdefault(_PENDING, set())
    return changed


def changed(session: Session, boards: Iterable[tuple[str, str]]) -> None:
    """Note boards changed by a statement the session's events do not see (one run on its
    connection): their stamps are bumped before the commit like the others."""
    _pending(session).update(boards)


@event.listens_for(Session, "after_flush")
def _collect_flush(session: Session, _context: UOWTransaction) -> None:
    """Note the boards of the rows this flush inserted, updated or deleted."""
    changed = _pending(session)
    for instance in (*session.new, *session.deleted):
        changed |= _boards_of(instance)
    for instance in session.dirty:
        if session.is_modified(instance, include_collections=False):
            changed |= _boards_of(instance)


@event.listens_for(Session, "do_orm_execute")
def _collect_statement(state: ORMExecuteState) -> None:
    """A bulk INSERT, UPDATE or DELETE on a board's tables: every board is changed."""
    if not (state.is_insert or state.is_update or state.is_delete):
        return
    table = getattr(state.statement, "table", None)
    if getattr(table, "name", None) in _BOARD_TABLES | _EVERY_TABLES:
        _pending(state.session).add(EVERY)


@event.listens_for(Session, "before_commit")
def _bump_before_commit(session: Session) -> None:
    """Bump the stamps of the boards changed in this transaction, inside it."""
    if session.info.get(_PENDING) or session.new or session.dirty or session.deleted:
        session.flush()
    changed = session.info.pop(_PENDING, None)
    if changed:
        bump(session, changed)


def bump(session: Session, boards: Iterable[tuple[str, str]]) -> None:
    """Add one to the generation of each board (rows created at 1), in sorted lock order."""
    for track, split in sorted(set(boards)):
        session.execute(_BUMP, {"track": track, "split": split})
    if has_app_context():
        g.pop("board_stamps", None)  # this context's next read must see its own change


def bump_sql() -> str:
    """The upsert that bumps one board (:track, :split) on SQLite and PostgreSQL alike."""
    return ("INSERT INTO board_stamp (track, split, generation) VALUES (:track, :split, 1) "
            "ON CONFLICT (track, split) DO UPDATE SET generation = board_stamp.generation + 1")


_BUMP = text(bump_sql())


# --- reading -----------------------------------------------------------------------------------


def stamp(track: str, split: str) -> Stamp:
    """The board's stamp, read from the database once per request (or app context)."""
    stamps: dict[tuple[str, str], Stamp] = g.setdefault("board_stamps", {})
    if (track, split) not in stamps:
        rows = dict(db.session.execute(
            select(BoardStamp.track, BoardStamp.generation).where(or_(
                and_(BoardStamp.track == track, BoardStamp.split == split),
                and_(BoardStamp.track == EVERY[0], BoardStamp.split == EVERY[1])))).all())
        stamps[track, split] = Stamp(rows.get(track, 0), rows.get(EVERY[0], 0))
    return stamps[track, split]


@dataclass
class BoardData:
    """What one board generation has computed so far: pages, counts and page entries."""

    pages: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict)
    entries: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def computed(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """The page or count of a key, computed on first use (MAX_PAGES kept)."""
        found: T | None = self.pages.get(key)
        if found is None:
            found = compute()
            self.pages[key] = found
            while len(self.pages) > MAX_PAGES:
                self.pages.popitem(last=False)
        else:
            with contextlib.suppress(KeyError):  # dropped by another thread meanwhile
                self.pages.move_to_end(key)
        return found


def newer(generation: tuple[int, ...], than: tuple[int, ...]) -> bool:
    """Whether a generation (stamp numbers, which only grow) is not older than another."""
    return all(new >= old for new, old in zip(generation, than, strict=True))


class Newest(Generic[T]):
    """Per board, the value computed for its newest generation only (at most `boards` boards,
    least recently used dropped). A value for an older generation than the kept one is
    computed and not kept."""

    def __init__(self, boards: int = MAX_BOARDS) -> None:
        self.boards = boards
        self.lock = threading.Lock()
        self.values: OrderedDict[tuple[Any, ...], tuple[tuple[int, ...], T]] = OrderedDict()

    def get(self, board: tuple[Any, ...], generation: tuple[int, ...],
            compute: Callable[[], T]) -> T:
        """The board's value at a generation, computed on first use."""
        with self.lock:
            found = self.values.get(board)
            if found is not None and found[0] == generation:
                self.values.move_to_end(board)
                return found[1]
        value = compute()
        with self.lock:
            found = self.values.get(board)
            if found is None or newer(generation, found[0]):
                self.values[board] = (generation, value)
                self.values.move_to_end(board)
                while len(self.values) > self.boards:
                    self.values.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every board."""
        with self.lock:
            self.values.clear()


class BoardCache:
    """One app's caches, each filed under the stamps it was computed at."""

    def __init__(self) -> None:
        #: Told apart from another app's in keys of module-level caches (see ranking).
        self.token = secrets.token_hex(8)
        self.lock = threading.Lock()
        self.boards: Newest[BoardData] = Newest()
        self.every: dict[tuple[Any, ...], Any] = {}
        self.every_generation = -1

    def board(self, key: tuple[Any, ...]) -> BoardData:
        """The data of a board generation, key (track, split, version id, board generation,
        every generation): created empty on first use; kept while it is the newest read."""
        return self.boards.get(key[:3], tuple(key[3:]), BoardData)

    def shared(self, every: int, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """A value that changes only with the every-board generation (versions, columns)."""
        with self.lock:
            if every != self.every_generation:
                self.every, self.every_generation = {}, every
            if key in self.every:
                value: T = self.every[key]
                return value
        value = compute()
        with self.lock:
            if every == self.every_generation:
                self.every[key] = value
        return value


def cache() -> BoardCache:
    """The current app's cache (created on first use)."""
    found: BoardCache | None = current_app.extensions.get("board_cache")
    if found is None:
        found = current_app.extensions.setdefault("board_cache", BoardCache())
    return found
