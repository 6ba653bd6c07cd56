"""benchmark.incremental: rescoring from a parent's outcomes equals score() on the new gold.

Random gold updates (answers and any_answer changed, examples added and retired, labels
flipped) on top of random updates, and random prediction files made for the first gold:
the incremental result must be score()'s on the new gold, bit for bit, metric, CI, count,
outcome and F1 alike.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import Example, GoldSplit, Predictions, ScoreResult, score
from benchmark import incremental as inc
from benchmark.scoring import CORRECT, LENIENT_SCORED
from benchmark.tracks import track_info
from benchmark.versions import realign

RESAMPLES = 40
#: Dates, ranges, numbers (as digits and words) and plain words: every lenient path is taken.
TEXTS = ("2019", "March 2019", "12 March 2019", "1998", "the 1990s", "three", "3", "about 40",
         "40", "the red fox", "red fox jumps", "fox", "Barack Obama", "obama", "May 2001",
         "2001", "")
ANSWERS = st.lists(st.sampled_from([t for t in TEXTS if t]), min_size=1, max_size=3,
                   unique=True).map(tuple)
PREDICTION = st.one_of(st.sampled_from(TEXTS), st.text(max_size=12))


def qa_example(number: int, track: str, answers: tuple[str, ...], extra: tuple[str, ...],
               partition: str) -> Example:
    """A QA example; its any_answer adds `extra` to its answers."""
    return Example(key=f"{number}|k", id=number, question=f"q{number}?", answers=answers,
                   any_answers=answers + tuple(a for a in extra if a not in answers),
                   partitions=(partition,))


def id_example(number: int, label: bool, source: str) -> Example:
    """An identification example."""
    return Example(key=f"{number}", id=number, question=f"q{number}?", label=label,
                   partitions=("dependent" if label else "independent",), source=source)


@st.composite
def new_example(draw: st.DrawFn, track: str, number: int) -> Example:
    """A random example of a track."""
    if track_info(track).identification:
        return id_example(number, draw(st.booleans()),
                          draw(st.sampled_from(["nq.open", "squad.open"])))
    return qa_example(number, track, draw(ANSWERS), draw(ANSWERS),
                      draw(st.sampled_from(track_info(track).partitions)))


@st.composite
def updated(draw: st.DrawFn, gold: GoldSplit, first_new: int) -> GoldSplit:
    """A random update of a split: each example kept, changed or retired; some added."""
    examples = []
    for example in gold.examples:
        action = draw(st.sampled_from(["keep", "keep", "keep", "change", "retire"]))
        if action == "retire":
            continue
        if action == "change":
            if example.label is not None:
                label = not example.label
                example = replace(example, label=label,
                                  partitions=("dependent" if label else "independent",))
            else:
                which = draw(st.sampled_from(["answers", "any", "both"]))
                answers = draw(ANSWERS) if which != "any" else example.answers
                any_answers = (answers + draw(ANSWERS) if which != "answers"
                               else example.any_answers)
                example = replace(example, answers=answers, any_answers=any_answers)
        examples.append(example)
    added = draw(st.integers(0, 3))
    examples += [draw(new_example(gold.track, first_new + i)) for i in range(added)]
    return GoldSplit(gold.track, gold.split, examples)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[GoldSplit, GoldSplit, GoldSplit, Predictions]:
    """(inputs the file was made for, parent gold, new gold, the file's predictions)."""
    track = draw(st.sampled_from(["temp", "present", "temp-id"]))
    size = draw(st.integers(1, 14))
    inputs = GoldSplit(track, "dev", [draw(new_example(track, i)) for i in range(size)])
    parent = draw(updated(inputs, 100))
    new = draw(updated(parent, 200))
    if inputs.is_identification:
        labels = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
        scores = (np.array(draw(st.lists(st.floats(0, 1), min_size=size, max_size=size)),
                           dtype=np.float64) if draw(st.booleans()) else None)
        predictions = Predictions(track, "dev", "jsonl", labels=labels, scores=scores,
                                  keys=inputs.keys)
    else:
        answers = tuple(draw(st.lists(PREDICTION, min_size=size, max_size=size)))
        predictions = Predictions(track, "dev", "jsonl", answers=answers, keys=inputs.keys)
    return inputs, parent, new, predictions


def same(a: ScoreResult, b: ScoreResult) -> None:
    """Two results equal in every metric, CI, count, outcome and F1 (NaN equal to NaN)."""
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)
    assert a.outcomes.dtype == b.outcomes.dtype and np.array_equal(a.outcomes, b.outcomes)
    for mine, theirs in ((a.f1, b.f1), (a.f1_any, b.f1_any)):
        assert (mine is None) == (theirs is None)
        if mine is not None and theirs is not None:
            assert mine.tobytes() == theirs.tobytes()


def incremental_result(inputs: GoldSplit, parent: GoldSplit, new: GoldSplit,
                       predictions: Predictions) -> ScoreResult:
    """The new score as a rescore job gets it: from the stored parent row and predictions."""
    parent_row = score(parent, realign(predictions, parent), resamples=RESAMPLES)
    stored = inc.decode_predictions(inc.encode_predictions(predictions, inputs))
    assert stored.keys_sha256 == inc.split_digest(inputs)
    f1_blob = inc.encode_f1(parent_row.f1, parent_row.f1_any)
    f1 = inc.decode_f1(f1_blob, len(parent)) if f1_blob is not None else None
    codes = np.frombuffer(np.asarray(parent_row.outcomes, dtype=np.uint8).tobytes(), np.uint8)
    return inc.rescore(parent, new, codes, stored, inputs.keys, f1, resamples=RESAMPLES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_incremental_equals_score_on_the_new_gold(
        case: tuple[GoldSplit, GoldSplit, GoldSplit, Predictions]) -> None:
    inputs, parent, new, predictions = case
    same(incremental_result(inputs, parent, new, predictions),
         score(new, realign(predictions, new), resamples=RESAMPLES))


def _qa_case() -> tuple[GoldSplit, GoldSplit, Predictions]:
    parent = GoldSplit("temp", "dev", [
        qa_example(i, "temp", ("2019",), ("March 2019",), "sampled") for i in range(6)])
    new = GoldSplit("temp", "dev", [replace(parent.examples[0], answers=("1998",),
                                            any_answers=("1998",)), *parent.examples[1:]])
    predictions = Predictions("temp", "dev", "jsonl", answers=("1998",) + ("2019",) * 5,
                              keys=parent.keys)
    return parent, new, predictions


def test_only_the_changed_examples_are_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, new, predictions = _qa_case()
    sizes: list[int] = []
    real = inc.outcome_codes

    def counting(gold: GoldSplit, probe: Predictions) -> Any:
        sizes.append(len(gold))
        return real(gold, probe)

    monkeypatch.setattr(inc, "outcome_codes", counting)
    result = incremental_result(parent, parent, new, predictions)
    assert sizes == [1]  # the one changed example, not the six
    assert result.metrics["em"] == 100.0


def test_unusable_parent_rows_are_refused() -> None:
    parent, new, predictions = _qa_case()
    row = score(parent, predictions, resamples=RESAMPLES)
    stored = inc.decode_predictions(inc.encode_predictions(predictions, parent))
    f1 = (row.f1, row.f1_any)
    assert row.f1 is not None and row.f1_any is not None
    with pytest.raises(ValueError, match="outcomes"):  # a row of another length
        inc.rescore(parent, new, row.outcomes[:-1], stored, parent.keys, f1)
    with pytest.raises(ValueError, match="lenient"):  # scored before the lenient metrics
        inc.rescore(parent, new, row.outcomes & CORRECT, stored, parent.keys, f1)
    with pytest.raises(ValueError, match="lenient"):  # no F1 stored
        inc.rescore(parent, new, row.outcomes, stored, parent.keys, None)
    with pytest.raises(ValueError, match="keys"):  # predictions of other inputs
        inc.rescore(parent, new, row.outcomes, stored, parent.keys[:-1], f1)
    assert bool(np.all(row.outcomes & LENIENT_SCORED))


def test_f1_of_tracks_without_any_answer_is_stored_once() -> None:
    values = np.array([0.0, 0.5, 1.0])
    blob = inc.encode_f1(values, values)
    assert blob is not None
    assert len(inc.encode_f1(values, values + 0.0) or b"") == len(blob)
    decoded = inc.decode_f1(blob, 3)
    assert decoded is not None and decoded[0].tobytes() == values.tobytes()
    assert inc.decode_f1(blob, 4) is None
    two = inc.encode_f1(values, np.array([1.0, 1.0, 1.0]))
    assert two is not None and (got := inc.decode_f1(two, 3)) is not None
    assert got[1].tolist() == [1.0, 1.0, 1.0]


def test_a_parent_with_every_example_retired() -> None:
    inputs = GoldSplit("temp", "dev", [qa_example(0, "temp", ("2019",), (), "sampled")])
    parent = GoldSplit("temp", "dev", [])
    new = GoldSplit("temp", "dev", [qa_example(0, "temp", ("2019",), (), "sampled"),
                                    qa_example(1, "temp", ("3",), ("three",), "start")])
    predictions = Predictions("temp", "dev", "jsonl", answers=("2019",), keys=inputs.keys)
    result = incremental_result(inputs, parent, new, predictions)
    same(result, score(new, realign(predictions, new), resamples=RESAMPLES))
    assert result.metrics["em"] == 50.0
