"""The fast path of prediction parsing: well-formed files in a few C calls.

Formats: JSON Lines of official records (with or without the dataset's gold fields), of
compact {key, prediction} records or of the blank inputs' records with a prediction added
(key, id, question and context, then prediction or pred_answer), and one {key: prediction}
JSON object; for
identification, JSON Lines of {key or id, label and/or score} with true/false labels.

It accepts a file only when it can prove that the exact, line-by-line parser in formats.py
would accept it with the same answers; on any doubt it returns None and that parser runs
(and names every problem). Only the fields the track needs are decoded (msgspec Structs);
the gold fields of official records are kept as raw JSON (still validated as JSON).

What has to be proven, and how (whole-file C or numpy calls; per record only the key):
* each line holds one JSON object: either every newline sits between two records (`}\\n{`)
  and there are as many records as lines, or the file is decoded line by line (a
  {key: prediction} object is one document, decoded whole);
* every record has exactly the fields of one shape (official record with the dataset's gold
  fields, with the question alone or with none of them, compact {key, prediction}, or a
  blank input's record with its prediction): msgspec requires them all and forbids others.
  A record with a key is read by its key alone in the exact parser too, so the blank
  record's id, question and context are kept raw (any JSON value, validated as JSON);
* no field is repeated, at any depth: then the file would hold more keys than the n records
  decoded (n times the shape's fields). Every key ends with `"` right before its `:` once no
  `:` follows white space (checked), so the count of `":` bounds the keys of all objects
  from above: when it equals n times the shape's fields, no key was repeated and no object
  is nested inside a gold field;
* the text is valid UTF-8 with no NUL and no lone surrogate, as the exact parser requires
  (UTF-8 checked on the non-ASCII runs; msgspec rejects lone surrogate escapes; NUL escapes
  are looked for);
* every key is a gold key and every gold key is present exactly once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from .example import KEY_SEPARATOR
from .gold import GoldSplit
from .tracks import TRACK_INFO

_BOM = b"\xef\xbb\xbf"
_GOLD_FIELDS = ("question", "edited_question", "answer", "any_answer")
_JSON_WHITESPACE = np.frombuffer(b" \t\r\n", dtype=np.uint8)

Shape = tuple[msgspec.json.Decoder[Any], int]


def _shape(name: str, fields: Sequence[tuple[str, Any] | tuple[str, Any, Any]]) -> Shape:
    """A decoder requiring exactly these fields (name, type[, msgspec.field]), and their
    number."""
    # gc=False: the records hold only ints, strings and Raw, so they cannot form a cycle;
    # untracked, the 2,795 records of a file trigger no garbage collections of their own.
    struct = msgspec.defstruct(name, list(fields), forbid_unknown_fields=True, gc=False)
    return msgspec.json.Decoder(struct), len(fields)


def _official_shapes(name: str, context: Sequence[str]) -> tuple[Shape, ...]:
    """An official record with the dataset's gold fields (kept raw), with the question
    alone (the release's record without its answers, as the reference submissions and many
    systems write it), and without any of them."""
    fields: list[tuple[str, Any]] = [("id", int), *((f, str) for f in context),
                                     ("pred_answer", str)]
    gold: list[tuple[str, Any]] = [(f, msgspec.Raw) for f in _GOLD_FIELDS]
    return (_shape(f"{name}Full", fields + gold),
            _shape(f"{name}Question", [*fields, ("question", msgspec.Raw)]),
            _shape(name, fields))


_KEYED = _shape("Keyed", [("key", str), ("prediction", str)])


def _blank_shapes(name: str, context: Sequence[str]) -> tuple[Shape, ...]:
    """A record of the blank inputs (benchmark.Example.blank: key, id, question, context)
    with its prediction under either name; the answer is read as `prediction`."""
    fields = [("key", str), ("id", msgspec.Raw), ("question", msgspec.Raw),
              *((f, msgspec.Raw) for f in context)]
    return tuple(_shape(f"{name}Blank{number}", [*fields, ("prediction", str, msgspec.field(
        name=answer_field))]) for number, answer_field in enumerate(("prediction",
                                                                      "pred_answer")))


_MAP_DECODER = msgspec.json.Decoder(dict[str, str])
_ID_VALUES: list[list[tuple[str, Any]]] = [
    [("label", bool)], [("score", float)], [("label", bool), ("score", float)]]
_ID_KEYED = [_shape(f"KeyedId{i}", [("key", str), *v]) for i, v in enumerate(_ID_VALUES)]
_ID_OFFICIAL = [_shape(f"Id{i}", [("id", int), *v]) for i, v in enumerate(_ID_VALUES)]


class _RecordIndex(NamedTuple):
    """How official records name a gold split's examples: see _record_index."""

    #: (id, context values) of each example whose key they make (the id alone without
    #: context), to its position.
    positions: dict[Any, int]
    #: The ids, then each context field's values, in gold order; None unless every example
    #: is in positions.
    columns: tuple[list[Any], ...] | None

    def in_gold_order(self, records: list[Any], getters: Sequence[Callable[[Any], Any]]
                      ) -> bool:
        """True when the records name every gold example in gold order, once each."""
        return self.columns is not None and all(
            list(map(getter, records)) == column
            for getter, column in zip(getters, self.columns, strict=True))


_record_indexes: weakref.WeakKeyDictionary[GoldSplit, _RecordIndex] = (
    weakref.WeakKeyDictionary())
_record_indexes_lock = threading.Lock()


def _record_index(gold: GoldSplit, context: Sequence[str]) -> _RecordIndex:
    """Gold positions by the fields an official record names its example with.

    Only tuples that make their example's key exactly (KEY_SEPARATOR-joined, as the exact
    parser joins a record's fields) are indexed: a record found here names that example in
    the exact parser too, and one not found makes the fast path give way. Records in gold
    order are recognized by comparing their fields, column by column, with the gold's;
    others are looked up by tuple. Either skips building 2,795 key strings and looking them
    up (0.5-0.8 ms on the temp test file). Built once per worker and split.
    """
    with _record_indexes_lock:
        index = _record_indexes.get(gold)
        if index is None:
            template = KEY_SEPARATOR.join(["%s"] * (1 + len(context)))
            positions: dict[Any, int] = {}
            for position, example in enumerate(gold.examples):
                if not all(isinstance(example.context.get(f), str) for f in context):
                    continue
                values = (example.id, *(example.context[f] for f in context))
                if template % values == example.key:
                    positions[values if context else example.id] = position
            columns: tuple[list[Any], ...] | None = None
            if len(positions) == len(gold):
                columns = ([e.id for e in gold.examples],
                           *([e.context[f] for e in gold.examples] for f in context))
            index = _record_indexes[gold] = _RecordIndex(positions, columns)
        return index


#: Official-record shapes, context fields, the getter of the fields naming the example (a
#: tuple, or the id alone) and a getter of each of them, of every QA track of the registry.
_OFFICIAL: dict[str, tuple[tuple[Shape, ...], tuple[str, ...], Callable[[Any], Any],
                           tuple[Callable[[Any], Any], ...]]] = {
    name: (_official_shapes(name.title().replace("-", ""), info.context_fields),
           tuple(info.context_fields), attrgetter("id", *info.context_fields),
           tuple(map(attrgetter, ("id", *info.context_fields))))
    for name, info in TRACK_INFO.items() if not info.identification
}
#: The shapes of records naming their example by key, of every QA track of the registry.
_KEYED_SHAPES: dict[str, tuple[Shape, ...]] = {
    name: (_KEYED, *_blank_shapes(name.title().replace("-", ""), info.context_fields))
    for name, info in TRACK_INFO.items() if not info.identification
}


def _decode_lines(
    body: bytes, view: npt.NDArray[np.uint8], decoder: msgspec.json.Decoder[Any]
) -> list[Any]:
    """One record a line: one call when every newline separates two records, else per line."""
    newlines = np.flatnonzero(view == ord("\n"))
    if (body.endswith(b"}") and np.all(view[newlines - 1] == ord("}"))
            and np.all(view[newlines + 1] == ord("{"))):
        records = decoder.decode_lines(body)
        if len(records) == newlines.size + 1:
            return records
    return [decoder.decode(line) for line in body.split(b"\n") if line.strip()]


def _has_nul_escape(body: bytes, view: npt.NDArray[np.uint8]) -> bool:
    """True when a NUL may be written as the escape \\u0000 (checked exactly on a hint)."""
    backslashes = np.flatnonzero(view[:-5] == ord("\\"))
    return bool(backslashes.size) and bool(np.any(
        (view[backslashes + 1] == ord("u")) & (view[backslashes + 2] == ord("0"))
        & (view[backslashes + 3] == ord("0")))) and b"\\u0000" in body


def _valid_utf8(view: npt.NDArray[np.uint8]) -> bool:
    """True when the bytes are UTF-8, decoding only their non-ASCII runs.

    A character never spans an ASCII byte, so the text is valid exactly when each maximal
    run of bytes >= 0x80 is; each run is kept with the ASCII byte after it as a separator.
    """
    high = view >= 0x80
    keep = high.copy()
    keep[1:] |= high[:-1]
    try:
        view[keep].tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode(body: bytes, view: npt.NDArray[np.uint8], shapes: Sequence[Shape], n: int
            ) -> list[Any]:
    """Records of the first shape that fits every line; ValueError when none does.

    A file of n records of a shape holds n times its fields' keys: shapes whose count
    differs are not decoded at all, so a file of a million records costs one count, not a
    million decoded records, before the exact parser refuses it.
    """
    keys = _key_count(view)
    for decoder, field_count in shapes:
        if keys != n * field_count:
            continue
        try:
            records = _decode_lines(body, view, decoder)
        except msgspec.ValidationError:
            continue
        return records
    raise ValueError("no shape fits")


#: Bytes compared at once by _key_count: its temporary arrays stay a few of this size, not
#: a few times the file's (a 35 MB file of a million records took 150 MiB at once).
_COUNT_CHUNK = 1 << 22


def _key_count(view: npt.NDArray[np.uint8]) -> int:
    """How many keys the text holds (see the module docstring); -1 when it cannot tell.

    Whole-array comparisons of each byte with the one after it (no index array: half the
    time), a chunk at a time. A byte up to 0x20 before a ':' is JSON white space (a raw
    control character cannot stand in valid JSON), or the file is refused all the same.
    """
    keys = 0
    for start in range(0, max(len(view) - 1, 0), _COUNT_CHUNK):
        part = view[start:start + _COUNT_CHUNK + 1]  # each pair (i, i + 1) in one chunk
        colon = part[1:] == ord(":")
        before = part[:-1]
        if np.count_nonzero(colon & (before <= ord(" "))):
            return -1
        keys += int(np.count_nonzero(colon & (before == ord('"'))))
    return keys


def _prepared(data: bytes) -> tuple[bytes, npt.NDArray[np.uint8]] | None:
    """The text without BOM and final newlines, and its bytes, when its text checks pass."""
    body = data.removeprefix(_BOM).rstrip(b"\n")
    if not body.startswith(b"{") or b"\x00" in body:
        return None
    view = np.frombuffer(body, dtype=np.uint8)
    if _has_nul_escape(body, view) or not (body.isascii() or _valid_utf8(view)):
        return None
    return body, view


def _positions(names: list[Any], index: Mapping[Any, int], n: int
               ) -> npt.NDArray[np.intp] | None:
    """Gold position of each name (a key, or an official record's id and context) when the
    names are the gold's n examples', each once; else None."""
    if len(names) != n:
        return None
    try:
        positions = np.fromiter(map(index.__getitem__, names), dtype=np.intp, count=n)
    except (KeyError, TypeError):  # TypeError: an unhashable name cannot be a gold one
        return None
    if not np.array_equal(np.bincount(positions, minlength=n), np.ones(n, dtype=np.intp)):
        return None  # a duplicate, hence (as n is the gold's size) a missing example
    return positions


def _in_gold_order(values: Sequence[Any], positions: npt.NDArray[np.intp], dtype: Any) -> Any:
    """The values moved to their gold positions (an array of dtype)."""
    ordered = np.empty(len(values), dtype=dtype)
    ordered[positions] = values
    return ordered


def fast_answers(data: bytes, gold: GoldSplit) -> tuple[str, tuple[str, ...]] | None:
    """(layout, answers in gold order) of a well-formed QA file; None when unsure.

    JSON Lines (official or compact records) or one {key: prediction} object.
    """
    if gold.is_identification or gold.track not in _OFFICIAL:
        return None
    prepared = _prepared(data)
    if prepared is None:
        return None
    read = _read_lines(*prepared, gold) or _read_map(*prepared, gold)
    if read is None:
        return None
    layout, names, index, answers = read
    if names is None:  # proven complete and in gold order
        return layout, tuple(answers)
    positions = _positions(names, index, len(gold))
    if positions is None:
        return None
    if np.array_equal(positions, np.arange(len(names))):
        return layout, tuple(answers)
    return layout, tuple(_in_gold_order(answers, positions, object).tolist())


def fast_labels(
    data: bytes, gold: GoldSplit
) -> tuple[str, npt.NDArray[np.bool_], npt.NDArray[np.float64] | None] | None:
    """(layout, labels, scores or None) in gold order of a well-formed identification file.

    JSON Lines records {key or id, label (true/false) and/or score (a number in [0, 1])}, the
    same fields on every record; None when unsure (other label spellings included).
    """
    if not gold.is_identification:
        return None
    prepared = _prepared(data)
    if prepared is None:
        return None
    body, view = prepared
    keyed = body.startswith(b'{"key"')
    try:
        records = _decode(body, view, _ID_KEYED if keyed else _ID_OFFICIAL, len(gold))
    except (msgspec.DecodeError, ValueError):
        return None
    keys = [r.key for r in records] if keyed else [str(r.id) for r in records]
    positions = _positions(keys, gold.index, len(gold))
    if positions is None:
        return None
    fields = msgspec.structs.fields(type(records[0]))
    names = {f.name for f in fields}
    scores = None
    if "score" in names:
        scores = _in_gold_order([r.score for r in records], positions, np.float64)
        if not np.all((scores >= 0.0) & (scores <= 1.0)):
            return None
    if "label" in names:
        labels = _in_gold_order([r.label for r in records], positions, np.bool_)
    elif scores is not None:
        labels = scores >= 0.5  # A score-only file is labelled at the natural threshold.
    else:
        return None
    return "jsonl", labels, scores


#: layout, the names of the records' examples (keys, or official records' id and context
#: values; None when they are proven to be the gold's in gold order), the index of the gold
#: positions by those names, answers (file order).
Read = tuple[str, list[Any] | None, Mapping[Any, int], list[str]]


def _read_lines(body: bytes, view: npt.NDArray[np.uint8], gold: GoldSplit) -> Read | None:
    """Names and answers of JSON Lines records of one shape; None when unsure."""
    keyed = body.startswith(b'{"key"')
    shapes, context, name_of, getters = _OFFICIAL[gold.track]
    try:
        records = _decode(body, view, _KEYED_SHAPES[gold.track] if keyed else shapes,
                          len(gold))
    except (msgspec.DecodeError, ValueError):
        return None
    if keyed:
        return "jsonl", [r.key for r in records], gold.index, [r.prediction for r in records]
    index = _record_index(gold, context)
    answers = [r.pred_answer for r in records]
    if index.in_gold_order(records, getters):
        return "jsonl", None, index.positions, answers
    return "jsonl", list(map(name_of, records)), index.positions, answers


def _read_map(body: bytes, view: npt.NDArray[np.uint8], gold: GoldSplit) -> Read | None:
    """Keys and answers of one {key: prediction} object; None when unsure.

    Its keys are then all gold keys (checked by the caller), none of them a record's field
    name, so the exact parser reads the object as such a map too.
    """
    # Counted before decoding: a map of the gold's n examples holds n keys and no other.
    if _key_count(view) != len(gold):
        return None
    try:
        mapping = _MAP_DECODER.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    if len(mapping) != len(gold):
        return None  # a key repeated (msgspec keeps the last), or one decoded otherwise
    return "json-map", list(mapping), gold.index, list(mapping.values())
