"""Prediction files: every accepted format, validated completely, problems named precisely.

A file either parses into a prediction for every gold example, or it is rejected with the
list of its problems (file, line, key, message). Nothing is ever scored partially.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from . import limits
from .example import question_key
from .fastparse import fast_answers, fast_labels
from .gold import GoldSet, GoldSplit
from .normalize import normalize_many
from .tracks import TRACK_INFO, track_info

DEFAULT_MAX_PROBLEMS = 20
#: Decompressed size limit of a prediction file (see limits.MAX_DECOMPRESSED_BYTES).
DEFAULT_MAX_BYTES = limits.MAX_DECOMPRESSED_BYTES
GZIP_MAGIC = b"\x1f\x8b"
MISSING_SHOWN = 5
#: Longest excerpt of an uploaded value quoted back in a problem message.
MAX_QUOTED = 80
_INTEGER = re.compile(r"-?[0-9]+")
_JSON_NAME = re.compile(r"\.jsonl?(\.gz)?$", re.IGNORECASE)
#: Characters no stored or shown text may hold: NUL and lone surrogates (a decoded string
#: holds a surrogate only when it was written as a lone \\uD800-\\uDFFF escape).
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
#: An escape that may decode to a NUL or a surrogate (or text that merely looks like one).
_MAY_HOLD_BAD_TEXT = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
#: Every escape of a JSON text, in order (an escaped backslash is one escape).
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def printable(text: str) -> str:
    """The text with NUL and lone surrogates written as escapes, safe to encode as UTF-8."""
    return _BAD_TEXT.sub(lambda m: _escape(m.group()), text)


def _escape(char: str) -> str:
    return f"\\u{ord(char):04x}"

# Gold fields an upload may carry (answer, any_answer, ...: e.g. an edited copy of the
# release) are never read: only the key fields and the prediction are.

#: Fields that identify the track a record was written for, to name a wrong-track file:
#: every track's context fields, the most specific first.
_TRACK_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = tuple(sorted(
    ((name, frozenset(info.context_fields)) for name, info in TRACK_INFO.items()
     if info.context_fields), key=lambda signature: -len(signature[1])))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an uploaded file."""

    file: str
    message: str
    line: int | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        # A lone surrogate (from an uploaded key or file name) cannot be encoded as UTF-8:
        # shown as an escape, a problem is always safe to store, print and render.
        for name in ("file", "message", "key"):
            value = getattr(self, name)
            if value is not None and _BAD_TEXT.search(value):
                object.__setattr__(self, name, printable(value))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}" + (f" (key {self.key!r})" if self.key else "")

    def to_json(self) -> dict[str, Any]:
        """The problem as a JSON object (file, line, key, message)."""
        return {"file": self.file, "line": self.line, "key": self.key, "message": self.message}


class ValidationError(Exception):
    """A prediction file was rejected; `problems` lists why."""

    def __init__(
        self, problems: list[Problem], *, truncated: int = 0, keys: tuple[str, ...] = ()
    ) -> None:
        self.problems = problems
        self.truncated = truncated
        #: The example key every record of the file names (as written, or made from its id
        #: and context fields), for wrong_split_hint; empty when the file could not be read.
        self.keys = keys
        summary = "; ".join(str(p) for p in problems[:3])
        more = len(problems) - 3 + truncated
        super().__init__(summary + (f"; and {more} more" if more > 0 else ""))

    def to_json(self) -> list[dict[str, Any]]:
        """The problem list as JSON objects."""
        return [p.to_json() for p in self.problems]


class FileTooLargeError(ValidationError):
    """The file, or its decompressed content, exceeds the size limit."""


@dataclass(frozen=True)
class Predictions:
    """A complete, validated set of predictions, aligned with the gold's example order."""

    track: str
    split: str
    format: str
    answers: tuple[str, ...] | None = None
    labels: npt.NDArray[np.bool_] | None = None
    scores: npt.NDArray[np.float64] | None = None
    keys: tuple[str, ...] = field(default=())
    #: A harness file's run (benchmark.harness_files.HarnessInfo.to_json), else None.
    harness: Mapping[str, Any] | None = field(default=None, compare=False)

    @cached_property
    def normalized_answers(self) -> tuple[str, ...]:
        """The answers after the paper's normalization, computed once for every reader."""
        if self.answers is None:
            raise ValueError("identification predictions have no answers")
        return tuple(normalize_many(self.answers))

    def value_of(self, position: int) -> str | bool:
        """The prediction for the example at `position` in gold order."""
        if self.answers is not None:
            return self.answers[position]
        if self.labels is None:
            raise ValueError("predictions hold neither answers nor labels")
        return bool(self.labels[position])


def _quote(value: Any) -> str:
    """repr() of an uploaded value, shortened so that messages stay readable."""
    try:
        text = repr(value)
    except ValueError:  # e.g. an integer beyond Python's digit limit
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 3] + "..."


class _Collector:
    """Gathers problems up to a cap, counting the rest."""

    def __init__(self, filename: str, cap: int) -> None:
        self.filename = filename
        self.cap = cap
        self.problems: list[Problem] = []
        self.dropped = 0
        #: Set when the file's structure could not be read at all (one broken JSON document,
        #: a wrong CSV header): listing every example as missing would then only add noise.
        self.unreadable = False

    def add(self, message: str, line: int | None = None, key: str | None = None) -> None:
        if len(self.problems) < self.cap:
            self.problems.append(Problem(self.filename, message, line, key))
        else:
            self.dropped += 1

    def lead(self, message: str, line: int | None = None) -> None:
        """A problem that explains the others (e.g. a limit that stopped the reading): listed
        first, whatever the cap."""
        self.problems.insert(0, Problem(self.filename, message, line))
        if len(self.problems) > self.cap:
            self.problems.pop()
            self.dropped += 1

    def raise_if_any(self, keys: tuple[str, ...] = ()) -> None:
        if self.problems:
            raise ValidationError(self.problems, truncated=self.dropped, keys=keys)


def decompress_limited(data: bytes, filename: str, max_bytes: int,
                       max_members: int = limits.MAX_GZIP_MEMBERS) -> bytes:
    """Gunzip when the gzip magic is present, never producing more than max_bytes.

    Linear in the input: the compressed bytes are fed in chunks of limits.GZIP_CHUNK from
    an offset into the input, and a member's end starts the next inflater at the first byte
    it left, so no member copies the rest of the input. More than max_members members (a
    file of empty ones is 20 bytes a member) are refused before their work is done.
    """
    if len(data) > max_bytes and not data.startswith(GZIP_MAGIC):
        raise FileTooLargeError([Problem(filename, f"file is larger than {max_bytes} bytes")])
    if not data.startswith(GZIP_MAGIC):
        return data
    view = memoryview(data)
    out = io.BytesIO()  # getvalue() hands over its buffer: no second copy of the content
    offset = 0
    members = 0
    try:
        while offset < len(data):
            members += 1
            if members > max_members:
                raise FileTooLargeError([Problem(
                    filename, f"gzip file has more than {max_members} members (concatenated "
                    "gzip streams); recompress it as one stream (gunzip, then gzip)")])
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            while not inflater.eof:
                # Past the input's end, b"" drains what the inflater still holds.
                chunk = view[offset:offset + limits.GZIP_CHUNK]
                offset += len(chunk)
                pending: bytes | memoryview = chunk
                while True:
                    # >= 1 (0 would mean "no limit" to zlib), and at most one output chunk:
                    # a bomb's content is never held twice, as a call's result and in `out`.
                    room = min(limits.GZIP_OUTPUT_CHUNK, max_bytes + 1 - out.tell())
                    produced = inflater.decompress(pending, room)
                    out.write(produced)
                    if out.tell() > max_bytes:
                        raise FileTooLargeError([Problem(
                            filename, f"decompressed content is larger than {max_bytes} bytes")])
                    pending = inflater.unconsumed_tail
                    # Done with this chunk once it is consumed and the output was not cut.
                    if inflater.eof or (not pending and len(produced) < room):
                        break
                if not chunk and not inflater.eof:
                    raise ValidationError([Problem(filename, "gzip data is truncated")])
            # What the member left of its last chunk is the next member's start.
            offset -= len(inflater.unused_data)
    except zlib.error as exc:
        raise ValidationError([Problem(filename, f"not a valid gzip file: {exc}")]) from None
    content = out.getvalue()
    # A text file never starts with the magic (0x8B is no UTF-8 lead byte): this is gzip in
    # gzip, which read as text would fail on every line for a reason that hides the cause.
    if content.startswith(GZIP_MAGIC):
        raise ValidationError([Problem(
            filename, "file is compressed twice (gzip inside gzip): gunzip it once and "
            "upload the result")])
    return content


def decode_text(data: bytes, filename: str) -> str:
    """Strict UTF-8, with or without a byte-order mark."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValidationError([Problem(
            filename, _utf8_message(data, exc), line, _key_on_line(data, exc.start))]) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ValidationError([Problem(filename, "contains a NUL character", line)])
    return text


def _utf8_message(data: bytes, exc: UnicodeDecodeError) -> str:
    bad = data[exc.start:exc.start + 3]
    if len(bad) == 3 and bad[0] == 0xED and 0xA0 <= bad[1] <= 0xBF and 0x80 <= bad[2] <= 0xBF:
        surrogate = bad.decode("utf-8", "surrogatepass")
        return (f"not valid UTF-8 (byte {exc.start}): bytes {bad.hex(' ').upper()} encode the "
                f"lone surrogate U+{ord(surrogate):04X}, which is not a character")
    return f"not valid UTF-8 (byte {exc.start}: {exc.reason})"


def _key_on_line(data: bytes, position: int) -> str | None:
    """The example key of the entry holding byte `position`, when its line shows one."""
    start = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    line = data[start:] if end < 0 else data[start:end]
    text = line.decode("utf-8", "replace").strip()
    # A JSONL record, a whole one-line document, or one entry of a pretty-printed document.
    for candidate in (text, text.strip("[],"), "{" + text.rstrip(",") + "}"):
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        key = _entry_with_replacement(value)
        return printable(key) if key is not None else None
    if text[:1] in ("{", "["):
        return None
    try:
        row = next(csv.reader([text]), [])
    except csv.Error:
        return None
    return printable(row[0]) if row and row[0] else None


def _entry_with_replacement(value: Any) -> str | None:
    """The key of the entry of a decoded value that holds U+FFFD (bytes replaced above)."""
    if isinstance(value, dict):
        key = natural_key(value)
        if key is not None or _looks_like_record(value):
            return key
        return next((k for k, v in value.items() if "\ufffd" in json.dumps([k, v],
                     ensure_ascii=False)), None)
    if isinstance(value, list):
        return next((natural_key(item) for item in value if isinstance(item, dict)
                     and "\ufffd" in json.dumps(item, ensure_ascii=False)), None)
    return None


def natural_key(record: Mapping[str, Any]) -> str | None:
    """The key a record names: its 'key', else the key its id and context fields make."""
    if "key" in record:
        return record["key"] if isinstance(record["key"], str) else None
    nq_id = _parse_id(record.get("id"))
    if nq_id is None:
        return None
    for track, signature in _TRACK_SIGNATURES:
        if signature <= record.keys() and all(isinstance(record[f], str) for f in signature):
            return TRACK_INFO[track].key(nq_id, record)
    return question_key(nq_id)


def _bad_text(value: Any) -> str | None:
    """The first NUL or lone surrogate in any string of a JSON value (field names too)."""
    if isinstance(value, str):
        found = _BAD_TEXT.search(value)
        return found.group() if found else None
    if isinstance(value, dict):
        items: Any = (x for pair in value.items() for x in pair)
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        bad = _bad_text(item)
        if bad is not None:
            return bad
    return None


def _bad_text_count(value: Any) -> int:
    """How many NULs and lone surrogates all strings of a JSON value hold."""
    if isinstance(value, str):
        return len(_BAD_TEXT.findall(value))
    if isinstance(value, dict):
        return sum(_bad_text_count(k) + _bad_text_count(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_bad_text_count(item) for item in value)
    return 0


def _bad_escape_lines(text: str) -> list[int]:
    """Line of every escape that decodes to a NUL or a lone surrogate, in text order."""
    lines: list[int] = []
    escapes = list(_JSON_ESCAPE.finditer(text))
    paired = False
    for position, escape in enumerate(escapes):
        if paired:
            paired = False
            continue
        if escape.group(1) is None:
            continue
        code = int(escape.group(1), 16)
        if 0xD800 <= code <= 0xDBFF and position + 1 < len(escapes):
            low = escapes[position + 1]
            if (low.start() == escape.end() and low.group(1) is not None
                    and 0xDC00 <= int(low.group(1), 16) <= 0xDFFF):
                paired = True
                continue
        if code == 0 or 0xD800 <= code <= 0xDFFF:
            lines.append(text.count("\n", 0, escape.start()) + 1)
    return lines


def _document_lines(text: str, entries: list[Entry]) -> list[Entry]:
    """Entries of one JSON document, with the line of their first NUL or lone surrogate."""
    lines = _bad_escape_lines(text)
    if not lines:
        return entries
    located: list[Entry] = []
    seen = 0
    for line, record in entries:
        count = _bad_text_count(record)
        if count and seen < len(lines):
            line = lines[seen]
        seen += count
        located.append((line, record))
    return located


class _JSONProblem(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _JSONProblem(f"{name} is not valid JSON")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise _JSONProblem(f"field {_quote(name)} appears twice in one object")
        result[name] = value
    return result


def loads_strict(text: str) -> Any:
    """json.loads without NaN/Infinity and without duplicate fields in an object."""
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_object)


def _json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "malformed JSON: nested too deeply"
    return f"malformed JSON: {exc}"


# --- reading the entries of each layout: (line, record) pairs -------------------------------

Entry = tuple[int | None, Any]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) of each line, split on "\n" only and one at a time: a file of a
    million lines is never held as a million strings when its reading stops early."""
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, \f ..., which
    # JSON allows inside strings, and would make line numbers disagree with editors.
    start = 0
    number = 1
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield number, text[start:]
            return
        yield number, text[start:end]
        start = end + 1
        number += 1


class _RecordCap:
    """Counts a file's records; the first one past its split's size plus the margin stops
    the reading, naming its line (see limits.RECORDS_MARGIN)."""

    def __init__(self, gold: GoldSplit, problems: _Collector) -> None:
        self.limit = limits.max_records(len(gold))
        self.gold = gold
        self.problems = problems
        self.count = 0

    def over(self, line: int | None) -> bool:
        """Count one record; True (and the problem reported) when it is past the limit."""
        self.count += 1
        if self.count <= self.limit:
            return False
        self.problems.lead(too_many_records(self.gold, self.limit), line)
        self.problems.unreadable = True  # every example "missing" would only add noise
        return True


def too_many_records(gold: GoldSplit, limit: int) -> str:
    """The message of a file with more records than its split allows."""
    return (f"more than {limit} records: {gold.track}/{gold.split} has {len(gold)} examples "
            f"(a file holds one record each, and at most {limits.RECORDS_MARGIN} more); "
            "the file was read up to here")


def _jsonl_entries(text: str, gold: GoldSplit, problems: _Collector) -> Iterator[Entry]:
    cap = _RecordCap(gold, problems)
    for number, line in _lines(text):
        if not line.strip():
            continue
        if cap.over(number):
            return
        if limits.values_exceed(line, limits.MAX_PUNCTUATION_PER_RECORD):
            problems.add(f"record holds more than {limits.MAX_PUNCTUATION_PER_RECORD} JSON "
                         "values and fields (',' and ':'); a prediction record needs a few",
                         number)
            continue
        try:
            yield number, loads_strict(line)
        except (ValueError, RecursionError) as exc:
            problems.add(_json_error(exc), number)


def _csv_lines(text: str, problems: _Collector) -> Iterator[str]:
    """The text's lines for the CSV reader, stopping before one with more commas than a
    record needs (the reader would build a list of all its cells first)."""
    for number, line in _lines(text):
        if line.count(",") > limits.MAX_PUNCTUATION_PER_RECORD:
            problems.lead(f"line holds more than {limits.MAX_PUNCTUATION_PER_RECORD} commas; a "
                         "CSV record has two columns; the file was read up to here", number)
            problems.unreadable = True
            return
        yield line + "\n"


def _csv_entries(text: str, gold: GoldSplit, problems: _Collector,
                 value_fields: tuple[str, ...]) -> Iterator[Entry]:
    reader = csv.reader(_csv_lines(text, problems))
    cap = _RecordCap(gold, problems)
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        problems.add("CSV file has no header", 1)
        problems.unreadable = True
        return
    names = [h.strip() for h in header]
    if len(names) != 2 or names[0] != "key" or names[1] not in value_fields:
        wanted = " or ".join(f"key,{v}" for v in value_fields)
        got = _quote(",".join(names))
        if len(names) < 2 or _JSON_NAME.search(problems.filename):
            problems.add(
                "neither valid JSON Lines nor CSV: JSON Lines has one JSON object a line "
                f"(starting with '{{'), CSV starts with the header {wanted}; line 1 is {got}", 1)
        else:
            problems.add(f"CSV header must be {wanted}, got {got}", 1)
        problems.unreadable = True
        return
    try:
        for row in reader:
            line = reader.line_num
            if not row or row == [""]:
                continue
            if cap.over(line):
                return
            if len(row) != 2:
                problems.add(f"expected 2 CSV columns, got {len(row)}", line)
                continue
            value: Any = row[1]
            if names[1] == "score":
                # Not a number: kept as text, which the record check rejects, naming line and key.
                with contextlib.suppress(ValueError):
                    value = float(row[1])
            yield line, {"key": row[0], names[1]: value}
    except csv.Error as exc:
        problems.add(f"malformed CSV: {exc}", reader.line_num)


_RECORD_FIELDS = frozenset({"key", "id", "pred_answer", "prediction", "pred_label", "label",
                            "score"})
#: Fields that hold a predicted label (the official classifier script writes `pred_label`).
#: `label` is a gold field in the official README: it is read as the prediction only when
#: neither of these is in the record, so a record carrying its gold label and a prediction
#: is scored on the prediction.
PREDICTED_LABEL_FIELDS = ("pred_label", "prediction")


def _looks_like_record(document: Mapping[str, Any]) -> bool:
    """An object with a field of a prediction record."""
    return bool(_RECORD_FIELDS & document.keys())


def _looks_like_mapping(document: Any) -> bool:
    """A top-level object that is a {key: prediction} map rather than one JSONL record."""
    return isinstance(document, dict) and not _looks_like_record(document)


# --- turning one record into (key, value) --------------------------------------------------


def _parse_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        try:
            return int(value.strip())
        except ValueError:  # beyond Python's digit limit: not an NQ id anyway
            return None
    return None


def _record_key(track: str, record: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The gold key an `id`-based record refers to, or an error message."""
    nq_id = _parse_id(record.get("id"))
    if nq_id is None:
        return None, f"field 'id' must be an integer, got {_quote(record.get('id'))}"
    info = track_info(track)
    for name in info.context_fields:
        if not isinstance(record.get(name), str):
            return None, f"field {name!r} (a string) is required for track {track}"
    for name, allowed in info.context_values.items():
        if record[name] not in allowed:
            return None, (f"field {name!r} must be {' or '.join(map(repr, allowed))}, got "
                          f"{_quote(record[name])}")
    return info.key(nq_id, record), None


# Strings too: a CSV cell is always text ("1"/"0" there means 1/0).
_LABEL_WORDS = {"yes": True, "no": False, "true": True, "false": False, "1": True, "0": False}


def parse_label(value: Any) -> bool | None:
    """A label: true/false, "yes"/"no" or 1/0; None when it is none of these."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, float) and value in (0.0, 1.0):
        return bool(value)
    if isinstance(value, str):
        return _LABEL_WORDS.get(value.strip().lower())
    return None


def parse_score(value: Any) -> float | None:
    """A probability in [0, 1]; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        score = float(value)
    except OverflowError:
        return None
    return score if math.isfinite(score) and 0.0 <= score <= 1.0 else None


@dataclass
class _Parsed:
    answers: dict[str, str] = field(default_factory=dict)
    labels: dict[str, bool] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    seen_lines: dict[str, int | None] = field(default_factory=dict)
    #: Keys whose record was found but whose value (label, score) was rejected.
    bad_values: set[str] = field(default_factory=set)
    #: The key each record names, whether or not it belongs to the split.
    named_keys: list[str] = field(default_factory=list)
    #: False when the text has no escape that decodes to a NUL or a surrogate: then no
    #: record can hold one (raw NULs are refused, and valid UTF-8 has no surrogate).
    check_text: bool = True


def _wrong_track_hint(track: str, record: Mapping[str, Any]) -> str | None:
    for other, signature in _TRACK_SIGNATURES:
        if other != track and signature <= record.keys():
            return f"this record has the fields of track {other!r}, not {track!r}"
    return None


def _read_record(
    gold: GoldSplit, line: int | None, record: Any, parsed: _Parsed, problems: _Collector
) -> None:
    if not isinstance(record, dict):
        problems.add(f"expected a JSON object, got {type(record).__name__}", line)
        return
    named = natural_key(record)
    if named is not None:
        parsed.named_keys.append(printable(named))
    if parsed.check_text and _reject_bad_text(record, line, named, problems):
        if named in gold.index and named not in parsed.seen_lines:
            parsed.seen_lines[named] = line  # reported; "no prediction" would only add noise
            parsed.bad_values.add(named)
        return
    if "key" in record:
        key = record["key"]
        if not isinstance(key, str):
            problems.add(f"field 'key' must be a string, got {_quote(key)}", line)
            return
    elif "id" in record:
        derived, error = _record_key(gold.track, record)
        if derived is None:
            problems.add(_wrong_track_hint(gold.track, record) or error or "bad record", line)
            return
        key = derived
    else:
        problems.add("record has neither 'key' nor 'id'", line)
        return
    if key not in gold.index:
        hint = _wrong_track_hint(gold.track, record)
        problems.add(hint or f"unknown example for {gold.track}/{gold.split}", line, key)
        return
    if key in parsed.seen_lines:
        first = parsed.seen_lines[key]
        problems.add(f"duplicate prediction (first on line {first})", line, key)
        return
    parsed.seen_lines[key] = line
    if gold.is_identification:
        _read_label(record, line, key, parsed, problems)
    else:
        _read_answer(record, line, key, parsed, problems)


def _reject_bad_text(
    record: dict[str, Any], line: int | None, key: str | None, problems: _Collector
) -> bool:
    """Report a NUL or lone surrogate in the record (stored text must be valid Unicode)."""
    for name, value in record.items():
        bad = _bad_text(name) or _bad_text(value)
        if bad is None:
            continue
        problems.add(bad_text_message(printable(name), bad), line, key)
        return True
    return False


def bad_text_problem(field_name: str, value: Any) -> str | None:
    """The problem of a NUL or lone surrogate in a field's value, or None. The one rule of
    every format: stored and shown text is valid Unicode without NUL."""
    bad = _bad_text(value)
    return None if bad is None else bad_text_message(field_name, bad)


def bad_text_message(field_name: str, bad: str) -> str:
    """What a NUL or a lone surrogate in a field is told as, in every format."""
    if bad == "\x00":
        return f"field {field_name!r} holds a NUL character (\\u0000), which cannot be stored"
    return (f"field {field_name!r} holds a lone surrogate ({_escape(bad)}), which is not a "
            "character: write the text itself, or a character beyond U+FFFF as a complete "
            "surrogate pair")


def _read_answer(
    record: Mapping[str, Any], line: int | None, key: str, parsed: _Parsed, problems: _Collector
) -> None:
    fields = [name for name in ("pred_answer", "prediction") if name in record]
    if len(fields) != 1:
        problems.add("record needs exactly one of 'pred_answer' or 'prediction'", line, key)
        return
    value = record[fields[0]]
    if not isinstance(value, str):
        problems.add(f"{fields[0]!r} must be a string, got {type(value).__name__}", line, key)
        return
    parsed.answers[key] = value


def _read_label(
    record: Mapping[str, Any], line: int | None, key: str, parsed: _Parsed, problems: _Collector
) -> None:
    predicted = [name for name in PREDICTED_LABEL_FIELDS if name in record]
    if len(predicted) > 1:
        problems.add(f"record has both {predicted[0]!r} and {predicted[1]!r}; give the "
                     "predicted label once", line, key)
        parsed.bad_values.add(key)
        return
    label_field = predicted[0] if predicted else ("label" if "label" in record else None)
    if label_field is None and "score" not in record:
        problems.add("record needs 'pred_label', 'label' or 'score'", line, key)
        parsed.bad_values.add(key)
        return
    if "score" in record:
        score = parse_score(record["score"])
        if score is None:
            problems.add(f"'score' must be a number in [0, 1], got {_quote(record['score'])}",
                         line, key)
            parsed.bad_values.add(key)
            return
        parsed.scores[key] = score
    if label_field is not None:
        label = parse_label(record[label_field])
        if label is None:
            problems.add(
                f"{label_field!r} must be true/false, \"yes\"/\"no\" or 1/0, got "
                f"{_quote(record[label_field])}", line, key)
            parsed.bad_values.add(key)
            return
        parsed.labels[key] = label


def _is_one_document(text: str) -> bool:
    """True when text is a single JSON document for the permissive parser."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


_DECODER = json.JSONDecoder()
#: The C string scanner of the json module (typeshed does not declare it).
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, position: int) -> int:
    """The position of the first character at or after `position` that is not JSON space."""
    return _SPACE.match(text, position).end()  # type: ignore[union-attr]  # * always matches


def _top_level_entries(text: str, stop: int) -> tuple[int, int] | None:
    """(entries, line of the last one counted) of one JSON array or object, counting at
    most `stop`; None when the text is not one such document (JSON Lines, broken JSON).

    Each entry is decoded on its own (C, without the strict hooks: only counted), so a map
    of a million keys is refused after `stop` entries instead of being built whole.
    """
    position = _skip_space(text, 0)
    closing = {"[": "]", "{": "}"}.get(text[position:position + 1])
    if closing is None:  # e.g. led by white space that JSON does not allow (\v, \f)
        return None
    position += 1
    count = 0
    try:
        while True:
            position = _skip_space(text, position)
            if text.startswith(closing, position) and count == 0:
                position += 1
                break
            count += 1
            if count >= stop:
                return count, text.count("\n", 0, position) + 1
            if closing == "}":
                _, position = _scanstring(text, position + 1)
                position = _skip_space(text, position)
                if not text.startswith(":", position):
                    return None
                position = _skip_space(text, position + 1)
            _, position = _DECODER.raw_decode(text, position)
            position = _skip_space(text, position)
            if text.startswith(closing, position):
                position += 1
                break
            if not text.startswith(",", position):
                return None
            position += 1
    except (ValueError, RecursionError, IndexError):
        return None
    line_of = text.count("\n", 0, position) + 1
    if _skip_space(text, position) != len(text):
        return None
    return count, line_of


def _entries(text: str, gold: GoldSplit, problems: _Collector) -> tuple[str, Iterator[Entry]]:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        entries = _top_level_entries(text, limits.max_records(len(gold)) + 1)
        if entries is None:  # not one JSON document: JSON Lines (or broken)
            return "jsonl", _jsonl_entries(text, gold, problems)
        count, line = entries
        if count > limits.max_records(len(gold)):
            problems.add(too_many_records(gold, limits.max_records(len(gold))), line)
            problems.unreadable = True
            return "json", iter(())
        if limits.values_exceed(text, limits.max_punctuation(len(gold))):
            problems.add(
                f"one JSON document with more values and fields (',' and ':') than "
                f"{limits.max_records(len(gold))} records could hold (at most "
                f"{limits.MAX_PUNCTUATION_PER_RECORD} each); it was not read")
            problems.unreadable = True
            return "json", iter(())
        try:
            document = loads_strict(text)
        except _JSONProblem as exc:
            # One JSON document spread over several lines (e.g. a pretty-printed {key: answer}
            # map) with a repeated field or NaN: name that, not every line as malformed.
            if "\n" in text.strip() and _is_one_document(text):
                problems.add(_json_error(exc))
                problems.unreadable = True
                return "json", iter(())
            document = None
        except (ValueError, RecursionError):
            document = None  # Not one JSON document: read it as JSON Lines.
        if isinstance(document, list):
            return "json-records", iter(_document_lines(text, [(None, x) for x in document]))
        if _looks_like_mapping(document):
            value_field = "label" if gold.is_identification else "prediction"
            return "json-map", iter(_document_lines(
                text, [(None, {"key": k, value_field: v}) for k, v in document.items()]))
        return "jsonl", _jsonl_entries(text, gold, problems)
    value_fields = ("label", "score", "prediction") if gold.is_identification else ("prediction",)
    return "csv", _csv_entries(text, gold, problems, value_fields)


def parse_predictions(
    data: bytes,
    gold: GoldSplit,
    *,
    filename: str = "predictions",
    max_problems: int = DEFAULT_MAX_PROBLEMS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_members: int = limits.MAX_GZIP_MEMBERS,
    fast: bool = True,
) -> Predictions:
    """Parse and validate a prediction file of any accepted format against one gold split.

    fast=False skips the fast path (fastparse.py) and always runs the exact parser, which
    gives the same result: for tests and benchmarks.
    """
    data = decompress_limited(data, filename, max_bytes, max_members)
    if fast and gold.is_identification:
        labelled = fast_labels(data, gold)
        if labelled is not None:
            return Predictions(gold.track, gold.split, labelled[0], labels=labelled[1],
                               scores=labelled[2], keys=gold.keys)
    elif fast:
        quick = fast_answers(data, gold)
        if quick is not None:
            return Predictions(gold.track, gold.split, quick[0], answers=quick[1],
                               keys=gold.keys)
    problems = _Collector(filename, max_problems)
    text = universal_newlines(decode_text(data, filename))
    if not text.strip():
        raise ValidationError([Problem(filename, "file is empty")])
    layout, entries = _entries(text, gold, problems)
    parsed = _Parsed(check_text=_MAY_HOLD_BAD_TEXT.search(text) is not None)
    for line, record in entries:
        _read_record(gold, line, record, parsed, problems)
    _check_complete(gold, parsed, problems)
    problems.raise_if_any(tuple(parsed.named_keys))
    return _aligned(gold, parsed, layout)


def universal_newlines(text: str) -> str:
    """CR LF and a bare CR (old Mac files) as LF, as Python's text files read them (the
    official scripts read predictions with `open()`). A raw CR is never valid inside a JSON
    string; in a quoted CSV cell it is white space either way, which normalization collapses."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_complete(gold: GoldSplit, parsed: _Parsed, problems: _Collector) -> None:
    if problems.unreadable:
        return
    missing = [e.key for e in gold.examples if e.key not in parsed.seen_lines]
    if missing:
        shown = ", ".join(repr(k) for k in missing[:MISSING_SHOWN])
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        problems.add(
            f"{len(missing)} of {len(gold)} examples of {gold.track}/{gold.split} have no "
            f"prediction: {shown}{more}"
        )
    if not gold.is_identification:
        return
    # Records rejected for a bad value are reported already; judge consistency on the rest.
    valid = [k for k in parsed.seen_lines if k not in parsed.bad_values]
    if parsed.scores and any(k not in parsed.scores for k in valid):
        problems.add("give a 'score' on every record or on none")
    if parsed.labels and any(k not in parsed.labels for k in valid):
        problems.add("give a 'label' on every record or on none")


def _aligned(gold: GoldSplit, parsed: _Parsed, layout: str) -> Predictions:
    keys = gold.keys
    if not gold.is_identification:
        return Predictions(
            gold.track, gold.split, layout, answers=tuple(parsed.answers[k] for k in keys),
            keys=keys)
    scores = (
        np.array([parsed.scores[k] for k in keys], dtype=np.float64) if parsed.scores else None
    )
    if parsed.labels or scores is None:
        labels = np.array([parsed.labels[k] for k in keys], dtype=np.bool_)
    else:
        labels = scores >= 0.5  # A score-only file is labelled at the natural threshold.
    return Predictions(gold.track, gold.split, layout, labels=labels, scores=scores, keys=keys)


# --- which split a file was written for ----------------------------------------------------


@dataclass(frozen=True)
class SplitMatch:
    """How many of a file's distinct keys belong to one gold track and split."""

    track: str
    split: str
    matched: int


def match_splits(keys: Iterable[str], gold_set: GoldSet) -> list[SplitMatch]:
    """Every (track, split) of the gold set holding some of the keys, most matched first."""
    distinct = set(keys)
    matches = [
        SplitMatch(track, split, len(distinct & gold_set.get(track, split).index.keys()))
        for track, split in gold_set.available()
    ]
    return sorted((m for m in matches if m.matched), key=lambda m: -m.matched)


def wrong_split_hint(
    keys: Iterable[str] | ValidationError, gold_set: GoldSet, track: str, split: str
) -> str | None:
    """One line to lead a rejection with when the keys belong to another track or split.

    E.g. "none of these keys belong to geo/dev; they match temp/dev". `keys` are the file's
    keys, or the ValidationError that rejected it (its `keys`). None when the keys belong
    where they were sent, or when no other split fits them better.
    """
    distinct = set(keys.keys if isinstance(keys, ValidationError) else keys)
    if not distinct:
        return None
    here = len(distinct & gold_set.get(track, split).index.keys())
    elsewhere = [m for m in match_splits(distinct, gold_set)
                 if (m.track, m.split) != (track, split)]
    best = elsewhere[0].matched if elsewhere else 0
    if here == len(distinct) or (here and best <= here):
        return None
    lead = (f"none of these keys belong to {track}/{split}" if here == 0 else
            f"{len(distinct) - here} of these {len(distinct)} keys do not belong to "
            f"{track}/{split}")
    if not best:
        return f"{lead}, nor to any other track and split"
    names = " and ".join(f"{m.track}/{m.split}" for m in elsewhere if m.matched == best)
    if best == len(distinct):
        return f"{lead}; they match {names}"
    return f"{lead}; {best} of them match {names}"
