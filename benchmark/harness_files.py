"""Evaluation harnesses' output files as prediction files, detected by their content.

* lm-evaluation-harness samples files (`samples_<task>_<date>.jsonl`, written with
  `--log_samples`; older versions wrote one JSON list): one record per document and filter.
* Inspect logs: the `.eval` zip archive (the default), and the `.json` of
  `--log-format json`.

Examples are matched by the key fields our tasks write into each document (`doc` in lm-eval,
a sample's `metadata` in Inspect), never by line order: the task's marker, the example key,
the NQ id and context fields, and the question, each checked against the inputs. lm-eval's
own `doc_hash` is checked against the document, so a hand-edited `doc` is refused. A file of
another task, a partial run (`--limit`), a two-filter file with no filter chosen, a results
file in place of a samples file: each is refused with a problem naming the file and line.

Pure: imports no harness (the server reads these files with none installed). Uploads are
hostile: zip members are bounded in number and in decompressed size.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from . import limits
from .example import Example
from .formats import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PROBLEMS,
    FileTooLargeError,
    Predictions,
    Problem,
    ValidationError,
    _Collector,
    bad_text_problem,
    decode_text,
    decompress_limited,
    parse_label,
    parse_predictions,
    universal_newlines,
)
from .gold import GoldSplit
from .harness.prompts import prompt
from .public_paths import public_text, public_value
from .tracks import TRACK_INFO

LM_EVAL_SAMPLES = "lm-eval-samples"
INSPECT_EVAL = "inspect-eval"
INSPECT_JSON = "inspect-json"
HARNESS_FORMATS = (LM_EVAL_SAMPLES, INSPECT_EVAL, INSPECT_JSON)
#: The field of a document that names the task that wrote it (our tasks write it).
TASK_FIELD = "situatedqa_task"
#: The other marker fields our tasks write beside it.
MARKER_FIELDS = ("situatedqa_task_version", "situatedqa_split", "situatedqa_scorer",
                 "situatedqa_harness", "situatedqa_model")
#: Most members an Inspect archive may hold (a sample a member, and a few more).
MAX_ZIP_MEMBERS = 50_000
ZIP_MAGIC = b"PK\x03\x04"
#: The zip compression method of zstd (APPNOTE 4.4.5), which Inspect writes.
ZIP_ZSTANDARD = 93
#: An escape that may decode to a NUL or a surrogate: a document holding one takes the exact
#: reader (the rest of a line is decoded by msgspec as json decodes it, or refused).
_MAY_HOLD_BAD_TEXT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_UTF8 = codecs.getincrementaldecoder("utf-8")
#: The slice of a file _is_utf8 decodes at a time.
_UTF8_SLICE = 1 << 14
#: How far into a file detection looks for the fields that name a harness's file.
_SNIFF = 4096


def task_name(track: str) -> str:
    """The lm-eval task (and Inspect task's suffix) of a track: situatedqa_temp_id."""
    return "situatedqa_" + track.replace("-", "_")


def first_line(text: str) -> str:
    """The answer filter of every task: the first non-empty line of the output, stripped
    (an instruct model often starts its answer with a line break)."""
    stripped = text.strip()
    return stripped.split("\n", 1)[0].strip() if stripped else ""


def doc_hash(doc: Mapping[str, Any]) -> str:
    """lm-eval's doc_hash: SHA-256 of the document as json.dumps(indent=2) writes it."""
    return hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False, default=str)
                          .encode("utf-8")).hexdigest()


def logged_prompt(arguments: Any) -> str | None:
    """The prompt a sample's model was given, as lm-eval logs its `arguments`:
    {"gen_args_0": {"arg_0": PROMPT, ...}} (0.4.3 and later) or [[PROMPT, ...]] (earlier);
    None when the sample does not log it."""
    text: Any = None
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        text = first.get("arg_0") if isinstance(first, dict) else None
    elif isinstance(arguments, list) and arguments and isinstance(arguments[0], list) \
            and arguments[0]:
        text = arguments[0][0]
    return text if isinstance(text, str) else None


def prompt_problem(arguments: Any, prompt_hash: Any, example: Example, track: str) -> str | None:
    """Why a sample's logged prompt is not the one our task builds for its example, or None.

    lm-eval's prompt_hash is the SHA-256 of the logged prompt, and the prompt holds the
    example's own zero-shot prompt (after the shots, inside a chat template): a `doc` and
    `doc_hash` moved to another line keep their hash but not the prompt the model answered.
    A sample that logs no prompt is not checked."""
    text = logged_prompt(arguments)
    if text is None:
        return None
    if isinstance(prompt_hash, str) and hashlib.sha256(
            text.encode("utf-8", "surrogatepass")).hexdigest() != prompt_hash:
        return ("'arguments' does not match its prompt_hash: the prompt was changed after "
                "the run")
    if _example_prompt(example, track) not in text:
        return ("the prompt in 'arguments' is not this document's: the model answered another "
                "question (were lines' 'doc' and 'doc_hash' moved?)")
    return None


def _example_prompt(example: Example, track: str) -> str:
    """The zero-shot prompt our task builds from an example's document."""
    info = TRACK_INFO[track]
    return prompt({"question": example.question,
                   "query": info.query(example.question, example.context)}, track)


def _doc_hash_matches(doc: Mapping[str, Any], expected: Any) -> bool:
    """doc_hash(doc) == expected, by msgspec's encoder first (the same bytes for JSON
    values, 20 times faster than json's indenting encoder), by json where they differ."""
    try:
        fast = msgspec.json.format(msgspec.json.encode(doc), indent=2)
    except (TypeError, ValueError, OverflowError):
        return bool(doc_hash(doc) == expected)
    return bool(hashlib.sha256(fast).hexdigest() == expected or doc_hash(doc) == expected)


class _Sample(msgspec.Struct):
    """The fields of an lm-eval sample an upload reads (msgspec skips the others, building no
    Python object for them: the prompt, the responses, every metric's item)."""

    doc_id: Any
    doc: msgspec.Raw
    filtered_resps: Any
    filter: Any
    doc_hash: Any = None
    prompt_hash: Any = None
    target_hash: Any = None
    arguments: Any = None


_SAMPLE = msgspec.json.Decoder(_Sample)
_DOC = msgspec.json.Decoder()



@dataclass(frozen=True)
class HarnessInfo:
    """What a harness file says about its run: stored beside the submission."""

    harness: str
    harness_version: str | None
    task: str
    task_version: str | None
    model: str | None
    scorer: str | None
    filter: str | None
    #: Per example key, the harness's hashes (lm-eval: doc, prompt, target).
    hashes: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON stored with the submission: a path the file names (a model's folder) is
        stored as its last component, never as the uploader's machine has it."""
        named = public_value({"harness": self.harness, "harness_version": self.harness_version,
                              "task": self.task, "task_version": self.task_version,
                              "model": self.model, "scorer": self.scorer,
                              "filter": self.filter})
        return {**named, "samples": len(self.hashes), "task_hash": self.task_hash,
                "hashes": self.hashes}

    @property
    def task_hash(self) -> str | None:
        """lm-eval's cumulative task hash (its results file's task_hashes) where it has one."""
        if not self.hashes or any("doc" not in h for h in self.hashes.values()):
            return None
        joined = "".join(h["doc"] + h.get("prompt", "") + h.get("target", "")
                         for h in self.hashes.values())
        return hashlib.sha256(joined.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HarnessPredictions:
    """A harness file read: the predictions by key (in file order) and its run's facts."""

    format: str
    answers: dict[str, str | bool]
    info: HarnessInfo
    lines: dict[str, int | None]


def harness_summary(stored: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored run without its per-sample hashes (what pages and the API show), every path
    in it as its last component (a run stored before paths were kept out included)."""
    if stored is None:
        return None
    shown: dict[str, Any] = public_value({k: v for k, v in stored.items() if k != "hashes"})
    return shown


def detect(data: bytes) -> str | None:
    """The harness format of a (decompressed) file, or None for every other file.

    Cheap for the project's own formats: only the start of the file is looked at unless it
    shows a harness's field names.
    """
    if data.startswith(ZIP_MAGIC):
        return INSPECT_EVAL
    head = data[:_SNIFF].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] not in (b"{", b"["):
        return None
    if b'"doc_id"' in head and b'"doc"' in head:
        return LM_EVAL_SAMPLES
    if b'"eval"' in head and (b'"samples"' in data or b'"plan"' in head):
        return INSPECT_JSON
    if b'"results"' in head and (b'"n-samples"' in data or b'"task_hashes"' in data
                                 or b'"configs"' in head):
        return "lm-eval-results"
    return None


def read_harness_file(
    data: bytes, gold: GoldSplit, *, filename: str = "predictions",
    max_problems: int = DEFAULT_MAX_PROBLEMS, max_bytes: int = DEFAULT_MAX_BYTES,
    harness_filter: str | None = None, allow_partial: bool = False,
) -> HarnessPredictions | None:
    """A harness file's predictions for one split (ValidationError), None if not one.

    `harness_filter` picks the filter of an lm-eval file whose task has several (one is
    taken silently). With `allow_partial` a run that covers part of the split is read
    (offline scoring of a `--limit` run); an upload never allows it.
    """
    kind = detect(data)
    if kind is None:
        return None
    if kind == INSPECT_JSON:  # lm-eval lines and archive members are bounded one by one
        check_document_bounds(data, gold, filename)
    problems = _Collector(filename, max_problems)
    if kind == "lm-eval-results":
        raise ValidationError([Problem(filename, (
            "this is lm-eval's results file (aggregated metrics); upload the samples file "
            f"instead: samples_{task_name(gold.track)}_<date>.jsonl, written with "
            "--log_samples --output_path DIR"))])
    if kind == INSPECT_EVAL:
        header, samples = _eval_archive(data, filename, max_bytes)
        result = _inspect(INSPECT_EVAL, header, samples, gold, problems)
    elif kind == INSPECT_JSON:
        document = _json_document(data, filename)
        samples = document.get("samples") or []
        if not isinstance(samples, list):
            raise ValidationError([Problem(filename, "'samples' must be a list")])
        result = _inspect(INSPECT_JSON, document, [(None, s) for s in samples], gold, problems)
    else:
        result = _fast_lm_eval(data, gold, harness_filter) or _lm_eval(
            _samples_records(data, gold, filename, problems), gold, problems, harness_filter)
    if result is not None and not allow_partial:
        _check_coverage(result, gold, problems)
    problems.raise_if_any(tuple(result.answers) if result else ())
    if result is None:  # no problem was named, yet nothing was read
        raise ValidationError([Problem(filename, "no samples in this file")])
    return result


def check_document_bounds(data: bytes, gold: GoldSplit, filename: str) -> None:
    """ValidationError, before any JSON is decoded, for an Inspect JSON log (one document
    for the whole run) with more JSON values than a run of the split's examples can hold.
    Nesting needs no pass of its own: the decoders raise RecursionError past about 1,000
    levels, which the readers turn into a problem, and nothing here recurses below that."""
    cap = limits.max_harness_records(len(gold)) * limits.MAX_PUNCTUATION_PER_HARNESS_RECORD
    if limits.values_exceed(data, cap):
        raise ValidationError([Problem(filename, _too_many_values(cap))])


def _too_many_values(cap: int) -> str:
    return f"holds more than {cap:,} JSON values; it was not read"


def _too_deep() -> str:
    return f"JSON nested deeper than {limits.MAX_HARNESS_JSON_DEPTH} levels; it was not read"


def _too_many_lines(gold: GoldSplit) -> str:
    return (f"more than {limits.max_harness_records(len(gold)):,} lines: a harness file for "
            f"{gold.track}/{gold.split} holds one per example and filter (at most "
            f"{limits.MAX_HARNESS_FILTERS} filters); it was not read")


def parse_file(
    data: bytes, gold: GoldSplit, *, filename: str = "predictions",
    max_problems: int = DEFAULT_MAX_PROBLEMS, max_bytes: int = DEFAULT_MAX_BYTES,
    max_members: int = limits.MAX_GZIP_MEMBERS,
    harness_filter: str | None = None, fast: bool = True,
) -> Predictions:
    """Any accepted prediction file: a harness's file (detected by its content), else
    formats.parse_predictions. What the uploads, stored files and the CLI read."""
    data = decompress_limited(data, filename, max_bytes, max_members)
    harnessed = read_harness_file(data, gold, filename=filename, max_problems=max_problems,
                                  max_bytes=max_bytes, harness_filter=harness_filter)
    if harnessed is not None:
        return harness_predictions(harnessed, gold)
    return parse_predictions(data, gold, filename=filename, max_problems=max_problems,
                             max_bytes=max_bytes, fast=fast)


def harness_predictions(read: HarnessPredictions, gold: GoldSplit) -> Predictions:
    """A complete harness read as the scorer's predictions, in gold order."""
    keys = gold.keys
    if gold.is_identification:
        import numpy as np

        labels = np.array([bool(read.answers[k]) for k in keys], dtype=np.bool_)
        return Predictions(gold.track, gold.split, read.format, labels=labels, keys=keys,
                           harness=read.info.to_json())
    return Predictions(gold.track, gold.split, read.format,
                       answers=tuple(str(read.answers[k]) for k in keys), keys=keys,
                       harness=read.info.to_json())


def covered_gold(read: HarnessPredictions, gold: GoldSplit) -> GoldSplit:
    """The examples of the split a (partial) run covers, in gold order."""
    return GoldSplit(gold.track, gold.split, [e for e in gold.examples if e.key in read.answers])


# --- lm-eval samples -------------------------------------------------------------------------


def _samples_records(data: bytes, gold: GoldSplit, filename: str,
                     problems: _Collector) -> Iterator[tuple[int | None, Any]]:
    """Every record of a samples file, decoded, or a problem naming its line: one past the
    bounds of limits.py (values, nesting) is not decoded."""
    text = universal_newlines(decode_text(data, filename))
    stripped = text.lstrip()
    if stripped.startswith("["):  # older lm-eval: one JSON list
        check_document_bounds(data, gold, filename)
        if limits.json_depth_exceeds(data, limits.MAX_HARNESS_JSON_DEPTH):
            raise ValidationError([Problem(filename, _too_deep())])
        try:
            document = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValidationError([Problem(filename, _truncated(exc, text))]) from None
        if not isinstance(document, list):
            raise ValidationError([Problem(filename, "expected a list of samples")])
        yield from ((None, record) for record in document)
        return
    lines = text.split("\n")
    if len(lines) > limits.max_harness_records(len(gold)) + 1:
        raise ValidationError([Problem(filename, _too_many_lines(gold))])
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cap = limits.MAX_PUNCTUATION_PER_HARNESS_RECORD
        if limits.values_exceed(line, cap):
            problems.add(_too_many_values(cap), number)
            continue
        if limits.json_depth_exceeds(line.encode(), limits.MAX_HARNESS_JSON_DEPTH):
            problems.add(_too_deep(), number)  # the exact reader recurses into documents
            continue
        try:
            yield number, json.loads(line)
        except (ValueError, RecursionError) as exc:
            problems.add(_truncated(exc, line), number)


def _truncated(exc: Exception, text: str) -> str:
    if isinstance(exc, json.JSONDecodeError) and not text.rstrip().endswith(("}", "]")):
        return f"not valid JSON: the text ends inside a value (truncated?): {exc.msg}"
    return f"not valid JSON: {exc}"


@dataclass
class _Read:
    answers: dict[str, str | bool] = field(default_factory=dict)
    lines: dict[str, int | None] = field(default_factory=dict)
    hashes: dict[str, dict[str, str]] = field(default_factory=dict)
    markers: dict[str, Any] = field(default_factory=dict)


def _fast_lm_eval(data: bytes, gold: GoldSplit,
                  harness_filter: str | None) -> HarnessPredictions | None:
    """A samples file with nothing to report, read in one pass; None at the first thing the
    exact reader (_lm_eval) must look at, which then names every problem. Gives what _lm_eval
    gives for the files it accepts.

    The lines are views of the file (no copy of it); msgspec decodes each into _Sample,
    skipping the fields an upload does not read (it still checks their JSON, and refuses a
    lone surrogate escape anywhere), and the document from its bytes, which the doc_hash is
    checked on. msgspec does not check the UTF-8 of a string it skips, so the file's text is
    checked once beforehand (not at all when it is ASCII), as decode_text would read it."""
    if (b"\r" in data or b"\x00" in data or data.startswith(b"\xef\xbb\xbf")
            or data[:_SNIFF].lstrip()[:1] != b"{" or not _is_utf8(data)):
        return None
    identification, track = gold.is_identification, gold.track
    expected, split = task_name(track), gold.split
    fields = TRACK_INFO[gold.track].context_fields
    index, examples = gold.index, gold.examples
    decode_sample, decode_doc = _SAMPLE.decode, _DOC.decode
    indent, sha256, find = msgspec.json.format, hashlib.sha256, data.find
    cap = limits.MAX_PUNCTUATION_PER_HARNESS_RECORD
    most_lines = limits.max_harness_records(len(gold)) + 1
    answers: dict[str, str | bool] = {}
    lines: dict[str, int | None] = {}
    hashes: dict[str, dict[str, str]] = {}
    markers: dict[str, Any] = {}
    chosen: Any = harness_filter
    view, start, end, number = memoryview(data), 0, len(data), 0
    try:
        while start <= end:  # the pieces of data.split(b"\n"), as views of the file
            stop = find(b"\n", start)
            if stop < 0:
                stop = end
            number += 1
            if number > most_lines:
                return None
            line = view[start:stop]
            begin, start = start, stop + 1
            if begin == stop or (data[begin] != 0x7B and bytes(line).isspace()):  # 0x7B: {
                continue
            if stop - begin > 2 * cap and limits.values_exceed(bytes(line), cap):
                return None
            sample = decode_sample(line)
            if chosen is None:
                chosen = sample.filter
            if sample.filter != chosen:
                if harness_filter is None:
                    return None  # several filters and none chosen: named by _lm_eval
                continue
            raw = bytes(sample.doc)
            if b"\\" in raw and _MAY_HOLD_BAD_TEXT.search(raw):
                return None
            doc = decode_doc(raw)
            if not isinstance(doc, dict) or doc.get(TASK_FIELD) != expected \
                    or doc.get("situatedqa_split", split) != split:
                return None
            named = doc.get("key")
            position = index.get(named) if isinstance(named, str) else None
            if position is None:
                return None
            example = examples[position]
            key = example.key
            nq_id = doc.get("id")
            if key in lines or nq_id != example.id or type(nq_id) is not int \
                    or doc.get("question") != example.question:
                return None
            if fields:
                context = example.context
                for name in fields:
                    if doc.get(name) != context.get(name):
                        return None
            resps, digest = sample.filtered_resps, sample.doc_hash
            if type(resps) is not list or len(resps) != 1 or type(resps[0]) is not str \
                    or type(digest) is not str \
                    or sha256(indent(raw, indent=2)).hexdigest() != digest:
                return None
            if "\x00" in resps[0] or sample.arguments is not None and prompt_problem(
                    sample.arguments, sample.prompt_hash, example, track) is not None:
                return None
            lines[key] = number
            answers[key] = response_value(gold, resps[0]) if identification else resps[0]
            held = {"doc": digest}
            if type(sample.prompt_hash) is str:
                held["prompt"] = sample.prompt_hash
            if type(sample.target_hash) is str:
                held["target"] = sample.target_hash
            hashes[key] = held
            if not markers:
                markers = {name: doc.get(name) for name in (TASK_FIELD, *MARKER_FIELDS)}
    except (msgspec.DecodeError, RecursionError):
        return None
    if not answers or not isinstance(chosen, str):
        return None
    read = _Read(answers, lines, hashes, markers)
    harness, _, version = str(markers.get("situatedqa_harness") or "lm-eval").partition(" ")
    return _result(LM_EVAL_SAMPLES, read, harness or "lm-eval", version or None, chosen)


def _is_utf8(data: bytes) -> bool:
    """Strict UTF-8 (as decode_text reads it), decoded a slice at a time: a whole file's text
    would be widened to 2 or 4 bytes a character by one character past U+00FF."""
    if data.isascii():
        return True
    decoder = _UTF8()
    view = memoryview(data)
    try:
        for offset in range(0, len(data), _UTF8_SLICE):
            decoder.decode(view[offset:offset + _UTF8_SLICE])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


def _lm_eval(records: Iterator[tuple[int | None, Any]], gold: GoldSplit, problems: _Collector,
             harness_filter: str | None) -> HarnessPredictions | None:
    by_filter: dict[str, list[tuple[int | None, dict[str, Any]]]] = {}
    for line, record in records:
        if not isinstance(record, dict):
            problems.add(f"expected a JSON object, got {type(record).__name__}", line)
            continue
        missing = [name for name in ("doc_id", "doc", "filtered_resps", "filter")
                   if name not in record]
        if missing:
            problems.add(f"not an lm-eval sample: no {', '.join(map(repr, missing))}", line)
            continue
        name = record["filter"]
        by_filter.setdefault(name if isinstance(name, str) else repr(name), []).append(
            (line, record))
    if not by_filter:
        return None
    if harness_filter is not None:
        if harness_filter not in by_filter:
            problems.add(f"no sample has the filter {harness_filter!r}; this file's filters "
                         f"are {', '.join(map(repr, by_filter))}")
            return None
        chosen = harness_filter
    elif len(by_filter) == 1:
        chosen = next(iter(by_filter))
    else:
        problems.add(f"this samples file holds every document once per filter "
                     f"({', '.join(map(repr, by_filter))}): choose one (the upload's "
                     "'harness_filter' field, or --filter)")
        return None
    read = _Read()
    for line, record in by_filter[chosen]:
        doc = record["doc"]
        if isinstance(doc, dict) and not _doc_hash_matches(doc, record.get("doc_hash")):
            problems.add("'doc' does not match its doc_hash: the document was changed after "
                         "the run", line, doc.get("key") if isinstance(doc.get("key"), str)
                         else None)
            continue
        key = _document_key(doc, gold, line, problems, "doc")
        if key is None:
            continue
        mismatch = prompt_problem(record.get("arguments"), record.get("prompt_hash"),
                                  gold.examples[gold.index[key]], gold.track)
        if mismatch is not None:
            problems.add(mismatch, line, key)
            continue
        value = _response(record["filtered_resps"])
        if value is None:
            problems.add("'filtered_resps' must hold one string", line, key)
            continue
        unstorable = bad_text_problem("filtered_resps", value)
        if unstorable is not None:
            problems.add(unstorable, line, key)
            continue
        if _taken(key, line, read, problems):
            continue
        read.answers[key] = response_value(gold, value)
        read.hashes[key] = {name: record[f"{name}_hash"] for name in ("doc", "prompt", "target")
                            if isinstance(record.get(f"{name}_hash"), str)}
        if not read.markers:
            read.markers = {name: doc.get(name) for name in (TASK_FIELD, *MARKER_FIELDS)}
    harness, _, version = str(read.markers.get("situatedqa_harness") or "lm-eval").partition(" ")
    return _result(LM_EVAL_SAMPLES, read, harness or "lm-eval", version or None, chosen)


def _response(filtered: Any) -> str | None:
    if isinstance(filtered, str):
        return filtered
    if isinstance(filtered, list) and len(filtered) == 1 and isinstance(filtered[0], str):
        return filtered[0]
    return None


def response_value(gold: GoldSplit, text: str) -> str | bool:
    """A response as a prediction: the answer, or (identification) yes means dependent."""
    if not gold.is_identification:
        return text
    words = first_line(text).split()
    return bool(parse_label(words[0].strip(".,!:;").lower())) if words else False


def _taken(key: str, line: int | None, read: _Read, problems: _Collector) -> bool:
    if key in read.lines:
        first = read.lines[key]
        where = f" (first on line {first})" if first is not None else ""
        problems.add(f"duplicate sample{where}", line, key)
        return True
    read.lines[key] = line
    return False


def _document_key(doc: Any, gold: GoldSplit, line: int | None, problems: _Collector,
                  where: str) -> str | None:
    """The example a document written by our task names, checked against the inputs."""
    expected = task_name(gold.track)
    if not isinstance(doc, dict):
        problems.add(f"{where!r} must be an object", line)
        return None
    task = doc.get(TASK_FIELD)
    if task is None:
        problems.add(f"{where!r} was not written by a SituatedQA task (no {TASK_FIELD!r}): "
                     f"run the task {expected}", line)
        return None
    if task != expected:
        problems.add(f"this sample is of the task {task!r}, not {expected!r} "
                     f"({gold.track}/{gold.split})", line)
        return None
    if doc.get("situatedqa_split") not in (None, gold.split):
        problems.add(f"this sample is of the split {doc.get('situatedqa_split')!r}, not "
                     f"{gold.split!r}", line)
        return None
    key = doc.get("key")
    info = TRACK_INFO[gold.track]
    nq_id = doc.get("id")
    if not isinstance(key, str) or isinstance(nq_id, bool) or not isinstance(nq_id, int) \
            or not all(isinstance(doc.get(name), str) for name in info.context_fields):
        problems.add(f"{where!r} needs 'key', 'id' and {', '.join(info.context_fields) or 'no'}"
                     " context fields as our task writes them", line)
        return None
    if info.key(nq_id, doc) != key:
        problems.add(f"{where!r}'s key does not match its id and context fields", line, key)
        return None
    position = gold.index.get(key)
    if position is None:
        problems.add(f"unknown example for {gold.track}/{gold.split}", line, key)
        return None
    if doc.get("question") != gold.examples[position].question:
        problems.add(f"{where!r}'s question is not this example's question", line, key)
        return None
    return key


def _result(fmt: str, read: _Read, harness: str, version: str | None,
            chosen: str | None) -> HarnessPredictions:
    markers = read.markers
    info = HarnessInfo(
        harness=harness, harness_version=version,
        task=str(markers.get(TASK_FIELD) or ""),
        task_version=_text(markers.get("situatedqa_task_version")),
        model=_text(markers.get("situatedqa_model")),
        scorer=_text(markers.get("situatedqa_scorer")), filter=chosen, hashes=read.hashes)
    return HarnessPredictions(fmt, read.answers, info, read.lines)


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _check_coverage(result: HarnessPredictions, gold: GoldSplit, problems: _Collector) -> None:
    covered = sum(1 for k in gold.keys if k in result.answers)
    if covered < len(gold) and not problems.problems:
        missing = next(k for k in gold.keys if k not in result.answers)
        problems.add(
            f"this run covers {covered} of {len(gold)} examples of {gold.track}/{gold.split} "
            f"(a run with --limit?); an upload needs every example (first missing: "
            f"{missing!r}). Offline, `python -m benchmark score --partial` scores the covered "
            "examples, marked partial")


# --- Inspect logs ----------------------------------------------------------------------------


def _json_document(data: bytes, filename: str) -> dict[str, Any]:
    text = decode_text(data, filename)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValidationError([Problem(filename, _truncated(exc, text))]) from None
    if not isinstance(document, dict):
        raise ValidationError([Problem(filename, "expected an Inspect log (a JSON object)")])
    return document


def _eval_archive(data: bytes, filename: str,
                  max_bytes: int) -> tuple[dict[str, Any], list[tuple[int | None, Any]]]:
    """The header and the samples of an Inspect .eval archive, sizes bounded."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ValidationError([Problem(filename, f"not a readable .eval archive: {exc}")]) \
            from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise FileTooLargeError([Problem(
            filename, f"the archive holds more than {MAX_ZIP_MEMBERS} members")])
    budget = [max_bytes]

    def member(info: zipfile.ZipInfo) -> Any:
        try:
            if info.compress_type == ZIP_ZSTANDARD:
                raw = _zstd_member(data, info, budget[0] + 1)
            else:
                with archive.open(info) as stream:
                    raw = stream.read(budget[0] + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
            raise ValidationError([Problem(f"{filename}/{info.filename}",
                                           f"unreadable member: {exc}")]) from None
        budget[0] -= len(raw)
        if budget[0] < 0:
            raise FileTooLargeError([Problem(
                filename, f"decompressed content is larger than {max_bytes} bytes")])
        try:
            return _DOC.decode(raw)
        except msgspec.DecodeError:
            pass
        except RecursionError:  # msgspec's own limit, about 1,000 levels
            raise ValidationError([Problem(f"{filename}/{info.filename}", _too_deep())]) \
                from None
        try:  # not valid JSON: the standard library's reader names the problem
            return json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise ValidationError([Problem(f"{filename}/{info.filename}",
                                           _truncated(exc, raw.decode("utf-8", "replace")))]) \
                from None

    names = {info.filename: info for info in members}
    header_info = names.get("header.json") or names.get("_journal/start.json")
    if header_info is None:
        raise ValidationError([Problem(filename, "not an Inspect .eval log: no header.json")])
    header = member(header_info)
    if not isinstance(header, dict):
        raise ValidationError([Problem(filename, "header.json must be an object")])
    samples: list[tuple[int | None, Any]] = [
        (None, member(info)) for info in members
        if info.filename.startswith("samples/") and info.filename.endswith(".json")]
    return header, samples


def _zstd_member(data: bytes, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A zstd-compressed member (Inspect's default; zipfile cannot read it before Python
    3.14), at most `limit` bytes of it, its CRC checked."""
    import zstandard

    start = info.header_offset
    if data[start:start + 4] != ZIP_MAGIC:
        raise zipfile.BadZipFile("bad local file header")
    names, extra = struct.unpack("<HH", data[start + 26:start + 30])
    begin = start + 30 + names + extra
    compressed = data[begin:begin + info.compress_size]
    if len(compressed) < info.compress_size:
        raise zipfile.BadZipFile("the member is truncated")
    try:
        with zstandard.ZstdDecompressor().stream_reader(compressed) as reader:
            out = io.BytesIO()
            while out.tell() < limit:
                chunk = reader.read(min(1 << 20, limit - out.tell()))
                if not chunk:
                    break
                out.write(chunk)
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"bad zstd data: {exc}") from None
    raw = out.getvalue()
    if len(raw) < limit and zlib.crc32(raw) != info.CRC:
        raise zipfile.BadZipFile("CRC check failed")
    return raw


def _inspect(fmt: str, header: Mapping[str, Any], samples: list[tuple[int | None, Any]],
             gold: GoldSplit, problems: _Collector) -> HarnessPredictions | None:
    spec: dict[str, Any] = header["eval"] if isinstance(header.get("eval"), dict) else {}
    task = str(spec.get("task") or "")
    expected = task_name(gold.track)
    if task and task.rsplit("/", 1)[-1] not in (expected, gold.track, gold.track.replace("-", "_")):
        problems.add(f"this log is of the task {task!r}, not situatedqa/{gold.track} "
                     f"({gold.track}/{gold.split})")
        return None
    read = _Read()
    for position, (_, sample) in enumerate(samples, start=1):
        where = f"sample {position}"
        if not isinstance(sample, dict):
            problems.add(f"{where}: expected an object")
            continue
        if sample.get("epoch", 1) != 1:
            continue  # one answer an example: the first epoch's
        key = _document_key(sample.get("metadata"), gold, None, problems, f"{where} metadata")
        if key is None:
            continue
        if sample.get("id") != key:
            problems.add(f"{where}: its id does not match its metadata's key", None, key)
            continue
        output: dict[str, Any] = (sample["output"] if isinstance(sample.get("output"), dict)
                                  else {})
        completion = output.get("completion")
        if not isinstance(completion, str):
            problems.add(f"{where}: no output.completion", None, key)
            continue
        unstorable = bad_text_problem("output.completion", completion)
        if unstorable is not None:
            problems.add(f"{where}: {unstorable}", None, key)
            continue
        if _taken(key, None, read, problems):
            continue
        read.answers[key] = response_value(gold, first_line(completion))
        read.hashes[key] = {"input": hashlib.sha256(json.dumps(
            sample.get("input"), ensure_ascii=False, sort_keys=True).encode()).hexdigest()}
        if not read.markers:
            read.markers = {name: sample["metadata"].get(name)
                            for name in (TASK_FIELD, *MARKER_FIELDS)}
    packages: dict[str, Any] = (spec["packages"] if isinstance(spec.get("packages"), dict)
                                else {})
    version = packages.get("inspect_ai") or header.get("version")
    result = _result(fmt, read, "inspect", _text(version), None)
    model = _text(spec.get("model"))
    model_args = spec["model_args"] if isinstance(spec.get("model_args"), dict) else {}
    if model and model_args.get("model_path"):
        model = f"{model} ({public_text(str(model_args['model_path']))})"
    if model:
        result = HarnessPredictions(fmt, result.answers, _with_model(result.info, model),
                                    result.lines)
    return result


def _with_model(info: HarnessInfo, model: str) -> HarnessInfo:
    return HarnessInfo(info.harness, info.harness_version, info.task or "", info.task_version,
                       model, info.scorer, info.filter, info.hashes)
