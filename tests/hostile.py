"""The hostile-input corpus: files and request bodies a server must refuse cheaply.

Built in memory (never committed: some expand to gigabytes); tests/scaleout/test_hostile.py
sends each to a real gunicorn, scripts/bench_hostile.py measures the CPU and memory each
costs. A bomb is made from one compressed block repeated: after a full flush, deflate
compresses the same block to the same bytes, so 8 GiB of zeros cost one 16 MiB block's
compression and a CRC pass.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from benchmark.limits import MAX_GZIP_MEMBERS

BLOCK = 1 << 24  # 16 MiB


def repeated_gzip(prefix: bytes, block: bytes, count: int, suffix: bytes) -> bytes:
    """A valid gzip member of prefix + block * count + suffix, made in about a CRC pass."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    head = deflate.compress(prefix) + deflate.flush(zlib.Z_FULL_FLUSH)
    body = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.compress(suffix) + deflate.flush()
    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(suffix, crc)
    size = len(prefix) + len(block) * count + len(suffix)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + head + body * count + tail + struct.pack("<II", crc, size & 0xFFFFFFFF)


@dataclass(frozen=True)
class HostileFile:
    """An upload the server must refuse: its bytes, the status and a word of the message."""

    name: str
    filename: str
    build: Callable[[], bytes]
    status: int
    says: str


def _members() -> bytes:
    # 6.4 MB: 320,000 empty members (the probe); refused past MAX_GZIP_MEMBERS.
    return gzip.compress(b"", mtime=0) * 320_000


def _zeros() -> bytes:
    member = repeated_gzip(b"", bytes(BLOCK), 64, b"")  # 1 GiB
    return member * 8  # 8 GiB of zeros in 8 members


def _string() -> bytes:
    return repeated_gzip(b'{"key": "', b"a" * BLOCK, 256, b'"}\n')  # a 4 GiB JSON string


def _deep() -> bytes:
    return b"[" * 10**6 + b"]" * 10**6


def _million_lines() -> bytes:
    lines = b"".join(b'{"key": "k%d", "prediction": "x"}\n' % i for i in range(10**6))
    return gzip.compress(lines, compresslevel=6, mtime=0)


def _million_keys() -> bytes:
    document = json.dumps({f"k{i}": "x" for i in range(10**6)}).encode()
    return gzip.compress(document, compresslevel=6, mtime=0)


def _million_rows() -> bytes:
    rows = b"key,prediction\n" + b"".join(b"k%d,x\n" % i for i in range(10**6))
    return gzip.compress(rows, compresslevel=6, mtime=0)


FILES: tuple[HostileFile, ...] = (
    HostileFile("gzip members", "p.jsonl.gz", _members, 413,
                f"more than {MAX_GZIP_MEMBERS} members"),
    HostileFile("8 GiB of zeros in 8 members", "zeros.jsonl.gz", _zeros, 413,
                "decompressed content is larger"),
    HostileFile("4 GiB JSON string", "string.jsonl.gz", _string, 413,
                "decompressed content is larger"),
    HostileFile("10^6-deep nesting", "deep.json", _deep, 400, "nested too deeply"),
    HostileFile("a million lines", "lines.jsonl.gz", _million_lines, 400, "records"),
    HostileFile("a JSON object of a million keys", "map.json.gz", _million_keys, 400,
                "records"),
    HostileFile("a million CSV rows", "rows.csv.gz", _million_rows, 400, "records"),
)

#: A multipart body whose one part has no name (Content-Disposition: form-data alone).
NAMELESS_PART = b"--X\r\nContent-Disposition: form-data\r\n\r\nv\r\n--X--\r\n"
NAMELESS_TYPE = "multipart/form-data; boundary=X"
#: JSON request bodies nested past any limit.
DEEP_BODIES = (b"[" * 1_000 + b"]" * 1_000, b"[" * 10**6 + b"]" * 10**6)
#: Routes of each kind: the API, a page, a form behind CSRF.
ROUTES = ("/api/v1/submissions", "/", "/auth/login")
