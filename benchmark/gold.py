"""Canonical gold: the registry's tracks built from the official release, and their storage."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .example import (
    Example,
    GoldError,
    curprev_key,
    example_key,
    geo_key,
    question_key,
    temp_key,
)
from .normalize import normalize_many
from .tracks import (
    DEFAULT_PRESENT_THRESHOLD,
    SPLITS,
    TRACK_INFO,
    BuildOptions,
    check_split,
    geo_partitions,
    present_partition,
    read_jsonl,
    read_track,
    track_info,
)

__all__ = [
    "BoolArray", "Example", "GoldError", "GoldSet", "GoldSplit", "build_gold_set",
    "curprev_key", "example_key", "geo_key", "geo_partitions", "load_gold",
    "present_partition", "question_key", "read_jsonl", "temp_key",
]

BoolArray = npt.NDArray[np.bool_]


class GoldSplit:
    """The examples of one track and split, with precomputed scoring structures."""

    def __init__(self, track: str, split: str, examples: Iterable[Example]) -> None:
        self.track = track_info(track).name
        self.split = check_split(split)
        self.examples: tuple[Example, ...] = tuple(examples)
        self.index: dict[str, int] = {}
        for position, example in enumerate(self.examples):
            if example.key in self.index:
                raise GoldError(f"{track}.{split}: duplicate key {example.key!r}")
            self.index[example.key] = position

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[Example]:
        return iter(self.examples)

    @property
    def is_identification(self) -> bool:
        """True for the context-dependence identification tracks."""
        return track_info(self.track).identification

    @cached_property
    def normalized_answers(self) -> tuple[frozenset[str], ...]:
        """Each example's gold answers, normalized once."""
        return self._normalized_sets([e.answers for e in self.examples])

    @cached_property
    def normalized_any_answers(self) -> tuple[frozenset[str], ...]:
        """Each example's answers of all contexts, normalized once."""
        return self._normalized_sets([e.any_answers or e.answers for e in self.examples])

    @staticmethod
    def _normalized_sets(answer_lists: list[tuple[str, ...]]) -> tuple[frozenset[str], ...]:
        """The normalized answers of every list as a set, each distinct answer normalized once.

        Equal sets are one object: a question's contexts often share their answers (and
        always their any_answers), and a small frozenset takes 216 bytes or more, which
        would cost a worker keeping every dev and test split ~10 MiB.
        """
        flat = normalize_many([a for answers in answer_lists for a in answers])
        sets = []
        shared: dict[frozenset[str], frozenset[str]] = {}
        start = 0
        for answers in answer_lists:
            normalized = frozenset(flat[start:start + len(answers)])
            sets.append(shared.setdefault(normalized, normalized))
            start += len(answers)
        return tuple(sets)

    @cached_property
    def labels(self) -> BoolArray:
        """Gold labels of an identification track (True = context-dependent)."""
        return np.array([bool(e.label) for e in self.examples], dtype=np.bool_)

    @cached_property
    def partition_masks(self) -> dict[str, BoolArray]:
        """A boolean mask over the examples for every partition name."""
        names = sorted({p for e in self.examples for p in e.partitions})
        return {
            name: np.array([name in e.partitions for e in self.examples], dtype=np.bool_)
            for name in names
        }

    @cached_property
    def sources(self) -> tuple[str, ...]:
        """Source datasets present in this split, in a stable order."""
        return tuple(sorted({e.source for e in self.examples if e.source is not None}))

    @cached_property
    def source_masks(self) -> dict[str, BoolArray]:
        """A boolean mask over the examples for every source dataset."""
        return {
            source: np.array([e.source == source for e in self.examples], dtype=np.bool_)
            for source in self.sources
        }

    @cached_property
    def keys(self) -> tuple[str, ...]:
        """The example keys in gold order."""
        return tuple(e.key for e in self.examples)

    def partition_sizes(self) -> dict[str, int]:
        """The number of examples in each partition."""
        return {name: int(mask.sum()) for name, mask in self.partition_masks.items()}


class GoldSet:
    """All canonical gold splits, keyed by (track, split), with provenance metadata."""

    def __init__(self, splits: Iterable[GoldSplit], meta: Mapping[str, Any] | None = None) -> None:
        self.splits: dict[tuple[str, str], GoldSplit] = {(g.track, g.split): g for g in splits}
        self.meta: dict[str, Any] = dict(meta or {})

    def get(self, track: str, split: str) -> GoldSplit:
        """The gold of one track and split; GoldError when it is not available."""
        track_info(track)
        check_split(split)
        try:
            return self.splits[(track, split)]
        except KeyError:
            raise GoldError(f"no gold for track {track!r}, split {split!r}") from None

    def available(self) -> list[tuple[str, str]]:
        """The (track, split) pairs present, in the canonical order."""
        return [(t, s) for t in TRACK_INFO for s in SPLITS if (t, s) in self.splits]

    def save(self, directory: Path) -> None:
        """Write canonical gold as JSONL per track and split, plus meta.json."""
        directory.mkdir(parents=True, exist_ok=True)
        for (track, split), gold in self.splits.items():
            tmp = directory / f".{track}.{split}.jsonl.tmp"
            with tmp.open("w", encoding="utf-8") as out:
                for example in gold.examples:
                    out.write(json.dumps(example.to_json(), ensure_ascii=False) + "\n")
            tmp.replace(directory / f"{track}.{split}.jsonl")
        (directory / "meta.json").write_text(json.dumps(self.meta, indent=2, sort_keys=True))


def load_gold(directory: Path) -> GoldSet:
    """Read canonical gold written by GoldSet.save."""
    meta_path = directory / "meta.json"
    if not meta_path.is_file():
        raise GoldError(f"{directory}: no canonical gold here (meta.json missing); import it first")
    splits = []
    for track in TRACK_INFO:
        for split in SPLITS:
            path = directory / f"{track}.{split}.jsonl"
            if path.is_file():
                with path.open(encoding="utf-8") as lines:
                    examples = [Example.from_json(json.loads(line))
                                for line in lines if line.strip()]
                splits.append(GoldSplit(track, split, examples))
    return GoldSet(splits, json.loads(meta_path.read_text()))


def read_gold_file(path: Path, track: str, split: str) -> GoldSplit:
    """One split's canonical gold from a JSON Lines file (what GoldSet.save writes and the
    server's /data/TRACK/SPLIT/gold.jsonl offers); GoldError names the file and line."""
    examples = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldError(f"{path}: not readable as UTF-8 text ({exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            example = Example.from_json(record)
        except ValueError as exc:
            raise GoldError(f"{path}:{number}: not a gold example ({exc})") from None
        except (KeyError, TypeError, AttributeError) as exc:
            raise GoldError(f"{path}:{number}: not a canonical gold example (field "
                            f"{exc} missing or of the wrong type)") from None
        examples.append(example)
    if not examples:
        raise GoldError(f"{path}: no gold examples")
    gold = GoldSplit(track, split, examples)
    if gold.is_identification != all(e.label is not None for e in examples):
        raise GoldError(f"{path}: these examples are not of track {track!r}")
    return gold


def build_gold_set(
    release_dir: Path,
    *,
    present_threshold: int = DEFAULT_PRESENT_THRESHOLD,
    meta: Mapping[str, Any] | None = None,
) -> GoldSet:
    """Build every track of the registry from a release folder (each file read once)."""
    options = BuildOptions(present_threshold=present_threshold)
    cache: dict[Path, list[tuple[int, dict[str, Any]]]] = {}
    splits = [GoldSplit(track, split, read_track(release_dir, track, split, options, cache=cache))
              for split in SPLITS for track in TRACK_INFO]
    return GoldSet(splits, {**(meta or {}), "present_threshold": present_threshold})
