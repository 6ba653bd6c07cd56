"""Property tests: whatever the bytes, the parser either returns Predictions or raises
ValidationError (FileTooLargeError is one) -- never anything else."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from bm_helpers import curprev_example, geo_example, id_example, present_example, temp_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import GoldSplit, Predictions, ValidationError, parse_predictions

GOLDS = {
    "temp": GoldSplit("temp", "test", [temp_example(1, "2019", "orig", ("a",)),
                                       temp_example(2, "2010", "start", ("b",))]),
    "geo": GoldSplit("geo", "test", [geo_example(3, "India", ("c",)),
                                     geo_example(3, "Peru", ("d",))]),
    "temp-id": GoldSplit("temp-id", "test", [id_example(1, True, "webq"),
                                             id_example(2, False, "marco")]),
    "present": GoldSplit("present", "test", [present_example(1, "stable", ("e",))]),
    "curprev": GoldSplit("curprev", "test", [curprev_example(1, "current", ("f",))]),
}
gold_strategy = st.sampled_from(sorted(GOLDS)).map(GOLDS.__getitem__)

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

json_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                | st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)

FIELDS = ["id", "key", "label", "score", "prediction", "pred_answer", "date", "date_type",
          "location", "which", "answer", "question"]
# Values that reach deep into the validation code: real keys and ids, labels, odd numbers.
plausible_values = st.one_of(
    json_values,
    st.sampled_from([1, 2, 3, "1", "2", " 3 ", "-1", "--1", "\u00b2", "1" * 5000, 10 ** 300,
                     "2019", "2010", "orig", "start", "India", "Peru", "current", "previous",
                     "1|2019|orig", "2|2010|start", "3|India", "yes", "no", "true", "1", 0.5,
                     1.0, 0, 1.5, -0.0, 1e308, True, False, None, "", "NaN"]),
)
records = st.dictionaries(st.sampled_from(FIELDS), plausible_values, max_size=6)


def check(data: bytes, gold: GoldSplit) -> None:
    try:
        result = parse_predictions(data, gold, filename="fuzz", max_bytes=1 << 20)
    except ValidationError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.file == "fuzz"
            assert isinstance(problem.message, str) and problem.message
        str(error)
        json.dumps(error.to_json())
    else:
        assert isinstance(result, Predictions)
        assert result.keys == tuple(e.key for e in gold.examples)


@SETTINGS
@given(data=st.binary(max_size=400), gold=gold_strategy)
def test_random_bytes(data: bytes, gold: GoldSplit) -> None:
    check(data, gold)


@SETTINGS
@given(text=st.text(max_size=300), gold=gold_strategy)
def test_random_text(text: str, gold: GoldSplit) -> None:
    check(text.encode("utf-8"), gold)


@SETTINGS
@given(value=json_values, gold=gold_strategy)
def test_random_json_value(value: Any, gold: GoldSplit) -> None:
    check(json.dumps(value).encode(), gold)


@SETTINGS
@given(value=st.dictionaries(st.text(max_size=15)
                             | st.sampled_from(["1|2019|orig", "1", "3|India"]),
                             plausible_values, max_size=5),
       gold=gold_strategy, indent=st.sampled_from([None, 2]))
def test_random_json_object(value: dict[str, Any], gold: GoldSplit, indent: int | None) -> None:
    check(json.dumps(value, indent=indent).encode(), gold)


@SETTINGS
@given(value=st.lists(records, max_size=5), gold=gold_strategy)
def test_random_json_list(value: list[dict[str, Any]], gold: GoldSplit) -> None:
    check(json.dumps(value).encode(), gold)


@SETTINGS
@given(lines=st.lists(records, max_size=6), gold=gold_strategy,
       compress=st.booleans(), newline=st.sampled_from(["\n", "\r\n", "\u2028\n"]))
def test_random_jsonl_records(lines: list[dict[str, Any]], gold: GoldSplit, compress: bool,
                              newline: str) -> None:
    data = newline.join(json.dumps(r, ensure_ascii=False) for r in lines).encode()
    check(gzip.compress(data) if compress else data, gold)


@SETTINGS
@given(data=st.binary(max_size=300), gold=gold_strategy, cut=st.integers(0, 400))
def test_gzip_of_random_bytes(data: bytes, gold: GoldSplit, cut: int) -> None:
    compressed = gzip.compress(data)
    check(compressed, gold)
    check(compressed[:cut], gold)  # truncated gzip
    check(b"\x1f\x8b" + data, gold)  # the magic followed by junk


@SETTINGS
@given(rows=st.lists(st.tuples(st.text(max_size=12), st.text(max_size=12)), max_size=5),
       header=st.sampled_from(["key,prediction", "key,label", "key,score", "id,x", ""]),
       gold=gold_strategy)
def test_random_csv(rows: list[tuple[str, str]], header: str, gold: GoldSplit) -> None:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    for row in rows:
        writer.writerow(row)
    check((header + "\n" + out.getvalue()).encode(), gold)


@pytest.mark.parametrize("data", [
    b'{"id": "\xc2\xb2", "label": true}',  # a Unicode digit is not an id
    b'{"id": "--5", "label": true}',
    b'{"key": "1", "score": 1' + b"0" * 400 + b"}",  # an int too large for a float
    b'{"id": "' + b"1" * 5000 + b'", "label": 1}',  # beyond Python's int digit limit
    b"[" * 100_000,  # nesting too deep
    '{"key": "1", "label": "a\u2028b"}\n'.encode(),
])
def test_former_crashes(data: bytes) -> None:
    # Each of these raised ValueError/OverflowError/RecursionError before the fixes.
    check(data, GOLDS["temp-id"])
