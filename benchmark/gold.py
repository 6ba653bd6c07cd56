"""Canonical gold: the six tracks built from the official release, and their storage."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .normalize import normalize_answer, normalize_many
from .tracks import (
    COMMON_LOCATIONS,
    DEFAULT_PRESENT_THRESHOLD,
    INDIA_LOCATIONS,
    SPLITS,
    TEMP_PARTITION_OF_DATE_TYPE,
    TRACKS,
    US_LOCATIONS,
    check_split,
    track_info,
)

_COMMON = frozenset(normalize_answer(loc) for loc in COMMON_LOCATIONS)
_US = frozenset(normalize_answer(loc) for loc in US_LOCATIONS)
_INDIA = frozenset(normalize_answer(loc) for loc in INDIA_LOCATIONS)

BoolArray = npt.NDArray[np.bool_]


class GoldError(Exception):
    """The release or the canonical gold is missing, altered or inconsistent."""


@dataclass(frozen=True)
class Example:
    """One gold example: its stable key, the question, its context and its answers."""

    key: str
    id: int
    question: str
    context: dict[str, str] = field(default_factory=dict)
    answers: tuple[str, ...] = ()
    any_answers: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    label: bool | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON form of this example."""
        record: dict[str, Any] = {
            "key": self.key, "id": self.id, "question": self.question,
            "context": self.context, "partitions": list(self.partitions),
        }
        if self.label is None:
            record["answers"] = list(self.answers)
            record["any_answers"] = list(self.any_answers)
        else:
            record["label"] = self.label
        if self.source is not None:
            record["source"] = self.source
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Example:
        """Rebuild an example from its canonical JSON form."""
        return cls(
            key=record["key"], id=int(record["id"]), question=record["question"],
            context=dict(record.get("context", {})),
            answers=tuple(record.get("answers", ())),
            any_answers=tuple(record.get("any_answers", ())),
            partitions=tuple(record.get("partitions", ())),
            label=record.get("label"), source=record.get("source"),
        )

    def blank(self) -> dict[str, Any]:
        """The example as researchers receive it: key, id, question and context, no answers."""
        return {"key": self.key, "id": self.id, "question": self.question, **self.context}


def temp_key(nq_id: int, date: str, date_type: str) -> str:
    """Key of a temp example: NQ id, date and date type."""
    return f"{nq_id}|{date}|{date_type}"


def geo_key(nq_id: int, location: str) -> str:
    """Key of a geo example: NQ id and location, case kept."""
    return f"{nq_id}|{location}"


def curprev_key(nq_id: int, which: str) -> str:
    """Key of a curprev example: NQ id and which answer (current or previous)."""
    return f"{nq_id}|{which}"


def question_key(nq_id: int) -> str:
    """Key of a question-level example (identification and present tracks)."""
    return str(nq_id)


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
        return self.track.endswith("-id")

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
        """The normalized answers of every list as a set, each distinct answer normalized once."""
        flat = normalize_many([a for answers in answer_lists for a in answers])
        sets = []
        start = 0
        for answers in answer_lists:
            sets.append(frozenset(flat[start:start + len(answers)]))
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
        return [(t, s) for t in TRACKS for s in SPLITS if (t, s) in self.splits]

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
    for track in TRACKS:
        for split in SPLITS:
            path = directory / f"{track}.{split}.jsonl"
            if path.is_file():
                with path.open(encoding="utf-8") as lines:
                    examples = [Example.from_json(json.loads(line)) for line in lines if line.strip()]
                splits.append(GoldSplit(track, split, examples))
    return GoldSet(splits, json.loads(meta_path.read_text()))


# --- building the tracks from the release's records (pure functions) -------------------------


def build_temp(records: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Temporal SituatedQA examples from qa_data/temp records."""
    examples = []
    for r in records:
        date_type = r["date_type"]
        examples.append(Example(
            key=temp_key(r["id"], r["date"], date_type), id=int(r["id"]), question=r["question"],
            context={"date": r["date"], "date_type": date_type},
            answers=tuple(r["answer"]), any_answers=tuple(r["any_answer"]),
            partitions=(TEMP_PARTITION_OF_DATE_TYPE[date_type],),
        ))
    return examples


def geo_partitions(location: str) -> tuple[str, str]:
    """Common/rare partition and the Table 7 group of a location."""
    normalized = normalize_answer(location)
    if normalized not in _COMMON:
        return ("rare", "rare")
    if normalized in _US:
        return ("common", "us")
    if normalized in _INDIA:
        return ("common", "india")
    return ("common", "other_common")


def build_geo(records: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Geographical SituatedQA examples from qa_data/geo records."""
    examples = []
    for r in records:
        partition, group = geo_partitions(r["location"])
        examples.append(Example(
            key=geo_key(r["id"], r["location"]), id=int(r["id"]), question=r["question"],
            context={"location": r["location"]},
            answers=tuple(r["answer"]), any_answers=tuple(r["any_answer"]),
            partitions=(partition,) if group == "rare" else (partition, group),
        ))
    return examples


def build_identification(records: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Identification examples from id_data records; label = is_dependent == "yes"."""
    examples = []
    for r in records:
        if r["is_dependent"] not in ("yes", "no"):
            raise GoldError(f"id {r['id']}: is_dependent must be yes/no, got {r['is_dependent']!r}")
        label = r["is_dependent"] == "yes"
        examples.append(Example(
            key=question_key(r["id"]), id=int(r["id"]), question=r["question"],
            partitions=("dependent" if label else "independent",),
            label=label, source=r.get("source_dataset"),
        ))
    return examples


def present_partition(record: Mapping[str, Any], threshold: int) -> str | None:
    """Stable/Updated by the data README's rule, or None when no timeline has a start."""
    years = [
        timeline["cur_start"]["year"]
        for timeline in record.get("timelines") or ()
        if timeline.get("cur_start") and timeline["cur_start"].get("year") is not None
    ]
    if not years:
        return None
    return "updated" if all(year >= threshold for year in years) else "stable"


def build_present(
    records: Iterable[Mapping[str, Any]], threshold: int = DEFAULT_PRESENT_THRESHOLD
) -> list[Example]:
    """Present-day examples from raw_data/temp records: gold = cur_answers."""
    examples = []
    for r in records:
        partition = present_partition(r, threshold)
        if partition is None:
            continue
        examples.append(Example(
            key=question_key(r["id"]), id=int(r["id"]), question=r["question"],
            answers=tuple(r["cur_answers"]),
            any_answers=tuple(r["cur_answers"]) + tuple(r.get("prev_answers") or ()),
            partitions=(partition,),
        ))
    return examples


def build_curprev(records: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Current and previous answers of the temporally dependent raw_data/temp questions."""
    examples = []
    for r in records:
        if not r.get("is_dependent"):
            continue
        current = tuple(r.get("cur_answers") or ())
        previous = tuple(r.get("prev_answers") or ())
        for which, answers in (("current", current), ("previous", previous)):
            if answers:
                examples.append(Example(
                    key=curprev_key(r["id"], which), id=int(r["id"]), question=r["question"],
                    context={"which": which}, answers=answers,
                    any_answers=current + previous, partitions=(which,),
                ))
    return examples


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSON Lines file of the release."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def build_gold_set(
    release_dir: Path,
    *,
    present_threshold: int = DEFAULT_PRESENT_THRESHOLD,
    meta: Mapping[str, Any] | None = None,
) -> GoldSet:
    """Build all six tracks from a release folder (qa_data, id_data, raw_data)."""
    splits: list[GoldSplit] = []
    for split in SPLITS:
        qa = release_dir / "qa_data"
        ident = release_dir / "id_data"
        raw_temp = read_jsonl(release_dir / "raw_data" / f"temp.{split}.jsonl")
        splits += [
            GoldSplit("temp", split, build_temp(read_jsonl(qa / f"temp.{split}.jsonl"))),
            GoldSplit("geo", split, build_geo(read_jsonl(qa / f"geo.{split}.jsonl"))),
            GoldSplit("temp-id", split,
                      build_identification(read_jsonl(ident / f"temp.{split}.jsonl"))),
            GoldSplit("geo-id", split,
                      build_identification(read_jsonl(ident / f"geo.{split}.jsonl"))),
            GoldSplit("present", split, build_present(raw_temp, present_threshold)),
            GoldSplit("curprev", split, build_curprev(raw_temp)),
        ]
    return GoldSet(splits, {**(meta or {}), "present_threshold": present_threshold})
