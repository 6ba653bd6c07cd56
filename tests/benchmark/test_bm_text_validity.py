"""Text that cannot be stored or shown is rejected at parse time, naming file, line and key.

A lone surrogate (the JSON escape "\\ud800", or its bytes ED A0 80 in a text file) or a NUL
escape in any format, plain or gzip-compressed; and a file that is neither JSONL nor CSV.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from typing import Any

import pytest
from bm_helpers import curprev_example, geo_example, id_example, present_example, temp_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import GoldSplit, ValidationError, parse_predictions

GOLDS = {
    "temp": GoldSplit("temp", "test", [temp_example(1, "2019", "orig", ("a",)),
                                       temp_example(2, "2010", "start", ("b",)),
                                       temp_example(3, "2001", "sampled_year", ("c",))]),
    "geo": GoldSplit("geo", "test", [geo_example(3, "India", ("c",)),
                                     geo_example(3, "Peru", ("d",))]),
    "present": GoldSplit("present", "test", [present_example(1, "stable", ("e",)),
                                             present_example(2, "updated", ("f",))]),
    "curprev": GoldSplit("curprev", "test", [curprev_example(1, "current", ("f",)),
                                             curprev_example(1, "previous", ("g",))]),
}
FORMATS = ["official", "compact", "map", "map-indented", "list", "list-lines", "csv",
           "official-bytes", "compact-bytes"]
plain_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\r\n\x00"),
                     max_size=12)
surrogates = st.integers(0xD800, 0xDFFF).map(chr)


def _official(gold: GoldSplit, position: int, prediction: str) -> dict[str, Any]:
    example = gold.examples[position]
    return {"id": example.id, **example.context, "question": example.question,
            "pred_answer": prediction}


def write(gold: GoldSplit, predictions: list[str], fmt: str) -> tuple[bytes, int]:
    """The file, and where example i is: on line `first + i`, or on line 1 when first is 0."""
    keys = [e.key for e in gold.examples]
    # Only an escape can carry a lone surrogate through valid UTF-8; the "-bytes" formats
    # write it raw, as the bytes Python's surrogatepass codec makes (invalid UTF-8).
    ascii_only = not fmt.endswith("-bytes")
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["key", "prediction"])
        writer.writerows(zip(keys, predictions, strict=True))
        return out.getvalue().encode("utf-8", "surrogatepass"), 2
    if fmt.startswith("map"):
        indent = 2 if fmt == "map-indented" else None
        text = json.dumps(dict(zip(keys, predictions, strict=True)), indent=indent)
        return text.encode(), 2 if indent else 0
    if fmt.startswith("official"):
        records = [_official(gold, i, p) for i, p in enumerate(predictions)]
    else:
        records = [{"key": k, "prediction": p} for k, p in zip(keys, predictions, strict=True)]
    dumped = [json.dumps(r, ensure_ascii=ascii_only) for r in records]
    if fmt == "list":
        return ("[" + ", ".join(dumped) + "]").encode(), 0
    if fmt == "list-lines":
        return ("[\n" + ",\n".join(dumped) + "\n]\n").encode(), 2
    return "".join(d + "\n" for d in dumped).encode("utf-8", "surrogatepass"), 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(track=st.sampled_from(sorted(GOLDS)), fmt=st.sampled_from(FORMATS),
       compress=st.booleans(), data=st.data(), surrogate=surrogates)
def test_a_lone_surrogate_is_rejected_with_file_line_and_key(
        track: str, fmt: str, compress: bool, data: st.DataObject, surrogate: str) -> None:
    gold = GOLDS[track]
    predictions = [data.draw(plain_text) for _ in gold.examples]
    bad = data.draw(st.integers(0, len(gold) - 1))
    cut = data.draw(st.integers(0, len(predictions[bad])))
    predictions[bad] = predictions[bad][:cut] + surrogate + predictions[bad][cut:]
    content, first = write(gold, predictions, fmt)
    with pytest.raises(ValidationError) as caught:
        parse_predictions(gzip.compress(content) if compress else content, gold,
                          filename="upload.jsonl")
    problems = caught.value.problems
    assert len(problems) == 1, problems
    problem = problems[0]
    assert "surrogate" in problem.message
    line = first + bad if first else 1
    assert (problem.file, problem.line, problem.key) == ("upload.jsonl", line,
                                                         gold.examples[bad].key)
    # Nothing of the problem can break a page or a database: it all encodes as UTF-8.
    json.dumps(caught.value.to_json(), ensure_ascii=False).encode("utf-8")
    str(caught.value).encode("utf-8")


@pytest.mark.parametrize("fmt", ["official", "compact", "map-indented", "list-lines"])
def test_a_nul_escape_is_rejected(fmt: str) -> None:
    gold = GOLDS["temp"]
    content, first = write(gold, ["a", "b\x00", "c"], fmt)
    with pytest.raises(ValidationError) as caught:
        parse_predictions(content, gold, filename="p.jsonl")
    [problem] = caught.value.problems
    assert "NUL" in problem.message and "\\u0000" in problem.message
    assert (problem.line, problem.key) == (first + 1, gold.examples[1].key)


def test_a_surrogate_in_a_key_is_shown_escaped() -> None:
    gold = GOLDS["temp"]
    data = b'{"key": "1|2019|orig\\ud800", "prediction": "a"}\n'
    with pytest.raises(ValidationError) as caught:
        parse_predictions(data, gold, filename="p.jsonl")
    problem = caught.value.problems[0]
    assert problem.key == "1|2019|orig\\ud800"  # the six characters of the escape
    assert "lone surrogate (\\ud800)" in problem.message


def test_a_surrogate_pair_is_a_character() -> None:
    gold = GOLDS["present"]
    data = b'{"key": "1", "prediction": "\\ud83d\\ude00"}\n{"key": "2", "prediction": "x"}\n'
    assert parse_predictions(data, gold).answers == ("\U0001f600", "x")


def test_a_surrogate_in_an_identification_label() -> None:
    gold = GoldSplit("temp-id", "test", [id_example(1, True), id_example(2, False)])
    data = b'{"key": "1", "label": "yes"}\n{"key": "2", "label": "n\\udfffo"}\n'
    with pytest.raises(ValidationError) as caught:
        parse_predictions(data, gold, filename="p.jsonl")
    [problem] = caught.value.problems
    assert (problem.line, problem.key) == (2, "2") and "surrogate" in problem.message


@pytest.mark.parametrize("name", ["preds.jsonl", "preds.json", "preds.jsonl.gz", "preds.txt"])
def test_text_that_is_neither_jsonl_nor_csv(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_predictions(b"hello world\n", GOLDS["temp"], filename=name)
    [problem] = caught.value.problems
    assert problem.message.startswith("neither valid JSON Lines nor CSV")
    assert "'hello world'" in problem.message and problem.line == 1


def test_a_csv_with_a_wrong_header_is_still_told_so() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_predictions(b"id,prediction\n1|2019|orig,a\n", GOLDS["temp"], filename="p.csv")
    assert caught.value.problems[0].message == (
        "CSV header must be key,prediction, got 'id,prediction'")


@pytest.mark.parametrize("escape", ["\\uD800", "\\uDbFf", "\\udc00", "\\uDFFF", "\\u0000"])
def test_escapes_in_any_case_are_found(escape: str) -> None:
    gold = GOLDS["present"]
    data = ('{"key": "1", "prediction": "a"}\n'
            f'{{"key": "2", "prediction": "x{escape}"}}\n').encode()
    for compact in (data, b"\xef\xbb\xbf" + data):
        with pytest.raises(ValidationError) as caught:
            parse_predictions(compact, gold, filename="p.jsonl")
        [problem] = caught.value.problems
        assert (problem.line, problem.key) == (2, "2")
        assert escape.lower() in problem.message.lower()


def test_text_that_only_looks_like_an_escape_is_accepted() -> None:
    gold = GOLDS["present"]
    data = b'{"key": "1", "prediction": "\\\\ud800"}\n{"key": "2", "prediction": "\\\\u0000"}\n'
    assert parse_predictions(data, gold).answers == ("\\ud800", "\\u0000")
    csv_data = b"key,prediction\n1,\\ud800\n2,\\u0000\n"
    assert parse_predictions(csv_data, gold).answers == ("\\ud800", "\\u0000")
