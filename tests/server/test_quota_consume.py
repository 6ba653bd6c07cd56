"""The quota's one-statement lock and count: limits, details, and nothing spent on refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from situatedqa_server.extensions import db
from situatedqa_server.models import QuotaCounter
from situatedqa_server.services import accounts, quotas

from .conftest import PASSWORD, make_app


def counters(team_id: int) -> dict[str, int]:
    """period -> used of a team's geo counters."""
    return dict(db.session.execute(select(QuotaCounter.period, QuotaCounter.used).where(
        QuotaCounter.team_id == team_id, QuotaCounter.track == "geo")).all())


def test_consume_counts_checks_and_spends_nothing_when_refused(
        database: dict[str, Any], gold_dir: Path, tmp_path: Path) -> None:
    app = make_app(database, gold_dir, tmp_path, TEST_DAILY_QUOTA=2, TEST_TOTAL_QUOTA=3)
    with app.app_context():
        user = accounts.create_user("quota", "quota@example.org", PASSWORD)
        db.session.commit()
        team_id = user.team_id
        today = quotas.utc_today().isoformat()
        for _ in range(2):
            quotas.begin_locked()
            quotas.consume(team_id, "geo")
            db.session.commit()
        assert counters(team_id) == {"total": 2, today: 2}
        quotas.begin_locked()
        with pytest.raises(quotas.QuotaExceeded) as refused:
            quotas.consume(team_id, "geo")
        db.session.rollback()
        assert refused.value.details["used_today"] == 2
        assert refused.value.details["used_total"] == 2
        assert refused.value.details["resets_at"]
        assert counters(team_id) == {"total": 2, today: 2}
        # Another day: the total (3) allows one more, then refuses with no reset.
        for row in db.session.scalars(select(QuotaCounter).where(QuotaCounter.period == today)):
            row.period = "2000-01-01"
        db.session.commit()
        quotas.begin_locked()
        quotas.consume(team_id, "geo")
        db.session.commit()
        quotas.begin_locked()
        with pytest.raises(quotas.QuotaExceeded) as refused:
            quotas.consume(team_id, "geo")
        db.session.rollback()
        assert refused.value.details["used_total"] == 3
        assert refused.value.details["resets_at"] is None
        assert counters(team_id) == {"total": 3, today: 1, "2000-01-01": 2}
