"""Query modification and the items of each track (synthetic and, if present, real data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from baselines.queries import modify_query
from baselines.release import (
    FINETUNE_CONTEXTS,
    ReleaseError,
    context_items,
    load_id_items,
    load_qa_items,
)
from benchmark.tracks import query_as_of, query_in_location, query_previously

REAL = os.environ.get("SITUATEDQA_DATA")
needs_real = pytest.mark.skipif(not REAL or not Path(REAL).is_dir(),
                                reason="SITUATEDQA_DATA not set")


def test_templates() -> None:
    assert query_as_of("who won", {"date": "2019"}) == "who won as of 2019"
    assert (query_in_location("what is the capital", {"location": "New York"})
            == "what is the capital in new york")
    assert query_previously("who is the ceo", {"which": "previous"}) == "previously who is the ceo"
    assert query_previously("who is the ceo", {"which": "current"}) == "who is the ceo"
    row = {"question": "q", "which": "current"}
    assert modify_query("curprev", row, "query-modified") == "q"
    assert modify_query("curprev", {**row, "which": "previous"}, "finetuned") == "previously q"
    assert modify_query("curprev", {**row, "which": "previous"}, "unmodified") == "q"
    assert modify_query("temp", {"question": "q", "date": "2020"}, "finetuned") == "q as of 2020"
    assert modify_query("present", {"question": "q"}, "query-modified") == "q"


def test_finetuning_context_types_come_from_the_tracks(release_dir: Path) -> None:
    """One model per context type of each fine-tuned track: temp, geo, and curprev's sides."""
    assert FINETUNE_CONTEXTS == ("temp", "geo", "current", "previous")
    previous = context_items(release_dir, "previous", "dev")
    assert previous and {i.record["which"] for i in previous} == {"previous"}
    assert all(i.query.startswith("previously ") for i in previous)
    current = context_items(release_dir, "current", "dev")
    assert current and {i.record["which"] for i in current} == {"current"}
    temp = context_items(release_dir, "temp", "dev")
    assert len(temp) == len(load_qa_items(release_dir, "temp", "dev", "unmodified"))
    with pytest.raises(ReleaseError, match="not a fine-tuning context type"):
        context_items(release_dir, "present", "dev")


def test_synthetic_items_carry_no_gold(release_dir: Path) -> None:
    for track in ("temp", "geo", "present", "curprev"):
        for item in load_qa_items(release_dir, track, "test", "query-modified"):
            assert "answer" not in item.record and "any_answer" not in item.record


@needs_real
@pytest.mark.parametrize("track", ["temp", "geo"])
@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_query_modification_reproduces_every_edited_question(track: str, split: str) -> None:
    path = Path(REAL or "") / "qa_data" / f"{track}.{split}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    items = load_qa_items(Path(REAL or ""), track, split, "query-modified")
    assert len(items) == len(rows)
    mismatches = [(item.query, row["edited_question"]) for item, row in
                  zip(items, rows, strict=True)
                  if item.query != row["edited_question"]]
    assert mismatches == []


@needs_real
def test_real_track_sizes() -> None:
    data = Path(REAL or "")
    assert len(load_qa_items(data, "temp", "test", "unmodified")) == 2795
    assert len(load_qa_items(data, "geo", "test", "unmodified")) == 506
    assert len(load_qa_items(data, "present", "test", "unmodified")) == 267 + 209
    curprev = load_qa_items(data, "curprev", "test", "query-modified")
    assert sum(i.record["which"] == "current" for i in curprev) == 529
    assert sum(i.record["which"] == "previous" for i in curprev) == 373
    temp_id = load_id_items(data, "temp-id", "test")
    geo_id = load_id_items(data, "geo-id", "test")
    assert (len(temp_id), sum(bool(i.label) for i in temp_id)) == (1928, 533)
    assert (len(geo_id), sum(bool(i.label) for i in geo_id)) == (367, 137)
    temp_keys = {i.key for i in load_qa_items(data, "temp", "test", "unmodified")}
    assert len(temp_keys) == 2795
    assert len({i.key for i in load_qa_items(data, "geo", "test", "unmodified")}) == 506
