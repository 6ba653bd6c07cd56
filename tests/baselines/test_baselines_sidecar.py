"""The sidecar of a run names the code the run started on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines import output
from baselines.output import RunMeta, meta_path


def test_the_sidecar_names_the_code_at_the_start_of_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = RunMeta("nn-train", "temp", "dev", {"setting": None}, seed=0)
    started_on = meta.code
    # the checkout moves on while a long run goes (a commit lands, a file is edited)
    monkeypatch.setattr(output, "code_version", lambda: "git:a-later-commit")
    out = tmp_path / "pred.jsonl"
    out.write_text("", encoding="utf-8")
    meta.write(out, records_written=0, records_resumed=0)
    written = json.loads(meta_path(out).read_text(encoding="utf-8"))
    assert written["code_version"] == started_on != "git:a-later-commit"
