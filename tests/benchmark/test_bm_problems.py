"""Every problem type is a ValidationError naming file, line and key; nothing scores partially;
messages on the test split never reveal gold answers."""

from __future__ import annotations

import gzip
import json

import pytest
from bm_helpers import csv_bytes, gz, jsonl, parse, temp_example

from benchmark import (
    FileTooLargeError,
    GoldSet,
    GoldSplit,
    Problem,
    ValidationError,
    parse_predictions,
)

FILE = "preds.jsonl"  # the file name bm_helpers.parse passes


def problems_of(data: bytes, gold: GoldSplit, **kwargs: object) -> list[Problem]:
    with pytest.raises(ValidationError) as error:
        parse(data, gold, **kwargs)  # type: ignore[arg-type]
    problems = error.value.problems
    assert problems and all(p.file == FILE for p in problems)
    return problems


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, problems
    return problems[0]


def good_temp_lines(gold: GoldSplit) -> list[dict[str, object]]:
    return [{"key": e.key, "prediction": "x"} for e in gold.examples]


# --- file-level problems ---------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"   \n\t\n", gz(b""), b"\xef\xbb\xbf"])
def test_empty_file(tiny_temp: GoldSplit, data: bytes) -> None:
    problem = only(problems_of(data, tiny_temp))
    assert "empty" in problem.message


def test_bad_encoding_names_line(tiny_temp: GoldSplit) -> None:
    lines = jsonl(good_temp_lines(tiny_temp)).split(b"\n")
    lines[2] = '{"key": "2|2010|start", "prediction": "caf\u00e9"}'.encode("latin-1")
    problem = only(problems_of(b"\n".join(lines), tiny_temp))
    assert "UTF-8" in problem.message
    assert problem.line == 3


def test_utf16_is_rejected(tiny_temp: GoldSplit) -> None:
    data = jsonl(good_temp_lines(tiny_temp)).decode().encode("utf-16")
    assert "UTF-8" in only(problems_of(data, tiny_temp)).message


def test_nul_character(tiny_temp: GoldSplit) -> None:
    data = jsonl(good_temp_lines(tiny_temp)) + b"\x00\n"
    problem = only(problems_of(data, tiny_temp))
    assert "NUL" in problem.message and problem.line == 5


def test_malformed_json_names_line(tiny_temp: GoldSplit) -> None:
    lines = [json.dumps(r) for r in good_temp_lines(tiny_temp)]
    lines[1] = lines[1][:-1]  # drop the closing brace
    problems = problems_of("\n".join(lines).encode(), tiny_temp)
    assert problems[0].line == 2 and "malformed JSON" in problems[0].message
    # The broken record's example is then missing too: both are listed.
    assert any("have no prediction" in p.message for p in problems)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_rejected(tiny_id: GoldSplit, constant: str) -> None:
    lines = [f'{{"key": "{e.key}", "score": 0.5}}' for e in tiny_id.examples]
    lines[3] = f'{{"key": "103", "score": {constant}}}'
    problems = problems_of("\n".join(lines).encode(), tiny_id)
    assert problems[0].line == 4
    assert constant in problems[0].message and "not valid JSON" in problems[0].message


def test_nan_in_pretty_printed_map(tiny_id: GoldSplit) -> None:
    mapping = {e.key: 0.5 for e in tiny_id.examples}
    text = json.dumps(mapping, indent=2).replace("0.5", "NaN", 1)
    problem = only(problems_of(text.encode(), tiny_id))
    assert "NaN" in problem.message


def test_duplicate_key_in_pretty_printed_map(tiny_temp: GoldSplit) -> None:
    body = ",\n".join(f'  "{e.key}": "x"' for e in tiny_temp.examples)
    text = "{\n" + body + ',\n  "2|2010|start": "y"\n}'
    problem = only(problems_of(text.encode(), tiny_temp))
    assert "appears twice" in problem.message and "2|2010|start" in problem.message


def test_invalid_and_truncated_gzip(tiny_temp: GoldSplit) -> None:
    assert "gzip" in only(problems_of(b"\x1f\x8bnot really gzip", tiny_temp)).message
    full = gz(jsonl(good_temp_lines(tiny_temp)))
    assert "truncated" in only(problems_of(full[:-12], tiny_temp)).message


def test_concatenated_gzip_members_are_valid(tiny_temp: GoldSplit) -> None:
    lines = jsonl(good_temp_lines(tiny_temp)).split(b"\n", 2)
    data = gz(lines[0] + b"\n" + lines[1] + b"\n") + gz(lines[2])
    assert parse(data, tiny_temp).answers == ("x", "x", "x", "x")


def test_too_large_plain_and_gzip_bomb(tiny_temp: GoldSplit) -> None:
    with pytest.raises(FileTooLargeError):
        parse(b" " * 2000, tiny_temp, max_bytes=1000)
    bomb = gzip.compress(b" " * 10_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(FileTooLargeError) as error:
        parse(bomb, tiny_temp, max_bytes=1_000_000)
    assert "decompressed" in str(error.value)
    assert isinstance(error.value, ValidationError)


# --- record-level problems: file, line and key -----------------------------------------------


def test_unknown_key_and_duplicate(tiny_temp: GoldSplit) -> None:
    records = good_temp_lines(tiny_temp)
    records.insert(2, {"key": "999|2019|orig", "prediction": "x"})
    records.append({"key": "1|2019|orig", "prediction": "y"})
    problems = problems_of(jsonl(records), tiny_temp)
    unknown, duplicate = problems
    assert (unknown.line, unknown.key) == (3, "999|2019|orig")
    assert "unknown example" in unknown.message
    assert (duplicate.line, duplicate.key) == (6, "1|2019|orig")
    assert "duplicate" in duplicate.message and "line 1" in duplicate.message


def test_duplicate_in_official_format(tiny_geo: GoldSplit) -> None:
    records = [{"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_geo.examples]
    records.append({"id": 12, "location": "usa", "pred_answer": "z"})
    problem = only(problems_of(jsonl(records), tiny_geo))
    assert (problem.line, problem.key) == (6, "12|usa")


def test_missing_examples_count_and_first_keys() -> None:
    gold = GoldSplit("temp", "test", [temp_example(i, "2000", "orig", ("a",))
                                      for i in range(12)])
    data = jsonl([{"key": "0|2000|orig", "prediction": "a"}])
    problem = only(problems_of(data, gold))
    assert "11 of 12 examples" in problem.message
    for shown in ("1|2000|orig", "2|2000|orig", "5|2000|orig"):
        assert repr(shown) in problem.message
    assert "6|2000|orig" not in problem.message
    assert "and 6 more" in problem.message
    assert problem.line is None


@pytest.mark.parametrize("value", [42, None, ["a"], {"a": 1}, True, 1.5])
def test_non_string_answer(tiny_temp: GoldSplit, value: object) -> None:
    records = good_temp_lines(tiny_temp)
    records[1]["prediction"] = value
    problem = only(problems_of(jsonl(records), tiny_temp))
    assert (problem.line, problem.key) == (2, "2|2010|sampled_year")
    assert "must be a string" in problem.message


def test_non_string_answer_in_map_and_official(tiny_temp: GoldSplit) -> None:
    mapping: dict[str, object] = {e.key: "x" for e in tiny_temp.examples}
    mapping["2|2010|start"] = 7
    problem = only(problems_of(json.dumps(mapping).encode(), tiny_temp))
    assert problem.key == "2|2010|start"
    records = [{"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_temp.examples]
    records[0]["pred_answer"] = None
    problem = only(problems_of(jsonl(records), tiny_temp))
    assert (problem.line, problem.key) == (1, "1|2019|orig")


def test_both_answer_fields_or_none(tiny_temp: GoldSplit) -> None:
    records = good_temp_lines(tiny_temp)
    records[0]["pred_answer"] = "y"
    del records[3]["prediction"]
    problems = problems_of(jsonl(records), tiny_temp)
    assert [(p.line, p.key) for p in problems] == [(1, "1|2019|orig"),
                                                   (4, "3|March 3, 2015|sampled_date")]


@pytest.mark.parametrize(("record", "fragment"), [
    ({"id": "abc", "date": "2019", "date_type": "orig", "pred_answer": "x"}, "integer"),
    ({"id": 1, "date": "2019", "pred_answer": "x"}, "date_type"),
    ({"id": 1.5, "date": "2019", "date_type": "orig", "pred_answer": "x"}, "integer"),
    ({"key": 5, "prediction": "x"}, "must be a string"),
    ({"prediction": "x"}, "neither 'key' nor 'id'"),
    (["1|2019|orig", "x"], "expected a JSON object"),
])
def test_bad_record_shapes(tiny_temp: GoldSplit, record: object, fragment: str) -> None:
    lines = [json.dumps(r) for r in good_temp_lines(tiny_temp)[1:]]
    lines.insert(0, json.dumps(record))
    problems = problems_of("\n".join(lines).encode(), tiny_temp)
    assert problems[0].line == 1 and fragment in problems[0].message


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("label", "maybe", "true/false"),
    ("label", 2, "true/false"),
    ("label", None, "true/false"),
    ("score", 1.5, "[0, 1]"),
    ("score", -0.1, "[0, 1]"),
    ("score", "0.5", "[0, 1]"),
    ("score", True, "[0, 1]"),
])
def test_bad_labels_and_scores(tiny_id: GoldSplit, field: str, value: object,
                               fragment: str) -> None:
    records: list[dict[str, object]] = [{"key": e.key, field: 0} for e in tiny_id.examples]
    records[4][field] = value
    problem = only(problems_of(jsonl(records), tiny_id))
    assert (problem.line, problem.key) == (5, "104")
    assert fragment in problem.message


def test_scores_on_some_records_only(tiny_id: GoldSplit) -> None:
    records: list[dict[str, object]] = [{"key": e.key, "label": 1} for e in tiny_id.examples]
    records[0]["score"] = 0.3
    assert "every record or on none" in only(problems_of(jsonl(records), tiny_id)).message


def test_curprev_which_must_be_current_or_previous(tiny_curprev: GoldSplit) -> None:
    records = [{"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_curprev.examples]
    records[2]["which"] = "next"
    problem, missing = problems_of(jsonl(records), tiny_curprev)
    assert problem.line == 3 and "'current' or 'previous'" in problem.message
    # The record cannot be matched to an example, so that example is missing as well.
    assert "1 of 3" in missing.message and "41|current" in missing.message


# --- CSV ---------------------------------------------------------------------------------------


def test_csv_problems(tiny_temp: GoldSplit, tiny_id: GoldSplit) -> None:
    problem = only(problems_of(b"id,answer\n1,x\n", tiny_temp))
    assert problem.line == 1 and "key,prediction" in problem.message
    rows = [(e.key, "x") for e in tiny_temp.examples]
    data = csv_bytes(("key", "prediction"), rows) + b"extra,col,umns\n"
    problem = only(problems_of(data, tiny_temp))
    assert problem.line == 6 and "2 CSV columns" in problem.message
    data = csv_bytes(("key", "score"), [(e.key, "0.5") for e in tiny_id.examples])
    data = data.replace(b"103,0.5", b"103,high")
    problem = only(problems_of(data, tiny_id))
    assert (problem.line, problem.key) == (5, "103") and "'high'" in problem.message


# --- wrong track -------------------------------------------------------------------------------


def test_wrong_track_official_files(tiny_temp: GoldSplit, tiny_geo: GoldSplit,
                                    tiny_curprev: GoldSplit) -> None:
    temp_file = jsonl({"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_temp.examples)
    geo_file = jsonl({"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_geo.examples)
    curprev_file = jsonl({"id": e.id, **e.context, "pred_answer": "x"}
                         for e in tiny_curprev.examples)
    for data, gold, other in ((temp_file, tiny_geo, "temp"), (geo_file, tiny_temp, "geo"),
                              (curprev_file, tiny_temp, "curprev"),
                              (geo_file, tiny_curprev, "geo")):
        problems = problems_of(data, gold)
        assert f"fields of track {other!r}" in problems[0].message
        assert problems[0].line == 1


def test_wrong_track_compact_file(tiny_temp: GoldSplit, tiny_geo: GoldSplit) -> None:
    data = json.dumps({e.key: "x" for e in tiny_geo.examples}).encode()
    problems = problems_of(data, tiny_temp)
    assert all("unknown example" in p.message for p in problems[:-1])
    assert "have no prediction" in problems[-1].message


def test_qa_file_for_identification_track(tiny_temp: GoldSplit, tiny_id: GoldSplit) -> None:
    data = jsonl({"id": e.id, **e.context, "pred_answer": "x"} for e in tiny_temp.examples)
    problems = problems_of(data, tiny_id)
    assert "fields of track 'temp'" in problems[0].message


# --- all or nothing, and the cap ------------------------------------------------------------


def test_one_bad_line_rejects_the_whole_file(tiny_temp: GoldSplit) -> None:
    records = good_temp_lines(tiny_temp)
    records[2]["prediction"] = 3
    with pytest.raises(ValidationError):
        parse(jsonl(records), tiny_temp)


def test_problem_cap() -> None:
    gold = GoldSplit("temp", "test", [temp_example(i, "2000", "orig", ("a",))
                                      for i in range(100)])
    records = [{"key": f"{i}|2000|orig", "prediction": i} for i in range(100)]
    with pytest.raises(ValidationError) as error:
        parse(jsonl(records), gold, max_problems=10)
    assert len(error.value.problems) == 10
    assert error.value.truncated == 90
    assert "and 97 more" in str(error.value)  # three are shown in the summary
    assert error.value.to_json()[0] == {"file": FILE, "line": 1, "key": "0|2000|orig",
                                        "message": "'prediction' must be a string, got int"}


def test_problem_str() -> None:
    assert str(Problem("f.jsonl", "bad", 3, "k")) == "f.jsonl:3: bad (key 'k')"
    assert str(Problem("f.jsonl", "empty")) == "f.jsonl: empty"


def test_long_values_are_quoted_short(tiny_id: GoldSplit) -> None:
    records: list[dict[str, object]] = [{"key": e.key, "label": 1} for e in tiny_id.examples]
    records[0]["label"] = "x" * 10_000
    problem = only(problems_of(jsonl(records), tiny_id))
    assert len(problem.message) < 200


# --- test-split messages never contain gold answers ------------------------------------------

SECRET = "Zanzibar-Quokka"


def _bad_files(gold: GoldSplit) -> dict[str, bytes]:
    keys = [e.key for e in gold.examples]
    official = [{"id": e.id, **e.context, "pred_answer": "guess"} for e in gold.examples]
    return {
        "missing": jsonl([{"key": keys[0], "prediction": "guess"}]),
        "unknown": jsonl([{"key": k + "x", "prediction": "guess"} for k in keys]),
        "duplicate": jsonl([{"key": k, "prediction": "guess"} for k in keys + keys]),
        "non-string": jsonl([{"key": k, "prediction": 1} for k in keys]),
        "malformed": b'{"key": \n' * 3,
        "nan": jsonl([{"key": k, "prediction": "g"} for k in keys])[:-2] + b", \"s\": NaN}",
        "official-wrong-answer-type": jsonl([{**r, "pred_answer": []} for r in official]),
        "csv": b"key,answer\n",
        "latin1": "caf\u00e9".encode("latin-1"),
    } | ({} if gold.track == "present" else {  # {"id", "pred_answer"} is present's format
        "official-missing-context": jsonl([{"id": e.id, "pred_answer": "g"}
                                           for e in gold.examples]),
    })


def test_messages_never_contain_gold_answers_tiny() -> None:
    gold = GoldSplit("temp", "test", [
        temp_example(i, "2001", "orig", (f"{SECRET} {i}",), (f"{SECRET} {i}", "Alt Quokka"))
        for i in range(8)])
    for name, data in _bad_files(gold).items():
        with pytest.raises(ValidationError) as error:
            parse(data, gold)
        text = str(error.value) + json.dumps(error.value.to_json())
        assert SECRET not in text and "Quokka" not in text, name


def test_messages_never_contain_gold_answers_real_test_split(release_gold: GoldSet) -> None:
    for track in ("temp", "geo", "present", "curprev"):
        gold = release_gold.get(track, "test")
        by_key = {e.key: e for e in gold.examples}
        for name, data in _bad_files(gold).items():
            with pytest.raises(ValidationError) as error:
                parse_predictions(data, gold, filename="upload", max_problems=50)
            for problem in error.value.problems:
                # Answers of the examples a problem names must not appear in it (answers that
                # are part of the key itself, e.g. a year in a temp date, are public context).
                named = [by_key[k] for k in by_key if k in problem.message or k == problem.key]
                for example in named:
                    for answer in example.answers + example.any_answers:
                        if len(answer) >= 3 and answer not in example.key:
                            assert answer not in problem.message, (track, name, answer)
