"""The bounds a prediction file and a request body must stay within, declared once.

Each bound is far above anything a real file reaches (the figures in the comments are the
release's), so that it only ever refuses hostile or broken input, and refuses it before
the work it would cause: the parser checks them with whole-buffer C calls (bytes.count, a
regex) before it decodes JSON or walks records one by one. The server's settings name the
ones a deployment may tune (situatedqa_server/settings.py); docs/server.md lists them all.
"""

from __future__ import annotations

import re

import numpy as np

#: Decompressed size limit of a prediction file; a small gzip can expand to gigabytes.
#: The largest real prediction file (official records of temp/train with their gold fields)
#: is about 3 MB.
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

#: Gzip members a file may hold. Concatenated members are valid gzip (`cat a.gz b.gz`), and
#: a tool that writes in blocks makes a few; 10,000 is more than any writer makes, while an
#: empty member is only 20 bytes: a 6 MB file of them would otherwise be 320,000 members.
MAX_GZIP_MEMBERS = 10_000

#: Compressed bytes fed to the inflater at once. What is left of a chunk when a member ends
#: is copied to start the next one, so this bounds the copying per member (the whole rest of
#: the input, before: quadratic in the number of members).
GZIP_CHUNK = 16 * 1024

#: Decompressed bytes asked of the inflater at once: a call's result is appended to the
#: output and dropped, so a bomb's 64 MiB are held once, not also as one call's result.
GZIP_OUTPUT_CHUNK = 1024 * 1024

#: Records a file may hold beyond its split's examples. A complete file has exactly one per
#: example; a few more (duplicates, records of another split) are reported one by one, but
#: a file with far more than its split has examples is refused at the first record past
#: the split's size plus this margin.
RECORDS_MARGIN = 100

#: JSON punctuation (`,` and `:`, inside strings too) a file may hold per record allowed.
#: Every JSON value but a container's first follows a `,` and every field follows a `:`,
#: so this bounds the values the JSON decoder would build before any is built. The most a
#: real record holds is 88 (a temp/train record with its gold answer lists).
MAX_PUNCTUATION_PER_RECORD = 256

#: Filters an lm-eval task may write each document under (a samples file holds one line
#: per example and filter; the project's tasks have one, lm-eval's own at most a handful).
MAX_HARNESS_FILTERS = 8

#: JSON punctuation per line of a harness file: a samples line repeats the document, the
#: prompt, the responses and one item per metric (the project's tasks write about 200).
MAX_PUNCTUATION_PER_HARNESS_RECORD = 4096

#: Deepest nesting of a samples line that the exact reader decodes (it recurses into the
#: document to check its hash; an Inspect log nests its events about ten deep). The one-pass
#: reader needs no such count: msgspec refuses past about 1,000 levels by itself.
MAX_HARNESS_JSON_DEPTH = 64

#: Deepest nesting of a JSON request body (the API's bodies are flat objects). Python's
#: decoder raises RecursionError past about 1,000 levels, which would escape as a 500.
MAX_JSON_DEPTH = 32

#: Possessive: an unterminated string is given up on in one pass, never backtracked into.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def max_records(examples: int) -> int:
    """The most records a file for a split of `examples` examples may hold."""
    return examples + RECORDS_MARGIN


def max_harness_records(examples: int) -> int:
    """The most lines a harness text file for a split of `examples` examples may hold."""
    return max_records(examples) * MAX_HARNESS_FILTERS


def max_punctuation(examples: int) -> int:
    """The most `,` and `:` a file for a split of `examples` examples may hold."""
    return max_records(examples) * MAX_PUNCTUATION_PER_RECORD


def values_exceed(text: str | bytes, cap: int) -> bool:
    """More than `cap` JSON values and fields: every value but a container's first follows a
    `,` and every field a `:`, so their count bounds what a parser would build. A text of at
    most 2 * cap characters cannot hold more, so a short record costs no count at all."""
    if len(text) <= 2 * cap:
        return False
    if isinstance(text, str):
        return text.count(",") + text.count(":") > cap
    return text.count(b",") + text.count(b":") > cap


def json_depth_exceeds(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """True when a JSON text nests deeper than max_depth (brackets inside strings aside).

    Strings are removed first (one C regex pass), then every byte but the brackets; the
    depth after each bracket is a cumulative sum (numpy), so a 10^6-deep body costs a few
    whole-buffer passes.
    """
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    # "[" and "{" are 0x5B and 0x7B, "]" and "}" 0x5D and 0x7D: bit 1 tells them apart.
    steps = (np.frombuffer(brackets, dtype=np.uint8) & 2).view(np.int8) - 1
    return bool(steps.size) and int(np.cumsum(steps, dtype=np.int32).max()) > max_depth
