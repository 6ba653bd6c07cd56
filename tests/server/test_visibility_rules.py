"""One visibility service decides who may see or change a submission (pages and API alike)."""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from situatedqa_server.extensions import db
from situatedqa_server.models import Submission, User
from situatedqa_server.services import visibility

OWN_TEAM, OTHER_TEAM = 1, 2
#: (name, is_admin, team) of the visitors; None: anonymous.
VISITORS = {"anonymous": None, "member": (False, OWN_TEAM), "outsider": (False, OTHER_TEAM),
            "organizer": (True, OTHER_TEAM)}
STATES = list(itertools.product(("private", "public"), (False, True), (False, True)))


def visitor(name: str) -> User | None:
    """A transient user of the named kind."""
    kind = VISITORS[name]
    return None if kind is None else User(is_admin=kind[0], team_id=kind[1])


def submission(state: tuple[str, bool, bool], id_: int = 1) -> Submission:
    """A transient submission of OWN_TEAM: (visibility, hidden, deleted)."""
    shown, hidden, deleted = state
    return Submission(id=id_, team_id=OWN_TEAM, visibility=shown, hidden=hidden,
                      deleted_at=datetime(2026, 1, 1) if deleted else None)


# Expected answers written out by hand: (visitor, visibility, hidden, deleted) -> (see, change).
EXPECTED = {
    **{(v, s, h, True): (False, False) for v in VISITORS for s, h, _ in STATES},
    ("anonymous", "private", False, False): (False, False),
    ("anonymous", "private", True, False): (False, False),
    ("anonymous", "public", False, False): (True, False),
    ("anonymous", "public", True, False): (False, False),
    ("outsider", "private", False, False): (False, False),
    ("outsider", "private", True, False): (False, False),
    ("outsider", "public", False, False): (True, False),
    ("outsider", "public", True, False): (False, False),
    **{("member", s, h, False): (True, True) for s in ("private", "public") for h in (0, 1)},
    **{("organizer", s, h, False): (True, True) for s in ("private", "public") for h in (0, 1)},
}


@pytest.mark.parametrize("who", list(VISITORS))
@pytest.mark.parametrize("state", STATES, ids=lambda s: "-".join(map(str, s)))
def test_may_see_and_may_change(who: str, state: tuple[str, bool, bool]) -> None:
    """Owners and organizers see and change any live submission; others see published,
    unhidden ones and change none; deleted ones are gone for everyone."""
    user, sub = visitor(who), submission(state)
    assert (visibility.may_see(user, sub), visibility.may_change(user, sub)) == \
        EXPECTED[(who, *state)]


@pytest.mark.parametrize("who", ["anonymous", "member", "outsider"])
def test_seen_clause_selects_what_may_see_allows(who: str) -> None:
    """The SQL form picks exactly the rows may_see allows (pickers and pages agree)."""
    engine = create_engine("sqlite://")
    db.Model.metadata.create_all(engine)  # SQLite leaves foreign keys unchecked here
    rows = [submission(state, i + 1) for i, state in enumerate(STATES)]
    with Session(engine) as session:
        for row in rows:
            row.user_id, row.track, row.split, row.file_sha256 = 1, "temp", "dev", "0" * 64
            row.filename, row.format, row.method_name = "f.jsonl", "jsonl", "m"
            session.add(row)
        session.commit()
        picked = set(session.scalars(select(Submission.id).where(
            visibility.seen_clause(visitor(who)))))
        allowed = {row.id for row in rows if visibility.may_see(visitor(who), row)}
    assert picked == allowed
    assert picked == {i + 1 for i, (s, h, d) in enumerate(STATES)
                      if not d and (who == "member" or (s == "public" and not h))}
