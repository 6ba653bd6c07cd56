"""Content-addressed files in the database: uploads, gold versions and baseline outputs.

A file is named by the SHA-256 of its bytes and stored zlib-compressed in `stored_file`,
inside the transaction of the row that names it: no file without its row, no row without
its file, on every host that reaches the database.

Uploads are compressed by ISA-L (python-isal), whose output is an ordinary zlib stream:
every stored file, whichever library wrote it, decompresses with either.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from typing import Any, cast

from isal import isal_zlib
from sqlalchemy import bindparam, select

from ..extensions import db, dialect_insert, prebuilt
from ..models import StoredFile, utcnow
from .errors import ServiceError

#: zlib level 6 for the gold (stored once): 8.5 MB become 1.3 MB in 0.15 s.
COMPRESSION_LEVEL = 6
#: ISA-L level 1 for files stored on a request's path (uploads): on the 213 KB bench file
#: 0.25 ms and 35 KB, where zlib level 1 took 1.05 ms for 37 KB (zlib 6: 3.4 ms, 31 KB).
FAST_LEVEL = 1
#: The levels ISA-L has (0-3); higher levels are zlib's.
ISAL_LEVELS = range(4)
#: ISA-L's decompression error (its stubs declare it as an instance, not a class).
_ISAL_ERROR = cast("type[Exception]", isal_zlib.error)


class MissingFile(ServiceError):
    """A row names a file that is not in the database (it never should)."""

    status = 503
    code = "file_unavailable"


def digest(data: bytes) -> str:
    """The SHA-256 hex digest that names these bytes."""
    return hashlib.sha256(data).hexdigest()


def put(data: bytes, sha256: str | None = None, level: int = FAST_LEVEL) -> str:
    """Add bytes to the current transaction unless stored already; their digest.

    INSERT … ON CONFLICT DO NOTHING: two uploads of the same file at once both succeed.
    """
    sha256 = sha256 or digest(data)
    db.session.execute(_put_statement(), {"sha256": sha256, "size": len(data),
                                          "created_at": utcnow(), "data": compress(data, level)})
    return sha256


@prebuilt
def _put_statement(dialect: str) -> Any:
    """put()'s insert, built once per dialect (the values are bound)."""
    return dialect_insert(dialect, StoredFile.__table__).values(
        sha256=bindparam("sha256"), size=bindparam("size"), created_at=bindparam("created_at"),
        data=bindparam("data")).on_conflict_do_nothing(index_elements=["sha256"])


def compress(data: bytes, level: int = FAST_LEVEL) -> bytes:
    """A zlib stream of the bytes: ISA-L for its levels 0-3, zlib for 4-9."""
    if level in ISAL_LEVELS:
        return isal_zlib.compress(data, level)
    return zlib.compress(data, level)


def get(sha256: str) -> bytes:
    """The bytes stored under a digest (MissingFile if absent)."""
    compressed = db.session.scalar(select(StoredFile.data).where(StoredFile.sha256 == sha256))
    if compressed is None:
        raise MissingFile(f"stored file {sha256[:12]}… is not in the database")
    return decompress(compressed)


def get_many(sha256s: Iterable[str]) -> dict[str, bytes]:
    """Many stored files in one round trip: digest -> compressed bytes (see decompress)."""
    wanted = sorted(set(sha256s))
    if not wanted:
        return {}
    return dict(db.session.execute(
        select(StoredFile.sha256, StoredFile.data).where(StoredFile.sha256.in_(wanted))).all())


def decompress(compressed: bytes) -> bytes:
    """The bytes of a file as get_many returned it (ISA-L: about 2x zlib's speed, the same
    result for any zlib stream); a damaged stream raises zlib.error, as zlib would."""
    try:
        return isal_zlib.decompress(compressed)
    except _ISAL_ERROR as exc:
        raise zlib.error(str(exc)) from None


def exists(sha256: str) -> bool:
    """Whether a file with this digest is stored."""
    return db.session.scalar(select(StoredFile.sha256).where(
        StoredFile.sha256 == sha256)) is not None
