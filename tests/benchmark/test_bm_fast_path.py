"""The fast parse path (benchmark/fastparse.py) against the exact parser and a plain reference.

* Random gold splits and prediction files in every format: the project's metrics equal those
  of a reference written here in plain Python (stdlib parsing, the SQuAD normalization
  written out step by step, EM as `in` over the gold list).
* Random damage to well-formed files: whenever the fast path accepts a file, the exact
  parser accepts it with the same answers; the two always agree on the outcome.
* The files it is meant for, made from the real release (every format it claims on every
  split of every track, the release's own records, the reference submissions): the fast path
  takes each, and parse_predictions answers it without running the exact parser.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
import string
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bm_helpers import (
    curprev_example,
    geo_example,
    id_example,
    present_example,
    temp_example,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import (
    Example,
    GoldSplit,
    Predictions,
    ValidationError,
    formats,
    parse_predictions,
    score,
)
from benchmark.fastparse import fast_answers, fast_labels
from benchmark.normalize import normalize_answer, normalize_many
from benchmark.tracks import track_info

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Text that exercises every normalization step: case, ASCII and other punctuation, articles,
# accents (NFC and NFD), odd white space, characters beyond the BMP.
PIECES = ["the", "The", "a", "an", "A", "theatre", "Paris", "U.S.A.", "Jay-Z", "Jay\u2013Z",
          "Beyonc\u00e9", "Beyonce\u0301", "\u00c9cole", "caf\u00e9", "\u00df", "\u03a3\u03b1",
          "1,000", "(1999)", "'s", "\t", "\u00a0", "\u2028", " ", "  ", "\U0001f600", "x",
          "\u0130", "I", "\"", "\\", "{", ":", " :", "na\u00efve"]
texts = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)
DATE_TYPES = ["orig", "start", "sampled_year", "sampled_date"]
LOCATIONS = ["India", "united states", "Peru", "USA", "Paris", "new york city"]


@st.composite
def gold_splits(draw: st.DrawFn) -> GoldSplit:
    """A small gold split of a QA track with answers drawn from PIECES."""
    track = draw(st.sampled_from(["temp", "geo", "present", "curprev"]))
    size = draw(st.integers(1, 7))
    examples: list[Example] = []
    for i in range(size):
        answers = tuple(draw(st.lists(texts, min_size=1, max_size=3)))
        others = tuple(draw(st.lists(texts, max_size=2)))
        if track == "temp":
            date_type = draw(st.sampled_from(DATE_TYPES))
            examples.append(temp_example(i + 1, str(1990 + i), date_type, answers,
                                         answers + others))
        elif track == "geo":
            examples.append(geo_example(i + 1, draw(st.sampled_from(LOCATIONS)), answers,
                                        answers + others))
        elif track == "present":
            examples.append(present_example(i + 1, draw(st.sampled_from(["stable", "updated"])),
                                            answers))
        else:
            examples.append(curprev_example(i // 2 + 1, ("current", "previous")[i % 2], answers,
                                            others))
    return GoldSplit(track, "test", examples)


def official_record(gold: GoldSplit, example: Example, prediction: str,
                    with_gold_fields: bool | str) -> dict[str, Any]:
    """The dataset's record of an example (gold fields, the question alone ("question") or
    neither) with its prediction."""
    record: dict[str, Any] = {"id": example.id}
    if with_gold_fields == "question":
        record.update(question=example.question)
    elif with_gold_fields and gold.track in ("temp", "geo"):
        record.update(question=example.question, edited_question=example.question,
                      answer=list(example.answers), any_answer=list(example.any_answers))
    record.update(example.context)
    record["pred_answer"] = prediction
    return record


FORMATS = ["official", "official-question", "official-bare", "compact", "blank", "blank-pred",
           "map", "map-indented", "list", "csv"]
#: The blank inputs' records (Example.blank) with the prediction under each accepted name.
BLANK_ANSWER_FIELD = {"blank": "prediction", "blank-pred": "pred_answer"}


def write_file(gold: GoldSplit, predictions: list[str], fmt: str, order: list[int],
               ensure_ascii: bool, newline: str) -> bytes:
    """The predictions (in gold order) as a file of the given format, records in `order`."""
    examples = gold.examples
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator=newline)
        writer.writerow(["key", "prediction"])
        writer.writerows([examples[i].key, predictions[i]] for i in order)
        return out.getvalue().encode()
    if fmt.startswith("map"):
        mapping = {examples[i].key: predictions[i] for i in order}
        indent = 2 if fmt == "map-indented" else None
        return json.dumps(mapping, ensure_ascii=ensure_ascii, indent=indent).encode()
    if fmt == "compact" or fmt == "list":
        records = [{"key": examples[i].key, "prediction": predictions[i]} for i in order]
    elif fmt in BLANK_ANSWER_FIELD:
        records = [{**examples[i].blank(), BLANK_ANSWER_FIELD[fmt]: predictions[i]}
                   for i in order]
    else:
        fields: bool | str = "question" if fmt == "official-question" else fmt == "official"
        records = [official_record(gold, examples[i], predictions[i], fields) for i in order]
    if fmt == "list":
        return json.dumps(records, ensure_ascii=ensure_ascii).encode()
    return "".join(json.dumps(r, ensure_ascii=ensure_ascii) + newline for r in records).encode()


# --- the reference: what the published evaluation intends, in plain Python ----------------


def reference_normalize(text: str) -> str:
    """The SQuAD script's normalization (after NFD, as the paper's code does), step by step."""
    text = unicodedata.normalize("NFD", text)
    text = text.lower()
    exclude = set(string.punctuation)
    text = "".join(ch for ch in text if ch not in exclude)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def reference_read(data: bytes, fmt: str) -> dict[str, str]:
    """{key: prediction} of a file written by write_file, read with the standard library."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    text = data.decode("utf-8-sig")
    if fmt == "csv":
        return {row[0]: row[1] for row in list(csv.reader(io.StringIO(text, newline="")))[1:]}
    if fmt.startswith("map"):
        return dict(json.loads(text))
    if fmt == "list":
        return {r["key"]: r["prediction"] for r in json.loads(text)}
    records = [json.loads(line) for line in text.split("\n") if line.strip()]
    if fmt == "compact":
        return {r["key"]: r["prediction"] for r in records}
    if fmt in BLANK_ANSWER_FIELD:
        return {r["key"]: r[BLANK_ANSWER_FIELD[fmt]] for r in records}
    keys = {"temp": lambda r: f"{r['id']}|{r['date']}|{r['date_type']}",
            "geo": lambda r: f"{r['id']}|{r['location']}",
            "curprev": lambda r: f"{r['id']}|{r['which']}",
            "present": lambda r: str(r["id"])}
    track = ("temp" if "date" in records[0] else "geo" if "location" in records[0]
             else "curprev" if "which" in records[0] else "present")
    return {keys[track](r): r["pred_answer"] for r in records}


def reference_metrics(gold: GoldSplit, predictions: dict[str, str]) -> dict[str, float | None]:
    """Every metric of the track: EM = the normalized prediction is in the normalized gold."""
    def em(example: Example, answers: tuple[str, ...]) -> int:
        prediction = reference_normalize(predictions[example.key])
        return int(prediction in [reference_normalize(a) for a in answers])

    metrics: dict[str, float | None] = {}
    for name in track_info(gold.track).metrics:
        if name == "em_any":
            values = [em(e, e.any_answers or e.answers) for e in gold.examples]
        else:
            partition = name.removeprefix("em_")
            values = [em(e, e.answers) for e in gold.examples
                      if name == "em" or partition in e.partitions]
        metrics[name] = 100.0 * sum(values) / len(values) if values else None
    return metrics


@st.composite
def prediction_files(draw: st.DrawFn) -> tuple[GoldSplit, str, bytes, list[str]]:
    """A gold split, a format, a complete prediction file of it and the predictions."""
    gold = draw(gold_splits())
    predictions = []
    for example in gold.examples:
        kind = draw(st.sampled_from(["gold", "any", "other"]))
        pool = {"gold": example.answers, "any": example.any_answers}.get(kind)
        predictions.append(draw(st.sampled_from(pool)) if pool else draw(texts))
    fmt = draw(st.sampled_from(FORMATS))
    order = list(range(len(gold)))
    if draw(st.booleans()):
        order = draw(st.permutations(order))
    data = write_file(gold, predictions, fmt, order, draw(st.booleans()),
                      draw(st.sampled_from(["\n", "\n", "\r\n"])))
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.booleans()):
        data = gzip.compress(data, mtime=0)
    return gold, fmt, data, predictions


@SETTINGS
@given(case=prediction_files())
def test_metrics_equal_the_plain_reference(case: tuple[GoldSplit, str, bytes, list[str]]) -> None:
    gold, fmt, data, predictions = case
    parsed = parse_predictions(data, gold)
    assert list(parsed.answers or ()) == predictions
    assert reference_read(data, fmt) == {e.key: p for e, p in zip(gold, predictions, strict=True)}
    result = score(gold, parsed, resamples=0, lenient=False)
    assert result.metrics == reference_metrics(gold, reference_read(data, fmt))


@SETTINGS
@given(case=prediction_files())
def test_fast_and_exact_parsers_agree(case: tuple[GoldSplit, str, bytes, list[str]]) -> None:
    gold, fmt, data, predictions = case
    fast = parse_predictions(data, gold)
    exact = parse_predictions(data, gold, fast=False)
    assert (fast.answers, fast.format, fast.keys) == (exact.answers, exact.format, exact.keys)
    assert score(gold, fast, resamples=30).ci == score(gold, exact, resamples=30).ci
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    # The fast path takes every well-formed JSON Lines file whose strings hold no ':', '{' or
    # '"' (which could hide a repeated field): it is really exercised here.
    strings = "".join(predictions) + "".join(a for e in gold for a in e.any_answers)
    fast_formats = ("official", "official-question", "official-bare", "compact", "blank",
                    "blank-pred", "map", "map-indented")
    if fmt in fast_formats and not set(strings) & set(':{"'):
        assert fast_answers(raw, gold) is not None


# --- damaged files: the fast path never accepts what the exact parser rejects --------------


def _insert_after_brace(line: str, text: str) -> str:
    return line.replace("{", "{" + text, 1)


MUTATIONS = {
    "repeated answer field": lambda ls, i: _insert_after_brace(ls[i], '"pred_answer": "zz", '),
    "repeated compact field": lambda ls, i: _insert_after_brace(ls[i], '"prediction": "zz", '),
    "repeated key field": lambda ls, i: _insert_after_brace(ls[i], '"key": "1|x", '),
    "repeated gold field": lambda ls, i: _insert_after_brace(ls[i], '"question": "q", '),
    "repeated id": lambda ls, i: _insert_after_brace(ls[i], '"id": 999, '),
    "unknown field": lambda ls, i: _insert_after_brace(ls[i], '"extra": 1, '),
    "space before colon": lambda ls, i: ls[i].replace('":', '" :', 1),
    "repeated field, space before colon": lambda ls, i: _insert_after_brace(
        ls[i], '"pred_answer" :"zz", '),
    "repeated compact field, tab before colon": lambda ls, i: _insert_after_brace(
        ls[i], '"prediction"\t: "zz", '),
    "escaped colon": lambda ls, i: ls[i].replace(':', '\\u003a', 2).replace('\\u003a', ':', 1),
    "nul escape": lambda ls, i: ls[i].replace('"zz', '"\\u0000'),
    "lone surrogate": lambda ls, i: ls[i].replace('"zz', '"\\ud800'),
    "surrogate pair": lambda ls, i: ls[i].replace('"zz', '"\\ud83d\\ude00'),
    "nested object": lambda ls, i: ls[i].replace('"answer": [', '"answer": [{"a": 1, "a": 2}, '),
    "two records on a line": lambda ls, i: ls[i] + " " + ls[(i + 1) % len(ls)],
    "record over two lines": lambda ls, i: ls[i].replace(", ", ",\n", 1),
    "raw tab in a string": lambda ls, i: ls[i].replace('"zz', '"\tzz'),
    "id as a string": lambda ls, i: re.sub(r'"id": (-?\d+)', r'"id": "\1"', ls[i]),
    "id as a bool": lambda ls, i: re.sub(r'"id": (-?\d+)', '"id": true', ls[i]),
    "id as a float": lambda ls, i: re.sub(r'"id": (-?\d+)', r'"id": \1.0', ls[i]),
    # A keyed record's id and question are not read (the exact parser reads the key alone):
    # any JSON value passes there, and a nested object must still not hide a repeated field.
    "id as an object": lambda ls, i: re.sub(r'"id": (-?\d+)', r'"id": {"n": \1, "n": 0}',
                                            ls[i]),
    "question as a list": lambda ls, i: ls[i].replace('"question": ', '"question": [1, ', 1)
    .replace('", "', '"], "', 1) if '"question": ' in ls[i] else ls[i],
    "unknown key": lambda ls, i: ls[i].replace('"key": "', '"key": "0', 1),
    "blank line": lambda ls, i: ls[i] + "\n",
    "CRLF": lambda ls, i: ls[i] + "\r",
    "trailing comma": lambda ls, i: ls[i] + ",",
    "top-level list": lambda ls, i: "[" + ls[i] + "]",
    "non-ASCII": lambda ls, i: ls[i].replace('"zz', '"\u00e9\u20ac'),
    # Lone surrogates from surrogateescape become single invalid bytes when encoded.
    "invalid UTF-8 in a gold field": lambda ls, i: ls[i].replace('"q?', '"q\u00e9\udcff?'),
    "truncated UTF-8 in a gold field": lambda ls, i: ls[i].replace('"q?', '"q\udcc3?'),
    "overlong UTF-8 in the answer": lambda ls, i: ls[i].replace('"zz', '"\udcc0\udcafzz'),
}


def _rarely(data: st.DataObject) -> bool:
    return data.draw(st.integers(0, 5)) == 0


@settings(SETTINGS, max_examples=400)
@given(gold=gold_splits(), fmt=st.sampled_from(["compact", "official", "official-question",
                                                "blank", "blank-pred"]),
       data=st.data(),
       mutations=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=1, max_size=2))
def test_fast_path_accepts_only_what_the_exact_parser_accepts(
        gold: GoldSplit, fmt: str, data: st.DataObject, mutations: list[str]) -> None:
    predictions = ["zz" + str(i) for i in range(len(gold))]
    lines = write_file(gold, predictions, fmt, list(range(len(gold))), True, "\n").decode()
    lines_list = lines.rstrip("\n").split("\n")
    extra: list[str] = []
    for name in mutations:
        i = data.draw(st.integers(0, len(lines_list) - 1))
        lines_list[i] = MUTATIONS[name](lines_list, i)
        if _rarely(data):
            extra.append(lines_list[i])  # the damaged record once more, as a duplicate
    if _rarely(data) and len(lines_list) > 1:
        del lines_list[data.draw(st.integers(0, len(lines_list) - 1))]
    raw = ("\n".join(lines_list + extra) + "\n").encode("utf-8", "surrogateescape")
    if _rarely(data):
        position = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:position] + b"\xff" + raw[position:]  # an invalid UTF-8 byte somewhere
    check_agreement(raw, gold)


def check_agreement(raw: bytes, gold: GoldSplit) -> None:
    """Whatever the fast path accepts, the exact parser accepts alike; both always agree."""
    quick = fast_answers(raw, gold)
    try:
        exact = parse_predictions(raw, gold, fast=False)
    except ValidationError as error:
        assert quick is None, f"fast path accepted a file the exact parser rejects: {error}"
        try:
            parse_predictions(raw, gold)
        except ValidationError as default_error:
            assert default_error.problems == error.problems
        else:
            raise AssertionError("the default parser accepted a rejected file")
        return
    if quick is not None:
        assert quick == (exact.format, exact.answers)
    assert parse_predictions(raw, gold).answers == exact.answers


THREE = GoldSplit("temp", "test", [temp_example(1, "2019", "orig", ("a",)),
                                   temp_example(2, "2010", "start", ("b",)),
                                   temp_example(3, "2001", "sampled_year", ("c",))])


@pytest.mark.parametrize("fmt", ["official", "official-question", "compact", "blank",
                                 "blank-pred"])
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_damage_alone(mutation: str, fmt: str) -> None:
    lines = write_file(THREE, ["zz0", "zz1", "zz2"], fmt, [0, 1, 2], True, "\n").decode()
    lines_list = lines.rstrip("\n").split("\n")
    lines_list[1] = MUTATIONS[mutation](lines_list, 1)
    check_agreement(("\n".join(lines_list) + "\n").encode("utf-8", "surrogateescape"), THREE)


@pytest.mark.parametrize("fmt", ["official", "compact"])
@pytest.mark.parametrize("separator", ["", " "])
def test_records_joined_or_split_across_lines(fmt: str, separator: str) -> None:
    """Each check of the one-record-a-line proof, alone, is needed for one of these files."""
    lines = write_file(THREE, ["zz0", "zz1", "zz2"], fmt, [0, 1, 2], True, "\n").decode()
    first, second, third = lines.rstrip("\n").split("\n")
    joined = first + separator + second  # two records on one line, none missing
    split = third.replace(", ", ",\n", 1)  # one record over two lines
    # Empty objects in a gold field add no key: a newline right after or before one.
    after_brace = third.replace('"answer": [', '"answer": [{}\n, {}, ', 1)
    before_brace = third.replace('"answer": [', '"answer": [{},\n{}, ', 1)
    for text in (joined + "\n" + third, joined + "\n" + split, joined + "\n" + after_brace,
                 joined + "\n" + before_brace, second + "\n" + first,
                 first + "\n" + second):  # ... the last two: reordered, and one missing
        check_agreement((text + "\n").encode(), THREE)


MAP_DAMAGE = {
    "repeated key": lambda m: m.replace(
        '{"1|2019|orig": "a"', '{"1|2019|orig": "z", "1|2019|orig": "a"'),
    "repeated key, space before colon": lambda m: m.replace(
        '{"1|2019|orig": "a"', '{"1|2019|orig" : "z", "1|2019|orig": "a"'),
    "unknown key": lambda m: m.replace('{"1|2019|orig": "a"', '{"9|2019|orig": "a"'),
    "missing key": lambda m: m.replace('"1|2019|orig": "a", ', ""),
    "a record's field name": lambda m: m.replace('{"1|2019|orig": "a"', '{"key": "a"'),
    "non-string value": lambda m: m.replace('"a"', "1"),
    "nested value": lambda m: m.replace('"a"', '{"x": "a"}'),
    "lone surrogate": lambda m: m.replace('"a"', '"\\udc00"'),
    "nul escape": lambda m: m.replace('"a"', '"\\u0000"'),
    "escaped colon in a value": lambda m: m.replace('"a"', '"\\u003a"'),
    "colon in a value after a quote": lambda m: m.replace('"a"', '"\\":"'),
    "two objects": lambda m: m + " " + m,
    "trailing garbage": lambda m: m + "x",
    "indented": lambda m: json.dumps(json.loads(m), indent=2),
    "leading space": lambda m: " " + m,
}


@pytest.mark.parametrize("damage", sorted(MAP_DAMAGE))
def test_each_damage_to_a_map(damage: str) -> None:
    mapping = json.dumps({"1|2019|orig": "a", "2|2010|start": "b", "3|2001|sampled_year": "c"})
    check_agreement(MAP_DAMAGE[damage](mapping).encode(), THREE)


# --- the files it is meant for: the fast path takes them -----------------------------------
# A fast path that gives way on every file loses nothing the tests above see (the exact
# parser gives the same answers); these fail then, one for each track, split and format.

QA_SPLITS = [(track, split) for track in ("temp", "geo", "present", "curprev")
             for split in ("train", "dev", "test")]
ID_SPLITS = [(track, split) for track in ("temp-id", "geo-id")
             for split in ("train", "dev", "test")]
#: The formats the fast path claims (the module docstring): every JSON Lines record shape and
#: the {key: prediction} object, compact or indented.
FAST_FORMATS = ["official", "official-question", "official-bare", "compact", "blank",
                "blank-pred", "map", "map-indented"]
REFERENCE = Path(__file__).resolve().parents[2] / "submissions" / "reference"
#: The runners' prediction files; the language-model runners' lm-eval samples files take the
#: harness parser (tests/harness), not this one.
RUNNER_FILES = sorted(path for path in REFERENCE.glob("*.jsonl.gz")
                      if json.loads(Path(f"{path}.meta.json").read_text())["settings"]
                      .get("harness") is None)


def _exact_parser_ran(*_: object) -> str:
    raise AssertionError("the exact parser ran: the fast path gave way")


def real_predictions(gold: GoldSplit) -> list[str]:
    """A system's answers: the gold answer of two examples in three, another context's or
    none on the others (real texts: non-ASCII, quotes, punctuation as the release has them)."""
    return [e.answers[0] if i % 3 and e.answers else (e.any_answers[-1] if e.any_answers
                                                        else "") for i, e in enumerate(gold)]


def assert_taken(data: bytes, gold: GoldSplit, layout: str, answers: list[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path takes the file with these answers, and parse_predictions goes that way."""
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    assert fast_answers(raw, gold) == (layout, tuple(answers))
    with monkeypatch.context() as patched:
        patched.setattr(formats, "decode_text", _exact_parser_ran)
        parsed = parse_predictions(data, gold)
    assert (parsed.format, parsed.answers) == (layout, tuple(answers))


@pytest.mark.parametrize("fmt", FAST_FORMATS)
@pytest.mark.parametrize(("track", "split"), QA_SPLITS)
def test_fast_path_takes_every_format_of_every_qa_split(
        release_gold: Any, track: str, split: str, fmt: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    gold = release_gold.get(track, split)
    predictions = real_predictions(gold)
    order = list(range(len(gold)))
    random.Random(f"{track}/{split}").shuffle(order)
    for ensure_ascii in (False, True):
        data = write_file(gold, predictions, fmt, order, ensure_ascii, "\n")
        assert_taken(data, gold, "json-map" if fmt.startswith("map") else "jsonl",
                     predictions, monkeypatch)


@pytest.mark.parametrize("variant", ["gzip", "BOM", "CRLF", "no final newline", "gold order"])
@pytest.mark.parametrize("fmt", ["official", "compact", "blank"])
def test_fast_path_takes_the_usual_variants_of_a_file(
        release_gold: Any, fmt: str, variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    gold = release_gold.get("temp", "test")
    predictions = real_predictions(gold)
    order = list(range(len(gold)))
    if variant != "gold order":
        random.Random(3).shuffle(order)
    data = write_file(gold, predictions, fmt, order, False,
                      "\r\n" if variant == "CRLF" else "\n")
    data = {"gzip": lambda d: gzip.compress(d, mtime=0), "BOM": lambda d: b"\xef\xbb\xbf" + d,
            "no final newline": lambda d: d.rstrip(b"\n")}.get(variant, lambda d: d)(data)
    assert_taken(data, gold, "jsonl", predictions, monkeypatch)


@pytest.mark.parametrize(("track", "split"), [(t, s) for t in ("temp", "geo")
                                              for s in ("train", "dev", "test")])
def test_fast_path_takes_the_release_records_with_a_prediction(
        release_dir: Path, release_gold: Any, track: str, split: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The release's own qa_data records, every field as released, plus pred_answer."""
    gold = release_gold.get(track, split)
    by_key = dict(zip(gold.keys, real_predictions(gold), strict=True))
    path = release_dir / "qa_data" / f"{track}.{split}.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines = []
    for record in records:
        key = track_info(track).key(record["id"], record)
        lines.append(json.dumps({**record, "pred_answer": by_key[key]}, ensure_ascii=False))
    assert_taken(("\n".join(lines) + "\n").encode(), gold, "jsonl", list(by_key.values()),
                 monkeypatch)


@pytest.mark.parametrize("path", RUNNER_FILES, ids=lambda p: p.name)
def test_fast_path_takes_the_reference_submissions(release_gold: Any, path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The runners' own output files (submissions/reference), as they are uploaded."""
    _, track, split = path.name.split(".")[:3]
    gold = release_gold.get(track, split)
    data = path.read_bytes()
    exact = parse_predictions(data, gold, fast=False)
    raw = gzip.decompress(data)
    with monkeypatch.context() as patched:
        patched.setattr(formats, "decode_text", _exact_parser_ran)
        parsed = parse_predictions(data, gold)
    if gold.is_identification:
        quick = fast_labels(raw, gold)
        assert quick is not None
        assert _same_predictions(parsed, exact)
    else:
        assert fast_answers(raw, gold) == (exact.format, exact.answers)
        assert parsed.answers == exact.answers


@pytest.mark.parametrize("fields", [("label",), ("score",), ("label", "score")])
@pytest.mark.parametrize("named_by", ["key", "id"])
@pytest.mark.parametrize(("track", "split"), ID_SPLITS)
def test_fast_path_takes_every_identification_shape(
        release_gold: Any, track: str, split: str, named_by: str, fields: tuple[str, ...],
        monkeypatch: pytest.MonkeyPatch) -> None:
    gold = release_gold.get(track, split)
    labels = [bool(e.label) != (i % 5 == 0) for i, e in enumerate(gold)]  # some wrong
    scores = [round((i % 11) / 10, 1) for i in range(len(gold))]
    order = list(range(len(gold)))
    random.Random(f"{track}/{split}").shuffle(order)
    lines = []
    for i in order:
        record: dict[str, Any] = {named_by: gold.examples[i].key if named_by == "key"
                                  else gold.examples[i].id}
        record.update({"label": labels[i], "score": scores[i]})
        lines.append(json.dumps({k: v for k, v in record.items() if k in (named_by, *fields)}))
    data = ("\n".join(lines) + "\n").encode()
    quick = fast_labels(data, gold)
    assert quick is not None
    expected_labels = (np.array(labels) if "label" in fields else np.array(scores) >= 0.5)
    assert quick[0] == "jsonl" and np.array_equal(quick[1], expected_labels)
    assert (quick[2] is None) == ("score" not in fields)
    if quick[2] is not None:
        assert np.array_equal(quick[2], np.array(scores))
    with monkeypatch.context() as patched:
        patched.setattr(formats, "decode_text", _exact_parser_ran)
        parsed = parse_predictions(data, gold)
    assert np.array_equal(parsed.labels, expected_labels)


@settings(SETTINGS, max_examples=500)
@given(values=st.lists(st.text(max_size=30) | texts, max_size=8))
def test_normalization_equals_the_plain_reference(values: list[str]) -> None:
    expected = [reference_normalize(t) for t in values]
    assert [normalize_answer(t) for t in values] == expected
    assert normalize_many(values + values[:3]) == expected + expected[:3]


ascii_texts = st.lists(st.sampled_from(["the", "The", "a", "an", "AN", "A.", "theatre", "x", "1",
                                        " ", "  ", "\t", "\n", "\x1c", "\x00", "\x01", "-",
                                        "_", "'s", "\u00e9", "\u03a3"]), max_size=6).map("".join)


@settings(SETTINGS, max_examples=500)
@given(values=st.lists(ascii_texts | st.text(alphabet=st.characters(max_codepoint=127)),
                       max_size=12))
def test_batched_normalization_equals_one_text_at_a_time(values: list[str]) -> None:
    """normalize_many joins the ASCII texts and normalizes them in one pass: the same as
    one text at a time, also next to empty texts, NUL, white space and articles."""
    assert normalize_many(values) == [reference_normalize(t) for t in values]


# --- identification files -------------------------------------------------------------------


def _same_predictions(a: Predictions, b: Predictions) -> bool:
    return (a.format == b.format and np.array_equal(a.labels, b.labels)
            and (a.scores is None) == (b.scores is None)
            and (a.scores is None or np.array_equal(a.scores, b.scores)))


def check_id_agreement(raw: bytes, gold: GoldSplit) -> None:
    """The identification fast path accepts only what the exact parser accepts, alike."""
    quick = fast_labels(raw, gold)
    try:
        exact = parse_predictions(raw, gold, fast=False)
    except ValidationError as error:
        assert quick is None, f"fast path accepted a file the exact parser rejects: {error}"
        with pytest.raises(ValidationError) as default_error:
            parse_predictions(raw, gold)
        assert default_error.value.problems == error.problems
        return
    if quick is not None:
        assert _same_predictions(Predictions(gold.track, gold.split, quick[0], labels=quick[1],
                                             scores=quick[2], keys=gold.keys), exact)
    assert _same_predictions(parse_predictions(raw, gold), exact)


ID_GOLD = GoldSplit("temp-id", "test", [id_example(i, i % 3 == 0, ("webq", "marco")[i % 2])
                                        for i in range(1, 8)])
ID_DAMAGE = {
    "label as a word": lambda r: r.replace("true", '"yes"'),
    "label as a number": lambda r: r.replace("false", "0"),
    "score out of range": lambda r: r.replace("0.25", "1.5"),
    "negative zero score": lambda r: r.replace("0.25", "-0.0"),
    "integer score": lambda r: r.replace("0.25", "1"),
    "score as text": lambda r: r.replace("0.25", '"0.25"'),
    "huge score": lambda r: r.replace("0.25", "1e400"),
    "repeated label": lambda r: r.replace("{", '{"label": false, ', 1),
    "repeated label, space before colon": lambda r: r.replace("{", '{"label" : false, ', 1),
    "label and prediction": lambda r: r.replace("{", '{"prediction": "yes", ', 1),
    "unknown field": lambda r: r.replace("{", '{"x": 1, ', 1),
    "id as text": lambda r: re.sub(r'"id": (\d+)', r'"id": "\1"', r),
}


@settings(SETTINGS, max_examples=300)
@given(keyed=st.booleans(), fields=st.sampled_from([("label",), ("score",), ("label", "score")]),
       data=st.data(), damage=st.lists(st.sampled_from(sorted(ID_DAMAGE)), max_size=2))
def test_identification_fast_path(keyed: bool, fields: tuple[str, ...], data: st.DataObject,
                                  damage: list[str]) -> None:
    lines = []
    for example in ID_GOLD:
        record: dict[str, Any] = {"key": example.key} if keyed else {"id": example.id}
        if "label" in fields:
            record["label"] = data.draw(st.booleans())
        if "score" in fields:
            record["score"] = data.draw(st.sampled_from([0.25, 0.5, 0.0, 1.0, 0.7]))
        lines.append(json.dumps(record))
    order = data.draw(st.permutations(range(len(lines))))
    lines = [lines[i] for i in order]
    for name in damage:
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = ID_DAMAGE[name](lines[i])
    raw = ("\n".join(lines) + "\n").encode()
    check_id_agreement(raw, ID_GOLD)
    if not damage:
        assert fast_labels(raw, ID_GOLD) is not None


@pytest.mark.parametrize("damage", sorted(ID_DAMAGE))
def test_each_damage_to_an_identification_file(damage: str) -> None:
    lines = [json.dumps({"id": e.id, "label": bool(e.label), "score": 0.25}) for e in ID_GOLD]
    lines[2] = ID_DAMAGE[damage](lines[2])
    check_id_agreement(("\n".join(lines) + "\n").encode(), ID_GOLD)


def test_records_naming_an_example_whose_key_they_do_not_make() -> None:
    """A gold example whose key is not its id and context joined: the fast path (which names
    official records by id and context) gives way and the exact parser decides, in gold
    order or not."""
    odd = GoldSplit("temp", "test", [temp_example(1, "2019", "orig", ("a",)),
                                     Example(key="2|2010|start|x", id=2, question="q?",
                                             context={"date": "2010", "date_type": "start"},
                                             answers=("b",), any_answers=("b",),
                                             partitions=("start",))])
    for order in ([0, 1], [1, 0]):
        raw = write_file(odd, ["a", "b"], "official", order, True, "\n")
        assert fast_answers(raw, odd) is None
        check_agreement(raw, odd)
    for order in ([0, 1, 2], [2, 1, 0]):
        raw = write_file(THREE, ["a", "b", "c"], "official", order, True, "\n")
        assert fast_answers(raw, THREE) == ("jsonl", ("a", "b", "c"))
