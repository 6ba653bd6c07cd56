"""The paper-reported numbers: schema and a few values copied by hand from the paper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines.reported import (
    TRACK_METRICS,
    ReportedSchemaError,
    load_reported,
    parse_entry,
    select,
)


def find(track: str, split: str, method: str, table: int, setting: str | None = None,
         date: str | None = None) -> dict[str, float]:
    """Metrics of the unique matching entry."""
    found = [e for e in load_reported() if e.track == track and e.split == split
             and e.method == method and e.source.table == table
             and (setting is None or e.source.setting.startswith(setting))
             and (date is None or e.knowledge_source_date == date)]
    assert len(found) == 1, found
    return found[0].metrics


def test_hand_copied_values() -> None:
    assert find("temp-id", "test", "BERT-base", 4)["f1"] == 87.6
    assert find("geo-id", "dev", "BERT-large", 4)["precision"] == 80.3
    assert find("temp-id", "test", "Random", 4) == {"accuracy": 44.8, "precision": 28.3,
                                                    "recall": 64.9, "f1": 39.4}
    assert find("geo-id", "test", "Human", 4)["recall"] == 88.9
    dpr_ft = find("temp", "test", "DPR", 5, "finetuned")
    assert (dpr_ft["em_static"], dpr_ft["em_start"], dpr_ft["em"]) == (39.8, 24.9, 23.0)
    assert dpr_ft["em_any"] == 29.7
    bart_geo = find("geo", "test", "BART", 5, "unmodified")
    assert (bart_geo["em_common"], bart_geo["em_rare"], bart_geo["em_us"]) == (9.4, 4.6, 23.8)
    assert bart_geo["em_other_common"] == 6.4
    assert find("curprev", "test", "BART", 8, "finetuned") == {
        "em_current": 18.9, "em_previous": 8.0, "em": 14.4}
    assert find("present", "test", "DPR", 9, "unmodified", "2018-12-20") == {
        "em_stable": 27.3, "em_updated": 7.2}
    assert find("present", "test", "BART", 9, "finetuned")["em_updated"] == 6.7


def test_schema_and_coverage() -> None:
    entries = load_reported()
    assert {e.source.table for e in entries} == {4, 5, 8, 9}
    for entry in entries:
        assert set(entry.metrics) <= TRACK_METRICS[entry.track]
    assert all("em" not in e.metrics for e in select(entries, "present"))
    assert len(select(entries, "temp-id", "dev")) == 4 and len(select(entries, "geo-id")) == 4
    humans = [e for e in entries if e.human]
    assert {e.track for e in humans} == {"temp-id", "geo-id", "temp", "geo", "curprev"}
    assert all(e.model_type == "other" for e in humans)
    assert all(e.split == "test" for e in entries if e.source.table != 4)
    assert all(e.fine_tuned == e.source.setting.startswith("finetuned")
               for e in entries if e.source.table in (5, 8, 9))


def test_bad_entries_are_rejected(tmp_path: Path) -> None:
    good = load_reported()[0]
    base = {"id": "x", "source": {"table": 4, "row": "r", "setting": "s"}, "track": good.track,
            "split": "test", "method": "m", "model_type": "other", "fine_tuned": False,
            "query_modified": False, "human": False, "knowledge_source_date": None,
            "metrics": {"f1": 50.0}}
    assert parse_entry(base).metrics == {"f1": 50.0}
    for bad in ({"metrics": {"em": 5.0}}, {"metrics": {"f1": 150.0}}, {"split": "val"},
                {"model_type": "neural"}, {"human": "no"}):
        with pytest.raises(ReportedSchemaError):
            parse_entry({**base, **bad})
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"entries": [base, base]}))
    with pytest.raises(ReportedSchemaError):
        load_reported(path)
