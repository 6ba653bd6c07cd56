"""The track registry is the one source: gold, formats and the baselines agree with it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from baselines.metrics import binary_metrics, em_score
from baselines.release import ReleaseError, load_id_items, load_qa_items
from benchmark import METRIC_LABELS, TRACK_INFO, TRACKS, GoldError, GoldSet
from benchmark.formats import natural_key
from benchmark.tracks import BuildOptions, read_track


def test_every_declaration_is_complete() -> None:
    for name, info in TRACK_INFO.items():
        assert info.name == name and info.primary in info.metrics
        for metric in (*info.metrics, *info.lenient_metrics):
            assert metric in METRIC_LABELS, (name, metric)
        # A partition metric names a declared partition (em_any reads any_answer instead).
        for metric in info.metrics:
            if metric.startswith("em_") and metric != "em_any":
                assert metric.removeprefix("em_") in info.partitions, (name, metric)


def test_keys_are_id_then_context_values_in_declared_order() -> None:
    assert TRACK_INFO["temp"].key(12, {"date_type": "start", "date": "2019"}) == "12|2019|start"
    assert TRACK_INFO["geo"].key(5, {"location": "New York"}) == "5|New York"
    assert TRACK_INFO["curprev"].key(7, {"which": "previous"}) == "7|previous"
    assert TRACK_INFO["temp-id"].key(9, {}) == "9"
    # The formats name a record's key from whichever track's context fields it carries.
    assert natural_key({"id": "12", "date": "2019", "date_type": "start"}) == "12|2019|start"
    assert natural_key({"id": 7, "which": "current", "pred_answer": "x"}) == "7|current"
    assert natural_key({"id": 3, "pred_answer": "x"}) == "3"


def test_partition_rules() -> None:
    assert TRACK_INFO["temp"].partitions_of({"date_type": "sampled_date"}) == ("sampled",)
    assert TRACK_INFO["geo"].partitions_of({"location": "U.S.A."}) == ("common", "other_common")
    assert TRACK_INFO["geo"].partitions_of({"location": "Kenya"}) == ("rare",)
    assert TRACK_INFO["geo-id"].partitions_of({}, True) == ("dependent",)
    assert TRACK_INFO["present"].partitions_of({}, None, ["stable"]) == ("stable",)
    with pytest.raises(ValueError, match="'partitions' must be one of"):
        TRACK_INFO["present"].partitions_of({}, None, ["current"])
    with pytest.raises(ValueError, match="current/previous"):
        TRACK_INFO["curprev"].partitions_of({"which": "next"})
    with pytest.raises(ValueError, match="unknown date_type"):
        TRACK_INFO["temp"].partitions_of({"date_type": "someday"})


def test_labels_are_declared_with_the_track() -> None:
    assert TRACK_INFO["temp"].label("em_static") == "Static"
    assert TRACK_INFO["geo"].label("em_other_common") == "Other common"
    assert TRACK_INFO["geo"].label("em_equiv_us") == "EM equiv US"
    assert TRACK_INFO["temp"].label("f1_any") == "Token F1 Any"
    assert TRACK_INFO["temp-id"].label("f1_marco") == "F1 (MS MARCO)"
    assert TRACK_INFO["temp-id"].label("recall_nq_passage") == "Recall (NQ-Passage)"
    assert TRACK_INFO["temp-id"].label("f1_newsource") == "F1 (newsource)"  # undeclared
    assert TRACK_INFO["temp-id"].label("auc") == "ROC AUC"


@pytest.mark.parametrize(("change", "problem"), [
    ({"plots": ("pie",)}, "unknown plot kinds"),
    ({"plots": ("groups",)}, "groups plot"),
    ({"partition_labels": {"static": "Static"}}, "labelled partition"),
    ({"primary": "f1"}, "primary metric"),
    ({"context_type_field": "date"}, "closed set of values"),
])
def test_a_declaration_missing_what_the_server_shows_is_refused(change: dict[str, object],
                                                                problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        dataclasses.replace(TRACK_INFO["temp"], **change)  # type: ignore[arg-type]


def test_release_examples_follow_their_declaration(release_gold: GoldSet) -> None:
    for (track, _), gold in release_gold.splits.items():
        info = TRACK_INFO[track]
        for example in gold.examples:
            assert tuple(example.context) == info.context_fields
            assert example.key == info.key(example.id, example.context)
            assert (example.label is not None) == info.identification
            given = example.partitions if info.partition_rule is None else None
            assert info.partitions_of(example.context, example.label, given) \
                == example.partitions


def test_baseline_items_are_the_gold_examples(release_dir: Path,
                                              release_gold: GoldSet) -> None:
    for track in TRACKS:
        gold = release_gold.get(track, "test")
        if TRACK_INFO[track].identification:
            items = load_id_items(release_dir, track, "test")
            assert [(i.id, i.label) for i in items] == [(e.id, e.label) for e in gold]
        else:
            keys = ["|".join(map(str, item.key))
                    for item in load_qa_items(release_dir, track, "test", "unmodified")]
            assert sorted(keys) == sorted(gold.keys)


def write_release_file(root: Path, lines: list[str]) -> Path:
    """qa_data/geo.dev.jsonl of a tiny release under root."""
    path = root / "qa_data" / "geo.dev.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_bad_release_line_is_named(tmp_path: Path) -> None:
    good = {"id": 1, "question": "q?", "location": "India", "answer": ["a"],
            "any_answer": ["a", "b"]}
    path = write_release_file(tmp_path, [json.dumps(good), "", json.dumps(
        {k: v for k, v in good.items() if k != "any_answer"})])
    with pytest.raises(GoldError, match=rf"{path}:3: record has no field 'any_answer'"):
        read_track(tmp_path, "geo", "dev")
    with pytest.raises(ReleaseError, match=rf"{path}:3: record has no field"):
        load_qa_items(tmp_path, "geo", "dev", "unmodified")
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(GoldError, match=rf"{path}:2: invalid JSON"):
        read_track(tmp_path, "geo", "dev")
    path.write_text(json.dumps(good) + "\n")
    [example] = read_track(tmp_path, "geo", "dev", BuildOptions())
    assert (example.key, example.partitions, example.any_answers) == (
        "1|India", ("common", "india"), ("a", "b"))
    with pytest.raises(GoldError, match="release file not found"):
        read_track(tmp_path, "temp", "dev")


def test_baseline_metrics_are_the_benchmarks() -> None:
    # Normalization: case, articles and punctuation go; "the beatles" is not "beatles band".
    assert em_score(["The Beatles!", "beatles band", "  PARIS "],
                    [["beatles"], ["the beatles"], ["Paris", "London"]]) == pytest.approx(200 / 3)
    # 2 TP, 1 FP, 1 FN, 1 TN: precision 2/3, recall 2/3, F1 2/3, accuracy 3/5.
    metrics = binary_metrics([True, True, False, True, False], [True, True, True, False, False])
    assert metrics == pytest.approx({"accuracy": 60.0, "precision": 200 / 3,
                                     "recall": 200 / 3, "f1": 200 / 3})
