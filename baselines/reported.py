"""Typed loader of the paper-reported numbers (baselines/data/paper_reported.json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from benchmark.tracks import TRACK_INFO

#: The paper's metrics of every track, as the benchmark's registry declares them.
TRACK_METRICS: Mapping[str, frozenset[str]] = {
    name: frozenset(info.metrics) for name, info in TRACK_INFO.items()
}
MODEL_TYPES = frozenset({"retrieval-based", "closed-book", "other"})
SPLITS = frozenset({"dev", "test"})


class ReportedSchemaError(ValueError):
    """Raised when the reported-results file does not follow its schema."""


@dataclass(frozen=True)
class ReportedSource:
    """Where a number comes from in the paper."""

    table: int
    row: str
    setting: str


@dataclass(frozen=True)
class ReportedEntry:
    """One paper row on one track and split, with its metrics in percent."""

    id: str
    source: ReportedSource
    track: str
    split: str
    method: str
    model_type: str
    fine_tuned: bool
    query_modified: bool
    human: bool
    knowledge_source_date: str | None
    metrics: dict[str, float]
    metric_sources: dict[str, int]


def _require(cond: bool, entry_id: str, message: str) -> None:
    if not cond:
        raise ReportedSchemaError(f"entry {entry_id!r}: {message}")


def parse_entry(raw: Mapping[str, Any]) -> ReportedEntry:
    """Validate and convert one raw JSON entry."""
    entry_id = str(raw.get("id", "?"))
    required = {"id", "source", "track", "split", "method", "model_type", "fine_tuned",
                "query_modified", "human", "knowledge_source_date", "metrics"}
    _require(required <= set(raw), entry_id, f"missing fields {sorted(required - set(raw))}")
    track = raw["track"]
    _require(track in TRACK_METRICS, entry_id, f"unknown track {track!r}")
    _require(raw["split"] in SPLITS, entry_id, f"unknown split {raw['split']!r}")
    _require(raw["model_type"] in MODEL_TYPES, entry_id, f"bad model_type {raw['model_type']!r}")
    for flag in ("fine_tuned", "query_modified", "human"):
        _require(isinstance(raw[flag], bool), entry_id, f"{flag} must be a boolean")
    metrics = raw["metrics"]
    _require(isinstance(metrics, dict) and bool(metrics), entry_id, "metrics must be non-empty")
    unknown = set(metrics) - TRACK_METRICS[track]
    _require(not unknown, entry_id, f"metrics {sorted(unknown)} do not belong to {track}")
    for name, value in metrics.items():
        _require(isinstance(value, (int, float)) and 0.0 <= value <= 100.0, entry_id,
                 f"metric {name} must be a percentage, got {value!r}")
    source = raw["source"]
    _require(isinstance(source, dict) and {"table", "row", "setting"} <= set(source), entry_id,
             "source needs table, row and setting")
    return ReportedEntry(
        id=entry_id,
        source=ReportedSource(int(source["table"]), str(source["row"]), str(source["setting"])),
        track=track, split=raw["split"], method=str(raw["method"]),
        model_type=raw["model_type"], fine_tuned=raw["fine_tuned"],
        query_modified=raw["query_modified"], human=raw["human"],
        knowledge_source_date=raw["knowledge_source_date"],
        metrics={k: float(v) for k, v in metrics.items()},
        metric_sources={k: int(v) for k, v in raw.get("metric_sources", {}).items()},
    )


def default_path() -> Path:
    """Path of the packaged paper_reported.json."""
    return Path(str(resources.files("baselines") / "data" / "paper_reported.json"))


def load_reported(path: Path | None = None) -> list[ReportedEntry]:
    """Load and validate every reported entry (ids must be unique)."""
    document = json.loads((path or default_path()).read_text(encoding="utf-8"))
    entries = [parse_entry(raw) for raw in document.get("entries", [])]
    ids = [entry.id for entry in entries]
    if len(ids) != len(set(ids)):
        raise ReportedSchemaError("duplicate entry ids")
    return entries


def select(entries: list[ReportedEntry], track: str, split: str = "test",
           ) -> list[ReportedEntry]:
    """Entries of one track and split, in file order."""
    return [entry for entry in entries if entry.track == track and entry.split == split]
