"""A small, dependency-free reader of the SituatedQA release files, producing runner items.

The scoring package is written separately; the runners read the release directly so
that they do not depend on it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.queries import modify_query

QA_TRACKS = ("temp", "geo", "present", "curprev")
ID_TRACKS = ("temp-id", "geo-id")
TRACKS = QA_TRACKS + ID_TRACKS
SPLITS = ("train", "dev", "test")
SETTINGS = ("unmodified", "query-modified", "finetuned")
DATA_ENV = "SITUATEDQA_DATA"


class ReleaseError(Exception):
    """Raised when a release file is missing or malformed."""


@dataclass(frozen=True)
class QAItem:
    """One question to answer: the output record (without prediction) and the model query."""

    key: tuple[Any, ...]
    record: dict[str, Any]
    query: str
    answers: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class IDItem:
    """One identification question with its gold label (None when unlabelled)."""

    id: int
    question: str
    label: bool | None


def default_data_dir() -> Path | None:
    """Return the release folder named by $SITUATEDQA_DATA, or None."""
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSON Lines file, skipping blank lines."""
    if not path.is_file():
        raise ReleaseError(f"release file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise ReleaseError(f"{path}:{number}: invalid JSON ({error})") from None


def qa_key(track: str, record: dict[str, Any]) -> tuple[Any, ...]:
    """Return the key that identifies an output record of a track (as the scorer matches it)."""
    if track == "temp":
        return (record["id"], record["date"], record["date_type"])
    if track == "geo":
        return (record["id"], record["location"])
    if track == "curprev":
        return (record["id"], record["which"])
    return (record["id"],)


def _context_qa_items(rows: list[dict[str, Any]], track: str, setting: str) -> list[QAItem]:
    """Build temp/geo items from qa_data rows; gold answers never enter the record."""
    fields = ("id", "question", "date", "date_type") if track == "temp" else (
        "id", "question", "location")
    items = []
    for row in rows:
        record = {name: row[name] for name in fields}
        query = modify_query(track, row, setting)
        items.append(QAItem(qa_key(track, record), record, query, tuple(row.get("answer") or ())))
    return items


def has_current_start(row: dict[str, Any]) -> bool:
    """Whether a raw temp question has a timeline with a cur_start (present-day track)."""
    return any(timeline.get("cur_start") for timeline in (row.get("timelines") or []))


def present_items(rows: list[dict[str, Any]], setting: str) -> list[QAItem]:
    """Items of the present-day track: the question alone asks for the current answer."""
    items = []
    for row in rows:
        if has_current_start(row):
            record = {"id": row["id"]}
            query = modify_query("present", row, setting)
            items.append(QAItem((row["id"],), record, query, tuple(row.get("cur_answers") or ())))
    return items


def curprev_items(rows: list[dict[str, Any]], setting: str) -> list[QAItem]:
    """Items of the current/previous track: dependent questions with non-empty answers."""
    items = []
    for which, answer_field in (("current", "cur_answers"), ("previous", "prev_answers")):
        for row in rows:
            if row.get("is_dependent") and row.get(answer_field):
                record = {"id": row["id"], "which": which}
                query = modify_query("curprev", {**row, "which": which}, setting)
                items.append(QAItem((row["id"], which), record, query, tuple(row[answer_field])))
    return items


def load_qa_items(data_dir: Path, track: str, split: str, setting: str) -> list[QAItem]:
    """Load the questions of a QA track and split, with the query of the given setting."""
    if track in ("temp", "geo"):
        rows = list(read_jsonl(data_dir / "qa_data" / f"{track}.{split}.jsonl"))
        return _context_qa_items(rows, track, setting)
    rows = list(read_jsonl(data_dir / "raw_data" / f"temp.{split}.jsonl"))
    if track == "present":
        return present_items(rows, setting)
    if track == "curprev":
        return curprev_items(rows, setting)
    raise ReleaseError(f"{track!r} is not a QA track; choose one of {', '.join(QA_TRACKS)}")


def release_file(data_dir: Path, track: str, split: str) -> Path:
    """The release file a track's split is read from."""
    if track in ("temp", "geo"):
        return data_dir / "qa_data" / f"{track}.{split}.jsonl"
    if track in ("present", "curprev"):
        return data_dir / "raw_data" / f"temp.{split}.jsonl"
    return data_dir / "id_data" / f"{track.removesuffix('-id')}.{split}.jsonl"


def context_items(data_dir: Path, context: str, split: str) -> list[QAItem]:
    """Training/dev items for one fine-tuning context type (temp, geo, current, previous)."""
    if context in ("temp", "geo"):
        return load_qa_items(data_dir, context, split, "query-modified")
    items = load_qa_items(data_dir, "curprev", split, "query-modified")
    return [item for item in items if item.record["which"] == context]


def parse_label(value: Any) -> bool | None:
    """Map the release's is_dependent ("yes"/"no", or a bool) to a label."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("yes", "no"):
        return value.lower() == "yes"
    return None


def load_id_items(data_dir: Path, track: str, split: str) -> list[IDItem]:
    """Load an identification split; the label comes from is_dependent (not `label`)."""
    if track not in ID_TRACKS:
        raise ReleaseError(f"{track!r} is not an identification track; choose temp-id or geo-id")
    base = track.removesuffix("-id")
    rows = read_jsonl(data_dir / "id_data" / f"{base}.{split}.jsonl")
    return [IDItem(row["id"], row["question"], parse_label(row.get("is_dependent")))
            for row in rows]
