"""Gold answers as predictions score 100; alternate-context answers score low EM, high EM Any."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bm_helpers import gz, jsonl, parse

from benchmark import GoldSet, normalize_answer, score
from benchmark.gold import Example, read_jsonl

QA_TRACKS = ("temp", "geo", "present", "curprev")


def _gold_prediction_file(track: str, examples: tuple[Example, ...]) -> bytes:
    """The first gold answer of every example, in the track's official record format."""
    records = []
    for e in examples:
        record = {"id": e.id, **e.context, "pred_answer": e.answers[0]}
        if track == "temp":  # date_type and date are context fields already; keep the id
            record["question"] = e.question
        records.append(record)
    return jsonl(records)


@pytest.mark.parametrize("split", ["dev", "test"])
@pytest.mark.parametrize("track", QA_TRACKS)
def test_gold_answers_score_100_everywhere(release_gold: GoldSet, track: str, split: str) -> None:
    gold = release_gold.get(track, split)
    result = score(gold, parse(_gold_prediction_file(track, gold.examples), gold), resamples=0)
    assert result.n == len(gold)
    for name, value in result.metrics.items():
        assert value == 100.0, (track, split, name)
    # Every partition is non-empty, so these hundreds mean something.
    assert all(count > 0 for count in result.counts.values())


def test_official_temp_file_with_gold_fields_is_scored_on_our_gold(
    release_gold: GoldSet, release_dir: Path
) -> None:
    """The released qa_data file plus pred_answer: upload gold fields are ignored."""
    gold = release_gold.get("temp", "test")
    records = read_jsonl(release_dir / "qa_data" / "temp.test.jsonl")
    for r in records:
        r["pred_answer"] = r["answer"][0]
        r["answer"] = ["tampered"]  # an upload's own gold must never be trusted
        r["any_answer"] = ["tampered"]
    result = score(gold, parse(gz(jsonl(records)), gold), resamples=0)
    assert result.metrics["em"] == 100.0
    for r in records:
        r["pred_answer"] = "tampered"
    assert score(gold, parse(jsonl(records), gold), resamples=0).metrics["em"] == 0.0


@pytest.mark.parametrize(("track", "split"), [("temp", "test"), ("geo", "test"),
                                              ("temp", "dev"), ("geo", "dev")])
def test_alternate_context_answers(release_gold: GoldSet, track: str, split: str) -> None:
    gold = release_gold.get(track, split)
    predictions = {}
    with_alternate = 0
    empty_gold = 0  # examples without an alternate whose gold normalizes to "" (data noise)
    for e, normalized in zip(gold.examples, gold.normalized_answers, strict=True):
        alternates = [a for a in e.any_answers if normalize_answer(a) not in normalized]
        if alternates:
            with_alternate += 1
            predictions[e.key] = alternates[0]
        else:
            predictions[e.key] = ""
            empty_gold += "" in normalized
    result = score(gold, parse(json.dumps(predictions).encode(), gold), resamples=0)
    n = len(gold)
    assert result.metrics["em"] == pytest.approx(100.0 * empty_gold / n)
    assert result.metrics["em"] < 1.0
    assert result.metrics["em_any"] == pytest.approx(100.0 * (with_alternate + empty_gold) / n)
    assert result.metrics["em_any"] > 60.0
    if track == "geo" and split == "test":
        assert result.metrics["em_any"] == 100.0  # every geo test example has an alternate


@pytest.mark.parametrize("track", ["temp-id", "geo-id"])
def test_gold_labels_score_100(release_gold: GoldSet, track: str) -> None:
    gold = release_gold.get(track, "test")
    records = [{"id": e.id, "label": "yes" if e.label else "no", "score": float(bool(e.label))}
               for e in gold.examples]
    result = score(gold, parse(jsonl(records), gold), resamples=0)
    for name, value in result.metrics.items():
        assert value == 100.0, name
    if track == "temp-id":
        assert {"f1_nq_passage", "f1_nq_table", "f1_marco", "f1_webq"} <= result.metrics.keys()


@pytest.mark.parametrize(("track", "split"), [("temp", "test"), ("geo", "dev")])
def test_normalized_answer_sets_are_each_examples_answers_normalized(
        release_gold: GoldSet, track: str, split: str) -> None:
    """What EM compares a prediction with. (How much memory they share:
    scripts/bench_gold_memory.py.)"""
    gold = release_gold.get(track, split)
    for sets, lists in ((gold.normalized_answers, [e.answers for e in gold]),
                        (gold.normalized_any_answers,
                         [e.any_answers or e.answers for e in gold])):
        assert sets == tuple(frozenset(map(normalize_answer, a)) for a in lists)
