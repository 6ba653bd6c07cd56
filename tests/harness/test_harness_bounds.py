"""Hostile harness files: refused with a problem that names the file (and line), before the
JSON decoder builds what they ask for, never as an exception a view would not catch."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from harness_helpers import eval_archive, inspect_log, samples_file, tiny

from benchmark import ValidationError, limits
from benchmark.harness_files import parse_file

DEEP = 5_000  # past the decoders' own recursion limits (about 1,000 levels)


def first_line(data: bytes) -> dict[str, object]:
    return json.loads(data.split(b"\n", 1)[0])


def with_first_line(data: bytes, record: dict[str, object]) -> bytes:
    return json.dumps(record).encode() + b"\n" + data.split(b"\n", 1)[1]


def messages(error: pytest.ExceptionInfo[ValidationError]) -> str:
    return "\n".join(str(p) for p in error.value.problems)


def test_too_many_lines_are_refused_before_any_is_read() -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions) + b"{}\n" * limits.max_harness_records(len(gold))
    with pytest.raises(ValidationError) as error:
        parse_file(data, gold, filename="samples.jsonl")
    assert "samples.jsonl" in messages(error) and "more than" in messages(error)
    assert f"{limits.max_harness_records(len(gold)):,} lines" in messages(error)


def test_a_line_of_a_million_values_is_refused_naming_its_line() -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions)
    record = first_line(data)
    record["resps"] = [[0] * 1_000_000]
    with pytest.raises(ValidationError) as error:
        parse_file(with_first_line(data, record), gold, filename="samples.jsonl")
    assert "samples.jsonl:1" in messages(error)
    assert f"more than {limits.MAX_PUNCTUATION_PER_HARNESS_RECORD:,} JSON values" in \
        messages(error)


@pytest.mark.parametrize("where", ["doc", "resps"])
def test_deep_nesting_in_a_samples_line_is_refused_naming_its_line(where: str) -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions)
    record = first_line(data)
    text = json.dumps(record)
    deep = "[" * DEEP + "]" * DEEP
    marker = '"doc": {' if where == "doc" else '"resps": '
    head, tail = text.split(marker, 1)
    text = (f'{head}{marker}"deep": {deep}, {tail}' if where == "doc"
            else f"{head}{marker}{deep}, \"resps_was\": {tail}")
    with pytest.raises(ValidationError) as error:
        parse_file(text.encode() + b"\n" + data.split(b"\n", 1)[1], gold,
                   filename="samples.jsonl")
    assert "samples.jsonl:1" in messages(error)


def test_deep_nesting_in_an_inspect_json_log_is_refused() -> None:
    gold, predictions = tiny()
    log = inspect_log(gold, predictions)
    text = json.dumps(log).replace('"version": 2', '"deep": ' + "[" * DEEP + "]" * DEEP
                                   + ', "version": 2', 1)
    with pytest.raises(ValidationError) as error:
        parse_file(text.encode(), gold, filename="log.json")
    assert "log.json" in messages(error)


def archive_with(data: bytes, name: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, content if info.filename == name
                             else source.read(info))
    return out.getvalue()


def test_deep_nesting_in_an_eval_archive_member_is_refused_naming_the_member() -> None:
    gold, predictions = tiny()
    data = eval_archive(inspect_log(gold, predictions))
    member = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist()
                  if n.startswith("samples/"))
    hostile = archive_with(data, member, b"[" * DEEP + b"]" * DEEP)
    with pytest.raises(ValidationError) as error:
        parse_file(hostile, gold, filename="log.eval")
    assert f"log.eval/{member}" in messages(error)
