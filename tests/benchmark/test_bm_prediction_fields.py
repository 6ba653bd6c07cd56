"""Which field of a record is the prediction: the official classifier's `pred_label` over a
gold `label`; and line ends as the official scripts read them (bare CR included)."""

from __future__ import annotations

import json

import pytest
from bm_helpers import jsonl, parse, score_bytes

from benchmark import GoldSplit, ValidationError


def classifier_records(gold: GoldSplit, predicted: list[int]) -> list[dict[str, object]]:
    """What the released id_baselines/classifier.py writes: each data record (gold `label`
    included, as its README documents it) plus an integer `pred_label`."""
    return [{"question": e.question, "source_dataset": e.source, "id": e.id,
             "is_dependent": "yes" if e.label else "no", "label": int(bool(e.label)),
             "pred_label": p} for e, p in zip(gold.examples, predicted, strict=True)]


def test_pred_label_is_the_prediction_not_the_gold_label(tiny_id: GoldSplit) -> None:
    # Hand-computed: gold is 5 positives then 5 negatives; predicting every question
    # positive gives TP 5, FP 5: accuracy 50, precision 50, recall 100, F1 66.67.
    result = score_bytes(jsonl(classifier_records(tiny_id, [1] * 10)), tiny_id)
    assert result.metrics["accuracy"] == pytest.approx(50.0)
    assert result.metrics["precision"] == pytest.approx(50.0)
    assert result.metrics["recall"] == pytest.approx(100.0)
    assert result.metrics["f1"] == pytest.approx(200 / 3)


def test_gold_label_never_wins_over_a_prediction_field(tiny_id: GoldSplit) -> None:
    wrong = [0 if e.label else 1 for e in tiny_id.examples]  # every prediction wrong
    records = [{"id": e.id, "label": bool(e.label), "prediction": p}
               for e, p in zip(tiny_id.examples, wrong, strict=True)]
    assert score_bytes(jsonl(records), tiny_id).metrics["accuracy"] == 0.0
    keyed = [{"key": e.key, "label": bool(e.label), "pred_label": p}
             for e, p in zip(tiny_id.examples, wrong, strict=True)]
    assert score_bytes(jsonl(keyed), tiny_id).metrics["accuracy"] == 0.0


def test_label_alone_is_still_the_prediction(tiny_id: GoldSplit) -> None:
    records = [{"id": e.id, "label": True, "score": 0.7} for e in tiny_id.examples]
    assert score_bytes(jsonl(records), tiny_id).metrics["recall"] == 100.0


def test_two_prediction_fields_are_refused_naming_line_and_key(tiny_id: GoldSplit) -> None:
    records = [{"id": e.id, "pred_label": 1} for e in tiny_id.examples]
    records[2]["prediction"] = 0
    with pytest.raises(ValidationError) as caught:
        parse(jsonl(records), tiny_id)
    [problem] = caught.value.problems
    assert problem.line == 3 and problem.key == str(tiny_id.examples[2].id)
    assert "'pred_label' and 'prediction'" in problem.message


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"], ids=["cr", "crlf", "lf"])
def test_line_ends_are_read_as_the_official_scripts_read_them(tiny_id: GoldSplit,
                                                              newline: str) -> None:
    records = [{"id": e.id, "label": 1} for e in tiny_id.examples]
    data = newline.join(json.dumps(r) for r in records).encode() + newline.encode()
    assert score_bytes(data, tiny_id).metrics["recall"] == 100.0


def test_bare_cr_problems_keep_their_line_numbers(tiny_id: GoldSplit) -> None:
    lines = [json.dumps({"id": e.id, "label": 1}) for e in tiny_id.examples]
    lines[3] = "{not json"
    with pytest.raises(ValidationError) as caught:
        parse("\r".join(lines).encode(), tiny_id)
    assert [p.line for p in caught.value.problems][0] == 4
