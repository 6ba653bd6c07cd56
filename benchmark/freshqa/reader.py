"""One FreshQA snapshot (a CSV file) read into typed rows, every bad cell named by place.

The snapshots are spreadsheets exported as CSV: warning lines stand above the header, a
`source` cell holds several URLs on separate lines (quoted, so one record spans several
physical lines), unused answer slots are empty and `split` is written in capitals. The csv
module reads the quoted multi-line cells; the header is the first record naming both `id`
and `question`, and every line number is the physical line a record starts on.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeVar

from ..example import GoldError

Split = Literal["test", "dev"]
FactType = Literal["never-changing", "slow-changing", "fast-changing"]
Hops = Literal["one-hop", "multi-hop"]

#: The answer slots of a row, in order (empty ones are unused).
ANSWER_COLUMNS: Final = tuple(f"answer_{i}" for i in range(10))
#: Every column a snapshot must have, in the order of the released files' header.
COLUMNS: Final = ("id", "split", "question", "effective_year", "next_review", "false_premise",
                  "num_hops", "fact_type", "source", *ANSWER_COLUMNS, "note")
#: The columns that identify the header line among the lines above it.
HEADER_MARKERS: Final = ("id", "question")
#: The released files write the split in capitals; lower case is read as well.
SPLIT_OF: Final[Mapping[str, Split]] = {"TEST": "test", "DEV": "dev"}
FACT_TYPES: Final[tuple[FactType, ...]] = ("never-changing", "slow-changing", "fast-changing")
HOPS: Final[tuple[Hops, ...]] = ("one-hop", "multi-hop")
#: effective_year's value for the questions whose answer was settled before 2022.
BEFORE_2022: Final = "before 2022"
_YEAR = re.compile(r"\d{4}")

T = TypeVar("T")


class FreshQAError(GoldError):
    """A FreshQA snapshot or its manifest is missing, altered or unreadable.

    `file`, `line` and `column` say where (line: the physical line a CSV record starts on);
    the message names them too.
    """

    def __init__(self, message: str, file: str = "", line: int | None = None,
                 column: str | None = None) -> None:
        where = file + (f":{line}" if line is not None else "")
        column_part = f"column {column!r}: " if column is not None else ""
        super().__init__(f"{where}: {column_part}{message}" if where else column_part + message)
        self.file, self.line, self.column = file, line, column


@dataclass(frozen=True)
class Row:
    """One question of a snapshot, its cells typed (text cells stripped of outer spaces)."""

    line: int
    #: The row number in its snapshot: not an identity (see snapshots.question_key).
    id: int
    split: Split
    question: str
    #: The year the answer took effect; None for "before 2022".
    effective_year: int | None
    #: When the authors review the answer next: free text ("occasionally", a date, "N/A").
    next_review: str
    false_premise: bool
    num_hops: Hops
    fact_type: FactType
    source: str
    #: The non-empty answer slots, in slot order.
    answers: tuple[str, ...]
    note: str


# --- cell parsers: each raises ValueError saying what is wrong with the value ---------------


def parse_split(value: str) -> Split:
    """TEST or DEV (any case) as test or dev."""
    split = SPLIT_OF.get(value.strip().upper())
    if split is None:
        raise ValueError(f"unknown split {value!r} (expected one of {list(SPLIT_OF)})")
    return split


def parse_effective_year(value: str) -> int | None:
    """A four-digit year, or None for "before 2022"."""
    text = value.strip()
    if text.lower() == BEFORE_2022:
        return None
    if not _YEAR.fullmatch(text):
        raise ValueError(f"{value!r} is neither a year nor {BEFORE_2022!r}")
    return int(text)


def parse_bool(value: str) -> bool:
    """TRUE or FALSE, in any case."""
    text = value.strip().upper()
    if text not in ("TRUE", "FALSE"):
        raise ValueError(f"{value!r} is neither TRUE nor FALSE")
    return text == "TRUE"


def _one_of(choices: tuple[T, ...], what: str) -> Callable[[str], T]:
    """A parser accepting exactly the given lower-case values."""
    def parse(value: str) -> T:
        text = value.strip().lower()
        for choice in choices:
            if text == choice:
                return choice
        raise ValueError(f"unknown {what} {value!r} (expected one of {list(choices)})")
    return parse


parse_num_hops = _one_of(HOPS, "num_hops")
parse_fact_type = _one_of(FACT_TYPES, "fact_type")


def parse_row_id(value: str) -> int:
    """The row number: a non-negative integer."""
    text = value.strip()
    if not text.isdigit():
        raise ValueError(f"{value!r} is not a row number")
    return int(text)


def parse_question(value: str) -> str:
    """The question text, stripped; never empty."""
    if not value.strip():
        raise ValueError("the question is empty")
    return value.strip()


# --- records and the header -------------------------------------------------------------------


def numbered_records(text: str) -> Iterator[tuple[int, list[str]]]:
    """(first physical line, cells) of every CSV record of a text, blank records left out."""
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    for cells in reader:
        if any(cell.strip() for cell in cells):
            yield start, cells
        start = reader.line_num + 1


def header_columns(cells: list[str], file: str, line: int) -> dict[str, int]:
    """Each required column's position in the header; FreshQAError names a missing one."""
    names = [cell.strip() for cell in cells]
    for name in COLUMNS:
        if name not in names:
            raise FreshQAError("missing from the header", file, line, name)
        if names.count(name) > 1:
            raise FreshQAError("appears twice in the header", file, line, name)
    return {name: names.index(name) for name in COLUMNS}


def is_header(cells: list[str]) -> bool:
    """Whether a record is the header: it names the marker columns."""
    names = {cell.strip() for cell in cells}
    return all(marker in names for marker in HEADER_MARKERS)


# --- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cells:
    """One record's cells by column name, raising FreshQAError at the record's place."""

    cells: list[str]
    columns: Mapping[str, int]
    file: str
    line: int

    def text(self, column: str) -> str:
        """A cell as it is."""
        return self.cells[self.columns[column]]

    def parsed(self, column: str, parse: Callable[[str], T]) -> T:
        """A cell through its parser; FreshQAError names file, line and column."""
        try:
            return parse(self.text(column))
        except ValueError as exc:
            raise FreshQAError(str(exc), self.file, self.line, column) from None


def _check_width(cells: list[str], width: int, file: str, line: int) -> None:
    """FreshQAError for a record shorter than the header or with text past its end."""
    if len(cells) < width:
        raise FreshQAError(f"the record has {len(cells)} cells, the header {width}", file, line)
    if any(cell.strip() for cell in cells[width:]):
        raise FreshQAError(f"the record has text past the header's {width} columns", file, line)


def parse_row(cells: list[str], columns: Mapping[str, int], width: int, file: str,
              line: int) -> Row:
    """One record as a Row; FreshQAError names the file, line and column of a bad cell."""
    _check_width(cells, width, file, line)
    record = _Cells(cells, columns, file, line)
    answers = tuple(a.strip() for a in map(record.text, ANSWER_COLUMNS) if a.strip())
    if not answers:
        raise FreshQAError(f"no answer in {ANSWER_COLUMNS[0]} … {ANSWER_COLUMNS[-1]}",
                           file, line, ANSWER_COLUMNS[0])
    return Row(
        line=line, id=record.parsed("id", parse_row_id),
        split=record.parsed("split", parse_split),
        question=record.parsed("question", parse_question),
        effective_year=record.parsed("effective_year", parse_effective_year),
        next_review=record.text("next_review").strip(),
        false_premise=record.parsed("false_premise", parse_bool),
        num_hops=record.parsed("num_hops", parse_num_hops),
        fact_type=record.parsed("fact_type", parse_fact_type),
        source=record.text("source").strip(), answers=answers,
        note=record.text("note").strip())


def parse_snapshot(text: str, file: str = "snapshot.csv") -> tuple[Row, ...]:
    """Every row of a snapshot's text, in file order; FreshQAError names file, line, column.

    Records above the header (the warning lines) are skipped; an empty record is skipped
    wherever it stands. `file` only names the text in errors.
    """
    records = numbered_records(text)
    for line, cells in records:
        if is_header(cells):
            columns = header_columns(cells, file, line)
            width = len(cells)
            break
    else:
        raise FreshQAError(f"no header line (a line naming the columns {list(COLUMNS)})", file)
    rows = tuple(parse_row(cells, columns, width, file, line) for line, cells in records)
    if not rows:
        raise FreshQAError("no rows below the header", file)
    return rows


def decode(data: bytes, file: str) -> str:
    """The UTF-8 text of a snapshot (a byte-order mark dropped); FreshQAError if it is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FreshQAError(f"not UTF-8 text ({exc})", file) from None


def read_snapshot(path: Path) -> tuple[Row, ...]:
    """The rows of a snapshot file (no checksum check: manifest.load_snapshots does that)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FreshQAError(f"not readable ({exc.strerror})", str(path)) from None
    return parse_snapshot(decode(data, str(path)), str(path))


__all__ = [
    "ANSWER_COLUMNS", "BEFORE_2022", "COLUMNS", "FACT_TYPES", "HOPS", "FactType",
    "FreshQAError", "Hops", "Row", "Split", "parse_snapshot", "read_snapshot",
]
