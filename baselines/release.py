"""The runners' items, read from the SituatedQA release through the benchmark's track registry.

Every item is one of the benchmark's own gold examples (same reader, keys and partitions),
so a runner's output names exactly the examples the scorer expects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.queries import modify_query
from benchmark.example import Example, GoldError
from benchmark.release import DATA_ENV
from benchmark.tracks import ID_TRACKS, QA_TRACKS, SPLITS, TRACK_INFO, TRACKS, read_track

__all__ = [
    "DATA_ENV", "ID_TRACKS", "QA_TRACKS", "SETTINGS", "SPLITS", "TRACKS", "IDItem", "QAItem",
    "FINETUNE_CONTEXTS", "ReleaseError", "context_items", "default_data_dir", "load_id_items",
    "load_qa_items", "qa_key", "release_file", "data_fingerprint",
]

SETTINGS = ("unmodified", "query-modified", "finetuned")
#: The context types the paper fine-tunes one model for, by the track they come from
#: (temp, geo, current, previous: see TrackInfo.context_types).
_FINETUNE_TRACK = {context: name for name, info in TRACK_INFO.items() if info.fine_tuned
                   for context in info.context_types}
FINETUNE_CONTEXTS = tuple(_FINETUNE_TRACK)
#: Output records of tracks read from this folder keep the question, as the official
#: prediction files of the qa_data tracks do.
_QUESTION_FOLDER = "qa_data"


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


def qa_key(track: str, record: dict[str, Any]) -> tuple[Any, ...]:
    """Return the key that identifies an output record of a track (its id and context)."""
    return (record["id"], *(record[name] for name in TRACK_INFO[track].context_fields))


def _examples(data_dir: Path, track: str, split: str) -> list[Example]:
    """The benchmark's examples of a track and split; ReleaseError names a bad file or line."""
    try:
        return read_track(data_dir, track, split)
    except GoldError as error:
        raise ReleaseError(str(error)) from None


def _qa_item(track: str, example: Example, setting: str) -> QAItem:
    """The item of one QA example; gold answers never enter the record."""
    record: dict[str, Any] = {"id": example.id}
    if TRACK_INFO[track].release.folder == _QUESTION_FOLDER:
        record["question"] = example.question
    record.update(example.context)
    query = modify_query(track, {"question": example.question, **example.context}, setting)
    return QAItem(qa_key(track, record), record, query, example.answers)


def load_qa_items(data_dir: Path, track: str, split: str, setting: str) -> list[QAItem]:
    """Load the questions of a QA track and split, with the query of the given setting."""
    if track not in QA_TRACKS:
        raise ReleaseError(f"{track!r} is not a QA track; choose one of {', '.join(QA_TRACKS)}")
    return [_qa_item(track, example, setting) for example in _examples(data_dir, track, split)]


def release_file(data_dir: Path, track: str, split: str) -> Path:
    """The release file a track's split is read from."""
    return TRACK_INFO[track].release.path(data_dir, split)


def data_fingerprint(data_dir: Path, track: str, split: str) -> dict[str, Any]:
    """The release file of a track's split as a sidecar records it: release, file, sha256."""
    from baselines.output import release_fingerprint

    return release_fingerprint(data_dir, release_file(data_dir, track, split))


def context_items(data_dir: Path, context: str, split: str) -> list[QAItem]:
    """Training/dev items for one fine-tuning context type (one of FINETUNE_CONTEXTS)."""
    if context not in _FINETUNE_TRACK:
        raise ReleaseError(f"{context!r} is not a fine-tuning context type; choose one of "
                           f"{', '.join(FINETUNE_CONTEXTS)}")
    info = TRACK_INFO[_FINETUNE_TRACK[context]]
    items = load_qa_items(data_dir, info.name, split, "query-modified")
    return [item for item in items if info.context_type(item.record) == context]


def load_id_items(data_dir: Path, track: str, split: str) -> list[IDItem]:
    """Load an identification split; the label comes from is_dependent (not `label`)."""
    if track not in ID_TRACKS:
        raise ReleaseError(f"{track!r} is not an identification track; choose one of "
                           f"{', '.join(ID_TRACKS)}")
    return [IDItem(example.id, example.question, example.label)
            for example in _examples(data_dir, track, split)]
