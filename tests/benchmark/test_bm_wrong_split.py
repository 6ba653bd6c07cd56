"""wrong_split_hint / match_splits: a file for another track or split is named at once."""

from __future__ import annotations

import json

import pytest

from benchmark import (
    GoldSet,
    SplitMatch,
    ValidationError,
    match_splits,
    parse_predictions,
    wrong_split_hint,
)
from benchmark.limits import max_records


def _compact(gold: GoldSet, track: str, split: str) -> bytes:
    return "".join(json.dumps({"key": e.key, "prediction": "x"}) + "\n"
                   for e in gold.get(track, split).examples).encode()


def _official(gold: GoldSet, track: str, split: str) -> bytes:
    return "".join(json.dumps({"id": e.id, **e.context, "pred_answer": "x"}) + "\n"
                   for e in gold.get(track, split).examples).encode()


def _rejected_keys(data: bytes, gold: GoldSet, track: str, split: str) -> tuple[str, ...]:
    with pytest.raises(ValidationError) as caught:
        parse_predictions(data, gold.get(track, split))
    return caught.value.keys


def test_a_temp_dev_file_sent_as_geo_dev(release_gold: GoldSet) -> None:
    for write in (_compact, _official):
        keys = _rejected_keys(write(release_gold, "temp", "dev"), release_gold, "geo", "dev")
        # The file has more records than geo/dev has examples: it is read up to the cap,
        # whose keys are enough to name the split it was written for.
        assert len(keys) == max_records(len(release_gold.get("geo", "dev")))
        assert wrong_split_hint(keys, release_gold, "geo", "dev") == (
            "none of these keys belong to geo/dev; they match temp/dev")


def test_the_error_itself_will_do(release_gold: GoldSet) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_predictions(_compact(release_gold, "geo", "test"), release_gold.get("geo", "dev"))
    assert wrong_split_hint(caught.value, release_gold, "geo", "dev") == (
        "none of these keys belong to geo/dev; they match geo/test")


def test_a_temp_dev_file_sent_as_temp_test(release_gold: GoldSet) -> None:
    keys = _rejected_keys(_official(release_gold, "temp", "dev"), release_gold, "temp", "test")
    assert wrong_split_hint(keys, release_gold, "temp", "test") == (
        "none of these keys belong to temp/test; they match temp/dev")
    # temp/dev has more examples than temp/test: read up to temp/test's record cap.
    assert match_splits(keys, release_gold)[0] == SplitMatch(
        "temp", "dev", max_records(len(release_gold.get("temp", "test"))))


def test_keys_where_they_belong_need_no_hint(release_gold: GoldSet) -> None:
    keys = [e.key for e in release_gold.get("geo", "test").examples]
    assert wrong_split_hint(keys, release_gold, "geo", "test") is None
    # A few typos among the right keys: the details say it, no lead line is needed.
    assert wrong_split_hint(keys[:-2] + ["1|nowhere", "2|nowhere"], release_gold,
                            "geo", "test") is None
    assert wrong_split_hint([], release_gold, "geo", "test") is None


def test_keys_that_belong_nowhere(release_gold: GoldSet) -> None:
    assert wrong_split_hint(["nothing", "at all"], release_gold, "temp", "test") == (
        "none of these keys belong to temp/test, nor to any other track and split")
    assert match_splits(["nothing"], release_gold) == []


def test_mostly_another_split(release_gold: GoldSet) -> None:
    dev = [e.key for e in release_gold.get("temp", "dev").examples]
    test = [e.key for e in release_gold.get("temp", "test").examples][:10]
    hint = wrong_split_hint(dev + test, release_gold, "temp", "test")
    assert hint == (f"{len(dev)} of these {len(dev) + 10} keys do not belong to temp/test; "
                    f"{len(dev)} of them match temp/dev")
