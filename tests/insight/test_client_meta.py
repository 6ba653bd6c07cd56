"""`situatedqa submit --meta`: an unknown field is refused, named with the allowed ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from benchmark import GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission

from .test_client import live, run, write  # noqa: F401  (the live fixture, by name)


def test_unknown_meta_key_is_refused_naming_it(live: dict[str, Any], tmp_path: Path,  # noqa: F811
                                               release_gold: GoldSet) -> None:
    from .conftest import prediction_file

    gold = release_gold.get("geo", "dev")
    path = write(tmp_path, "geo.dev.jsonl", prediction_file(gold, 10))
    assert run(live, tmp_path, "login", "--token", live["token"]).exit_code == 0
    typo = run(live, tmp_path, "submit", str(path), "--track", "geo", "--split", "dev",
               "--meta", "knowledge_data=2021-02", "--meta", "paper_url=https://x.org/p")
    assert typo.exit_code != 0
    assert "'knowledge_data'" in typo.output
    for allowed in ("knowledge_date", "paper_url", "code_url", "parameter_count"):
        assert allowed in typo.output
    with live["app"].app_context():
        assert db.session.scalar(select(func.count(Submission.id))) == 0  # nothing stored

    good = run(live, tmp_path, "submit", str(path), "--track", "geo", "--split", "dev",
               "--meta", "knowledge_date=2021-02", "--json")
    assert good.exit_code == 0, good.output
    with live["app"].app_context():
        stored = db.session.scalars(select(Submission)).one()
        assert stored.knowledge_date == "2021-02"
