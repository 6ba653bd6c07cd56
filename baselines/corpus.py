"""A DPR passage corpus (``psgs_w100.tsv``: header ``id, text, title``) read as a stream.

Nothing holds the passages in memory: :func:`iter_rows` streams them with the byte offset of
each row, :class:`CorpusTable` keeps only two int64 arrays on disk (row -> byte offset, row ->
numeric id key) and :class:`PassageStore` seeks to a row to fetch the passages a reader needs.
"""

from __future__ import annotations

import csv
import hashlib
import re
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import click
import numpy as np
import numpy.typing as npt

HEADER = ["id", "text", "title"]
# DPR's newer code prefixes passage ids with their source ("wiki:123"); the TSV has "123"
ID_PREFIX = re.compile(r"^[A-Za-z_]+:")
# ids that are not decimal numbers get a hashed key with the top bit set, so the two never meet
HASHED = np.int64(-(2**63))
FLUSH_ROWS = 65536

csv.field_size_limit(sys.maxsize)


@dataclass(frozen=True)
class Passage:
    """One corpus passage (a psgs_w100.tsv row)."""

    id: str
    text: str
    title: str


def id_key(passage_id: str) -> int:
    """A stable int64 key of a passage id: the number itself for (prefixed) decimal ids."""
    bare = ID_PREFIX.sub("", passage_id.strip())
    if bare.isdigit() and len(bare) < 19:
        return int(bare)
    digest = hashlib.blake2b(bare.encode("utf-8"), digest_size=8).digest()
    return int(np.int64(int.from_bytes(digest, "little") >> 1)) | int(HASHED)


def _lines(handle: IO[bytes], position: list[int]) -> Iterator[str]:
    """Decoded lines of HANDLE; position[0] is the byte offset after the last line given."""
    for raw in handle:
        position[0] += len(raw)
        yield raw.decode("utf-8")


def _check_header(path: Path, header: list[str] | None) -> None:
    """Fail naming PATH unless HEADER is DPR's id, text, title."""
    if header is None or [h.strip() for h in header[:3]] != HEADER:
        raise click.ClickException(
            f"{path}:1: expected a header 'id<TAB>text<TAB>title', got {header!r}")


def iter_rows(path: Path, start_offset: int = 0, first_row: int = 0,
              ) -> Iterator[tuple[int, Passage]]:
    """Stream (byte offset, passage) for each row of a corpus TSV, from START_OFFSET.

    With start_offset 0 the header is checked; otherwise START_OFFSET must be a row start
    (from a :class:`CorpusTable`) and FIRST_ROW its row number (for error messages).
    """
    with path.open("rb") as handle:
        position = [0]
        if start_offset:
            handle.seek(start_offset)
            position[0] = start_offset
        # csv pulls lines only as a row needs them, so position before next() is the row start
        rows = csv.reader(_lines(handle, position), delimiter="\t")
        if not start_offset:
            _check_header(path, next(rows, None))
        number = first_row
        while True:
            offset = position[0]
            try:
                row = next(rows)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as error:
                raise click.ClickException(
                    f"{path}: passage row {number + 1} (byte {offset}): {error}") from None
            if len(row) < 3:
                raise click.ClickException(f"{path}: passage row {number + 1} (byte {offset}): "
                                           f"expected 3 columns id, text, title, got {len(row)}")
            yield offset, Passage(row[0], row[1], row[2])
            number += 1


def iter_passages(path: Path) -> Iterator[Passage]:
    """Stream the passages of a corpus TSV in file order."""
    for _, passage in iter_rows(path):
        yield passage


class _Int64Writer:
    """Append int64 values to a raw file through a small buffer."""

    def __init__(self, path: Path) -> None:
        """Open PATH for writing (truncating it)."""
        self.handle = path.open("wb")
        self.buffer = array("q")

    def append(self, value: int) -> None:
        """Add one value, flushing every FLUSH_ROWS values."""
        self.buffer.append(value)
        if len(self.buffer) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered values."""
        self.buffer.tofile(self.handle)
        self.buffer = array("q")

    def close(self) -> None:
        """Flush and close."""
        self.flush()
        self.handle.close()


def read_int64(path: Path) -> npt.NDArray[np.int64]:
    """A raw int64 file as a read-only memmap (an empty array for an empty file)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.memmap(path, dtype=np.int64, mode="r")


class CorpusTable:
    """Row -> byte offset and row -> id key of a corpus, kept in two raw int64 files."""

    OFFSETS = "corpus.offsets.i64"
    KEYS = "corpus.keys.i64"

    def __init__(self, offsets: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> None:
        """Wrap the two arrays (use build() or load())."""
        self.offsets, self.keys = offsets, keys
        self._sorted: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None

    def __len__(self) -> int:
        """Number of passages."""
        return len(self.offsets)

    @classmethod
    def build(cls, corpus: Path, folder: Path) -> CorpusTable:
        """Scan CORPUS once and write its table to FOLDER."""
        folder.mkdir(parents=True, exist_ok=True)
        offsets, keys = _Int64Writer(folder / cls.OFFSETS), _Int64Writer(folder / cls.KEYS)
        try:
            for offset, passage in iter_rows(corpus):
                offsets.append(offset)
                keys.append(id_key(passage.id))
        finally:
            offsets.close()
            keys.close()
        table = cls.load(folder)
        if not len(table):
            raise click.ClickException(f"{corpus}: the corpus has no passages")
        return table

    @classmethod
    def load(cls, folder: Path) -> CorpusTable:
        """Open a table written by build()."""
        return cls(read_int64(folder / cls.OFFSETS), read_int64(folder / cls.KEYS))

    @classmethod
    def exists(cls, folder: Path) -> bool:
        """Whether FOLDER holds a table."""
        return (folder / cls.OFFSETS).is_file() and (folder / cls.KEYS).is_file()

    def rows_of(self, keys: npt.NDArray[np.int64], source: str) -> npt.NDArray[np.int64]:
        """Corpus rows of id KEYS; an id missing from the corpus fails naming SOURCE."""
        if self._sorted is None:
            order = np.argsort(self.keys, kind="stable").astype(np.int64)
            self._sorted = (np.asarray(self.keys)[order], order)
        sorted_keys, order = self._sorted
        found = np.searchsorted(sorted_keys, keys)
        found = np.minimum(found, len(sorted_keys) - 1)
        missing = sorted_keys[found] != keys
        if missing.any():
            raise click.ClickException(
                f"{source}: {int(missing.sum())} passage ids are not in the corpus "
                f"(first key {int(keys[missing][0])})")
        rows: npt.NDArray[np.int64] = order[found]
        return rows


class PassageStore:
    """Random access to the passages of a corpus by row, through its offset table."""

    def __init__(self, corpus: Path, table: CorpusTable) -> None:
        """Open CORPUS (kept open for seeks)."""
        self.corpus, self.table = corpus, table
        self.handle = corpus.open("rb")

    def __len__(self) -> int:
        """Number of passages."""
        return len(self.table)

    def __getitem__(self, row: int) -> Passage:
        """The passage at ROW (0-based, file order)."""
        if not 0 <= row < len(self.table):
            raise IndexError(f"passage row {row} out of range (0..{len(self.table) - 1})")
        self.handle.seek(int(self.table.offsets[row]))
        position = [0]
        rows = csv.reader(_lines(self.handle, position), delimiter="\t")
        fields = next(rows, None)
        if fields is None or len(fields) < 3:
            raise click.ClickException(f"{self.corpus}: passage row {row + 1} is not "
                                       "id<TAB>text<TAB>title (was the file changed?)")
        return Passage(fields[0], fields[1], fields[2])

    def __iter__(self) -> Iterator[Passage]:
        """Stream every passage in file order."""
        return iter_passages(self.corpus)

    def close(self) -> None:
        """Close the corpus file."""
        self.handle.close()


def count_passages(path: Path) -> int:
    """How many passages a corpus TSV holds (one streamed pass, the header checked)."""
    return sum(1 for _ in iter_rows(path))
