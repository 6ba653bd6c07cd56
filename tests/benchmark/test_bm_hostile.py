"""Hostile prediction files: refused at the bound they cross, before the work they cause.

No timing here (the CPU is measured by scripts/bench_hostile.py): each test checks the
refusal, its message (file, line) and, where it is the point, how much work was done.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
from bm_helpers import gz, jsonl, parse

from benchmark import FileTooLargeError, GoldSplit, ValidationError, fastparse, limits
from benchmark.formats import decompress_limited


def _records(gold: GoldSplit) -> list[dict[str, str]]:
    return [{"key": e.key, "prediction": "x"} for e in gold.examples]


def _unknown(count: int) -> list[dict[str, str]]:
    return [{"key": f"unknown-{i}", "prediction": "x"} for i in range(count)]


def _refusal(data: bytes, gold: GoldSplit) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse(data, gold)
    return caught.value


# --- gzip members --------------------------------------------------------------------------


def test_concatenated_members_are_one_file(tiny_temp: GoldSplit) -> None:
    data = jsonl(_records(tiny_temp))
    members = b"".join(gz(data[i:i + 7]) for i in range(0, len(data), 7))
    assert parse(members, tiny_temp).answers == ("x",) * len(tiny_temp)


def test_members_past_the_limit_are_refused_naming_the_file() -> None:
    empty = gz(b"")
    assert decompress_limited(empty * limits.MAX_GZIP_MEMBERS, "p.jsonl.gz", 1 << 20) == b""
    with pytest.raises(FileTooLargeError) as caught:
        decompress_limited(empty * 320_000, "p.jsonl.gz", 1 << 20)
    assert str(caught.value) == (
        f"p.jsonl.gz: gzip file has more than {limits.MAX_GZIP_MEMBERS} members (concatenated "
        "gzip streams); recompress it as one stream (gunzip, then gzip)")


def test_each_compressed_byte_is_fed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear work: the inflaters see the input once, plus at most one chunk a member (the
    old loop restarted each member from the rest of the input: quadratic)."""
    fed = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.inner = real(*args, **kwargs)

        def decompress(self, data: Any, max_length: int = 0) -> bytes:
            fed.append(len(data))
            return self.inner.decompress(data, max_length)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    members = 5_000
    data = gz(b"") * members
    decompress_limited(data, "m.gz", 1 << 20)
    assert sum(fed) <= len(data) + members * limits.GZIP_CHUNK
    assert sum(fed) < members * members * len(gz(b"")) // 4


def test_truncated_and_trailing_garbage_are_still_refused() -> None:
    whole = gz(b'{"key": "a", "prediction": "x"}\n' * 100)
    for data, message in ((whole[:-4], "gzip data is truncated"),
                          (whole + b"junk", "not a valid gzip file"),
                          (whole + whole[:2], "gzip data is truncated")):
        with pytest.raises(ValidationError, match=message):
            decompress_limited(data, "p.gz", 1 << 20)


def test_a_bomb_stops_at_the_byte_cap() -> None:
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = deflate.compress(bytes(1 << 24)) + deflate.flush()
    with pytest.raises(FileTooLargeError, match="decompressed content is larger than 1048576"):
        decompress_limited(member * 8, "zeros.gz", 1 << 20)


# --- records beyond the split's size ---------------------------------------------------------


def test_jsonl_stops_at_the_first_record_past_the_cap(tiny_temp: GoldSplit) -> None:
    cap = limits.max_records(len(tiny_temp))
    error = _refusal(jsonl(_records(tiny_temp) + _unknown(10_000)), tiny_temp)
    first = error.problems[0]
    assert (first.file, first.line) == ("preds.jsonl", cap + 1)
    assert first.message.startswith(f"more than {cap} records: temp/test has 4 examples")
    # Read no further: every record counted is named, none after the cap.
    assert len(error.keys) == cap


def test_a_file_at_the_cap_is_read_whole(tiny_temp: GoldSplit) -> None:
    extra = limits.max_records(len(tiny_temp)) - len(tiny_temp)
    error = _refusal(jsonl(_records(tiny_temp) + _unknown(extra)), tiny_temp)
    assert all("records" not in p.message for p in error.problems)
    assert error.problems[0].message == "unknown example for temp/test"


def test_csv_stops_at_the_first_row_past_the_cap(tiny_temp: GoldSplit) -> None:
    cap = limits.max_records(len(tiny_temp))
    rows = "".join(f"k{i},x\n" for i in range(cap + 50))
    error = _refusal(("key,prediction\n" + rows).encode(), tiny_temp)
    assert error.problems[0].line == cap + 2  # after the header line
    assert "records" in error.problems[0].message


def test_a_million_key_map_is_refused_before_it_is_built(
        tiny_temp: GoldSplit, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = limits.max_records(len(tiny_temp))
    document = json.dumps({f"k{i}": "x" for i in range(10**6)}).encode()

    def never(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the whole document was decoded")

    class Never:
        decode = staticmethod(never)

    monkeypatch.setattr(fastparse, "_MAP_DECODER", Never())
    monkeypatch.setattr("benchmark.formats.loads_strict", never)
    error = _refusal(gz(document), tiny_temp)
    assert error.problems[0].message.startswith(f"more than {cap} records")
    assert error.problems[0].line == 1


def test_a_list_of_a_million_records_is_refused(tiny_temp: GoldSplit) -> None:
    document = ("[\n" + ",\n".join(["{}"] * 10**6) + "\n]").encode()
    error = _refusal(document, tiny_temp)
    cap = limits.max_records(len(tiny_temp))
    assert error.problems[0].message.startswith(f"more than {cap} records")
    assert error.problems[0].line == cap + 2


def test_a_document_with_too_many_values_is_not_decoded(tiny_temp: GoldSplit) -> None:
    values = ",".join(["1"] * (limits.max_punctuation(len(tiny_temp)) + 1))
    error = _refusal(f'{{"{tiny_temp.examples[0].key}": [{values}]}}'.encode(), tiny_temp)
    assert "more values and fields" in error.problems[0].message


def test_a_record_with_too_many_values_is_named(tiny_temp: GoldSplit) -> None:
    values = ",".join(["1"] * (limits.MAX_PUNCTUATION_PER_RECORD + 1))
    data = jsonl(_records(tiny_temp)[:1]) + f'{{"key": "k", "v": [{values}]}}\n'.encode()
    error = _refusal(data, tiny_temp)
    assert error.problems[0].line == 2
    assert "more than 256 JSON values" in error.problems[0].message


def test_the_fast_path_decodes_nothing_of_a_million_records(
        tiny_temp: GoldSplit, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_args: Any) -> Any:
        raise AssertionError("records were decoded")

    monkeypatch.setattr(fastparse, "_decode_lines", never)
    data = jsonl(_unknown(10**5))
    assert fastparse.fast_answers(data, tiny_temp) is None


def test_deep_nesting_is_refused(tiny_temp: GoldSplit) -> None:
    error = _refusal(b"[" * 10**6 + b"]" * 10**6, tiny_temp)
    assert error.problems[0].message == "malformed JSON: nested too deeply"


def test_json_depth_of_a_body() -> None:
    deep = limits.MAX_JSON_DEPTH
    assert not limits.json_depth_exceeds(b"[" * deep + b"]" * deep)
    assert limits.json_depth_exceeds(b"[" * (deep + 1) + b"]" * (deep + 1))
    assert limits.json_depth_exceeds(b'{"a":' * (deep + 1) + b"1" + b"}" * (deep + 1))
    # Brackets inside strings are text, not nesting (an escaped quote does not end one).
    assert not limits.json_depth_exceeds(b'["' + b"[\\\"" * 100 + b'"]')
    assert limits.json_depth_exceeds(b"[" * 10**6)


@pytest.mark.parametrize("output_chunk", [1, 7, 4096])
def test_small_output_chunks_give_the_same_content(
        monkeypatch: pytest.MonkeyPatch, output_chunk: int) -> None:
    """Output cut anywhere (inside a long match too) is drained, not taken for truncation."""
    monkeypatch.setattr(limits, "GZIP_OUTPUT_CHUNK", output_chunk)
    content = b"abc" * 5000 + bytes(range(256)) * 20 + b"z" * 3000
    data = gz(content[:1000]) + gz(content[1000:]) + gz(b"")
    assert decompress_limited(data, "p.gz", 1 << 20) == content
    with pytest.raises(ValidationError, match="truncated"):
        decompress_limited(data[:-30], "p.gz", 1 << 20)
