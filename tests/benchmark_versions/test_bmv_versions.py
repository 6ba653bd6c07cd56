"""Update files: validation by line and key, applying to a parent, diffs, counts, realigning."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchmark import Example, GoldSet, GoldSplit, load_gold, parse_predictions, score
from benchmark.versions import (
    UpdateError,
    apply_update,
    change_counts,
    diff_gold,
    fingerprint,
    gold_checksums,
    parse_update,
    realign,
)


def _temp(nq_id: int, date: str, answer: str) -> Example:
    return Example(key=f"{nq_id}|{date}|sampled_year", id=nq_id, question=f"q{nq_id}?",
                   context={"date": date, "date_type": "sampled_year"}, answers=(answer,),
                   any_answers=(answer,), partitions=("sampled",))


def _ident(nq_id: int, label: bool) -> Example:
    return Example(key=str(nq_id), id=nq_id, question=f"q{nq_id}?",
                   partitions=("dependent" if label else "independent",), label=label,
                   source="nq.open")


@pytest.fixture
def parent() -> GoldSet:
    """Temp dev and test with three examples each, and a temp-id dev split."""
    splits = [GoldSplit("temp", split, [_temp(i, "2019", f"a{i}") for i in (1, 2, 3)])
              for split in ("dev", "test")]
    splits.append(GoldSplit("temp-id", "dev", [_ident(7, True), _ident(8, False)]))
    return GoldSet(splits, {"source_fingerprint": "f" * 64})


def _lines(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


UPDATE = {"track": "temp", "split": "dev", "key": "1|2019|sampled_year", "action": "update",
          "answer": ["new"], "reason": "fact changed"}
ADD = {"track": "temp", "split": "test", "key": "4|2022|sampled_year", "action": "add",
       "question": "q4?", "context": {"date": "2022", "date_type": "sampled_year"},
       "answer": ["a4"], "any_answer": ["a4", "b4"], "reason": "new date"}
RETIRE = {"track": "temp", "split": "test", "key": "2|2019|sampled_year", "action": "retire",
          "reason": "ambiguous"}


def test_apply_update_changes_adds_and_retires(parent: GoldSet) -> None:
    records = parse_update(_lines(UPDATE, ADD, RETIRE), parent)
    new = apply_update(parent, records, {"version": "v2"})
    dev, test = new.get("temp", "dev"), new.get("temp", "test")
    assert dev.examples[0].answers == ("new",) and dev.examples[0].any_answers == ("a1",)
    assert [e.key for e in test] == ["1|2019|sampled_year", "3|2019|sampled_year",
                                     "4|2022|sampled_year"]
    assert test.examples[-1].partitions == ("sampled",) and test.examples[-1].id == 4
    assert new.get("temp-id", "dev") is parent.get("temp-id", "dev")
    assert new.meta["version"] == "v2" and len(parent.get("temp", "test")) == 3


def test_diff_and_counts(parent: GoldSet) -> None:
    new = apply_update(parent, parse_update(_lines(UPDATE, ADD, RETIRE), parent))
    changes = diff_gold(parent, new, {("temp", "dev", UPDATE["key"]): "fact changed"})
    assert [(c.split, c.kind) for c in changes] == [
        ("dev", "changed"), ("test", "retired"), ("test", "added")]
    assert changes[0].reason == "fact changed" and changes[1].answers == ()
    counts = change_counts(changes)
    assert counts["temp"]["test"]["all"] == {"retired": 1, "added": 1}
    assert counts["temp"]["dev"]["sampled"] == {"changed": 1}
    assert diff_gold(parent, parent) == []


def test_identification_label_update(parent: GoldSet) -> None:
    record = {"track": "temp-id", "split": "dev", "key": "8", "action": "update",
              "answer": True, "reason": "relabelled"}
    new = apply_update(parent, parse_update(_lines(record), parent))
    example = new.get("temp-id", "dev").examples[1]
    assert example.label is True and example.partitions == ("dependent",)


@pytest.mark.parametrize(("record", "message"), [
    ({**UPDATE, "key": "99|2019|sampled_year"}, "no example with this key"),
    ({**ADD, "key": "1|2019|sampled_year"}, "already exists"),
    ({**UPDATE, "action": "delete"}, "'action' must be one of"),
    ({**UPDATE, "answer": []}, "'answer' must be a non-empty list"),
    ({k: v for k, v in UPDATE.items() if k != "answer"}, "needs 'answer' and/or 'any_answer'"),
    ({**ADD, "context": {"date": "2022"}}, "'context' must have exactly"),
    ({**ADD, "key": "5|2022|sampled_year", "id": 4}, "key must be '4|2022|sampled_year'"),
    ({**UPDATE, "track": "temp-id", "key": "7"}, "must be true or false"),
    ({**UPDATE, "colour": "red"}, "unknown field(s) ['colour']"),
    ({**UPDATE, "split": "train"}, "parent gold has no temp/train"),
])
def test_bad_records_are_named_by_line_and_key(parent: GoldSet, record: dict[str, Any],
                                               message: str) -> None:
    with pytest.raises(UpdateError) as caught:
        parse_update(_lines(RETIRE, record), parent, filename="u.jsonl")
    [problem] = caught.value.problems
    assert message in problem.message
    assert problem.line == 2 and problem.file == "u.jsonl"
    assert problem.key == record["key"]


def test_every_bad_record_is_reported_at_once(parent: GoldSet) -> None:
    text = _lines(UPDATE, UPDATE, {**ADD, "answer": 3}) + "{not json\n"
    with pytest.raises(UpdateError) as caught:
        parse_update(text, parent)
    assert [p.line for p in caught.value.problems] == [2, 3, 4]
    assert "already changed on line 1" in caught.value.problems[0].message
    with pytest.raises(UpdateError, match="no records"):
        parse_update("\n", parent)


def test_saved_version_round_trips_with_checksums(parent: GoldSet, tmp_path: Path) -> None:
    new = apply_update(parent, parse_update(_lines(UPDATE, ADD, RETIRE), parent))
    new.save(tmp_path)
    checksums = gold_checksums(new)
    for name, digest in checksums.items():
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest
    assert diff_gold(new, load_gold(tmp_path)) == []
    assert fingerprint(checksums) != fingerprint(gold_checksums(parent))


def test_realign_drops_retired_and_counts_added_as_wrong(parent: GoldSet) -> None:
    old = parent.get("temp", "test")
    data = _lines(*({"key": e.key, "prediction": e.answers[0]} for e in old)).encode()
    predictions = parse_predictions(data, old)
    new = apply_update(parent, parse_update(_lines(ADD, RETIRE), parent)).get("temp", "test")
    result = score(new, realign(predictions, new), resamples=0)
    assert result.n == 3 and result.counts["em"] == 3
    assert result.metrics["em"] == pytest.approx(200 / 3)


def test_realign_identification_missing_label_is_wrong(parent: GoldSet) -> None:
    old = parent.get("temp-id", "dev")
    data = _lines({"key": "7", "score": 0.9}, {"key": "8", "score": 0.1}).encode()
    predictions = parse_predictions(data, old)
    added = {"track": "temp-id", "split": "dev", "key": "9", "action": "add", "question": "q9?",
             "context": {}, "answer": False, "reason": "new"}
    new = apply_update(parent, parse_update(_lines(added), parent)).get("temp-id", "dev")
    aligned = realign(predictions, new)
    assert aligned.labels is not None and aligned.scores is not None
    assert list(aligned.labels) == [True, False, True] and aligned.scores[-1] == 1.0
