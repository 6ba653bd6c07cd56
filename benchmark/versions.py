"""Gold versions: an update file applied to a parent gold set, and the difference of two sets.

An update file is JSON Lines, one record per changed example::

    {"track": "temp", "split": "dev", "key": "123|2021|sampled_year", "action": "update",
     "answer": ["new answer"], "any_answer": ["new answer", "old answer"], "reason": "…"}

`action` is `update` (replace `answer` and/or `any_answer`), `add` (a new example: also
`question`, `context`, optional `id`, `partitions` and `source`) or `retire` (drop it). On the
identification tracks `answer` is the label (true = context-dependent). A QA record with
`answer` may give `answer_since`, the date (YYYY-MM-DD) its answer took effect (a campaign's
records do): the example's `answer_since`; an update of `answer` without it clears the old
one (it dated the answer replaced), an update of `any_answer` alone keeps it. Validation reads the
whole file and names every bad record by line and key; nothing is applied unless all pass.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Final

import numpy as np

from .formats import Predictions, Problem, ValidationError, loads_strict
from .gold import Example, GoldSet, GoldSplit
from .tracks import SPLITS, TRACK_INFO

ACTIONS: Final = ("update", "add", "retire")
RECORD_FIELDS: Final = frozenset({
    "track", "split", "key", "action", "answer", "any_answer", "reason",
    "id", "question", "context", "partitions", "source", "answer_since"})
MAX_PROBLEMS: Final = 100


class UpdateError(ValidationError):
    """An update file was rejected; `problems` names each bad record by line and key."""


@dataclass(frozen=True)
class UpdateRecord:
    """One validated change: which example, what to do, and the new gold."""

    line: int
    track: str
    split: str
    key: str
    action: str
    reason: str
    answers: tuple[str, ...] | None = None
    any_answers: tuple[str, ...] | None = None
    label: bool | None = None
    example: Example | None = None
    #: The date (YYYY-MM-DD) the new answer took effect, when the record gives one.
    answer_since: str | None = None


@dataclass(frozen=True)
class Change:
    """One example that differs between two gold sets."""

    track: str
    split: str
    key: str
    kind: str  # "changed", "added" or "retired"
    partitions: tuple[str, ...]
    answers: tuple[str, ...] = ()
    any_answers: tuple[str, ...] = ()
    label: bool | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """The change as a JSON object (new gold included: keep it off test pages)."""
        record: dict[str, Any] = {
            "track": self.track, "split": self.split, "key": self.key, "kind": self.kind,
            "partitions": list(self.partitions), "reason": self.reason}
        if self.label is None:
            record.update(answers=list(self.answers), any_answers=list(self.any_answers))
        else:
            record["label"] = self.label
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Change:
        """Rebuild a change from to_json's form."""
        return cls(track=record["track"], split=record["split"], key=record["key"],
                   kind=record["kind"], partitions=tuple(record["partitions"]),
                   answers=tuple(record.get("answers", ())),
                   any_answers=tuple(record.get("any_answers", ())),
                   label=record.get("label"), reason=record.get("reason", ""))


@dataclass
class _Reader:
    """Problems found so far in one update file."""

    filename: str
    problems: list[Problem] = field(default_factory=list)
    dropped: int = 0

    def add(self, message: str, line: int, key: str | None = None) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(self.filename, message, line, key))
        else:
            self.dropped += 1


def _strings(value: Any) -> tuple[str, ...] | None:
    """A non-empty list of non-empty strings (a single string is a list of one), else None."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        return None
    if not all(isinstance(item, str) and item.strip() for item in items):
        return None
    return tuple(items)


def derived_partitions(track: str, context: Mapping[str, str], label: bool | None,
                       given: tuple[str, ...] | None) -> tuple[str, ...] | str:
    """The partitions of a new example, or a message saying why they cannot be set."""
    try:
        return TRACK_INFO[track].partitions_of(context, label, given)
    except ValueError as exc:
        return str(exc)


def _answer_fields(record: Mapping[str, Any], track: str, required: bool,
                   reader: _Reader, line: int, key: str) -> dict[str, Any] | None:
    """answers/any_answers (or label) of a record, None after naming a problem."""
    has_answer, has_any = "answer" in record, "any_answer" in record
    if TRACK_INFO[track].identification:
        if "answer_since" in record:
            reader.add("identification tracks take no 'answer_since'", line, key)
            return None
        if has_any:
            reader.add("identification tracks take a label in 'answer', not 'any_answer'",
                       line, key)
            return None
        if not isinstance(record.get("answer"), bool):
            reader.add("'answer' must be true or false (the label) on identification tracks",
                       line, key)
            return None
        return {"label": record["answer"]}
    if required and not has_answer:
        reader.add("a new example needs 'answer'", line, key)
        return None
    if not (has_answer or has_any):
        reader.add("an update needs 'answer' and/or 'any_answer'", line, key)
        return None
    values: dict[str, Any] = {}
    for name, target in (("answer", "answers"), ("any_answer", "any_answers")):
        if name in record:
            parsed = _strings(record[name])
            if parsed is None:
                reader.add(f"{name!r} must be a non-empty list of non-empty strings", line, key)
                return None
            values[target] = parsed
    if "answer_since" in record:
        since = _iso_date(record["answer_since"])
        if since is None or not has_answer:
            reader.add("'answer_since' must be a date YYYY-MM-DD, given with 'answer'"
                       if since is None else "'answer_since' dates an answer: give 'answer' "
                       "with it", line, key)
            return None
        values["answer_since"] = since
    return values


def _iso_date(value: Any) -> str | None:
    """A calendar date written YYYY-MM-DD, as it is; None for anything else."""
    if not isinstance(value, str) or len(value) != 10:
        return None
    try:
        return value if date.fromisoformat(value).isoformat() == value else None
    except ValueError:
        return None


def _new_example(record: Mapping[str, Any], track: str, key: str, values: Mapping[str, Any],
                 reader: _Reader, line: int) -> Example | None:
    """The Example an `add` record describes, None after naming a problem."""
    question, context = record.get("question"), record.get("context", {})
    fields = TRACK_INFO[track].context_fields
    if not isinstance(question, str) or not question.strip():
        reader.add("a new example needs a non-empty 'question'", line, key)
        return None
    if (not isinstance(context, dict) or set(context) != set(fields)
            or not all(isinstance(v, str) and v.strip() for v in context.values())):
        reader.add(f"'context' must have exactly the string fields {list(fields)}", line, key)
        return None
    nq_id = record.get("id", key.split("|", 1)[0])
    try:
        nq_id = int(nq_id)
    except (TypeError, ValueError):
        reader.add("'id' must be an integer (or the key must start with one)", line, key)
        return None
    expected_key = TRACK_INFO[track].key(nq_id, context)
    if expected_key != key:
        reader.add(f"key must be {expected_key!r} for this id and context", line, key)
        return None
    given = _strings(record["partitions"]) if "partitions" in record else None
    partitions = derived_partitions(track, context, values.get("label"), given)
    if isinstance(partitions, str):
        reader.add(partitions, line, key)
        return None
    answers = values.get("answers", ())
    return Example(key=key, id=nq_id, question=question, context=dict(context),
                   answers=answers, any_answers=values.get("any_answers", answers),
                   partitions=partitions, label=values.get("label"),
                   source=record.get("source") if TRACK_INFO[track].identification else None,
                   answer_since=values.get("answer_since"))


def _read_one(record: Any, line: int, parent: GoldSet, reader: _Reader) -> UpdateRecord | None:
    """Validate one record against the parent gold; None after naming its problems."""
    if not isinstance(record, dict):
        reader.add("expected a JSON object", line)
        return None
    key = record.get("key")
    key = key if isinstance(key, str) and key else None
    unknown = sorted(set(record) - RECORD_FIELDS)
    track, split, action = record.get("track"), record.get("split"), record.get("action")
    problem = (
        "record needs a non-empty string 'key'" if key is None
        else f"unknown field(s) {unknown}" if unknown
        else f"'track' must be one of {list(TRACK_INFO)}" if track not in TRACK_INFO
        else f"'split' must be one of {list(SPLITS)}" if split not in SPLITS
        else f"'action' must be one of {list(ACTIONS)}" if action not in ACTIONS
        else "'reason' must be a string" if not isinstance(record.get("reason", ""), str)
        else None)
    if problem is not None or key is None:
        reader.add(problem or "", line, key)
        return None
    track, split, action = str(track), str(split), str(action)
    if (track, split) not in parent.splits:
        reader.add(f"the parent gold has no {track}/{split}", line, key)
        return None
    exists = key in parent.splits[(track, split)].index
    if exists == (action == "add"):
        reader.add("the key already exists" if exists else f"no example with this key in "
                   f"{track}/{split}", line, key)
        return None
    reason = record.get("reason", "")
    if action == "retire":
        return UpdateRecord(line, track, split, key, action, reason)
    values = _answer_fields(record, track, action == "add", reader, line, key)
    if values is None:
        return None
    example = _new_example(record, track, key, values, reader, line) if action == "add" else None
    if action == "add" and example is None:
        return None
    return UpdateRecord(line, track, split, key, action, reason, values.get("answers"),
                        values.get("any_answers"), values.get("label"), example,
                        values.get("answer_since"))


def parse_update(text: str, parent: GoldSet, filename: str = "update.jsonl") -> list[UpdateRecord]:
    """Validate every record of an update file against its parent; UpdateError lists problems."""
    reader = _Reader(filename)
    records: list[UpdateRecord] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = loads_strict(raw)
        except (ValueError, RecursionError) as exc:
            reader.add(f"malformed JSON: {exc}", line)
            continue
        parsed = _read_one(record, line, parent, reader)
        if parsed is None:
            continue
        where = (parsed.track, parsed.split, parsed.key)
        if where in seen:
            reader.add(f"this example is already changed on line {seen[where]}", line, parsed.key)
            continue
        seen[where] = line
        records.append(parsed)
    if not records and not reader.problems:
        reader.add("the update file has no records", 1)
    if reader.problems:
        raise UpdateError(reader.problems, truncated=reader.dropped)
    return records


def _updated(example: Example, record: UpdateRecord) -> Example:
    """An example with a record's new answers or label."""
    if record.label is not None:
        return replace(example, label=record.label,
                       partitions=("dependent" if record.label else "independent",))
    answers = record.answers if record.answers is not None else example.answers
    any_answers = record.any_answers if record.any_answers is not None else example.any_answers
    # A new answer carries its own date (or none): the old one dated the answer replaced.
    since = record.answer_since if record.answers is not None else example.answer_since
    return replace(example, answers=answers, any_answers=any_answers, answer_since=since)


def apply_update(parent: GoldSet, records: Iterable[UpdateRecord],
                 meta: Mapping[str, Any] | None = None) -> GoldSet:
    """A new gold set: the parent with the records applied (additions go last)."""
    by_split: dict[tuple[str, str], dict[str, UpdateRecord]] = {}
    for record in records:
        by_split.setdefault((record.track, record.split), {})[record.key] = record
    splits = []
    for where, gold in parent.splits.items():
        changes = by_split.get(where, {})
        if not changes:
            splits.append(gold)  # unchanged splits are shared, with their cached structures
            continue
        examples = [
            _updated(e, changes[e.key]) if e.key in changes else e
            for e in gold.examples
            if changes.get(e.key) is None or changes[e.key].action != "retire"]
        examples += [r.example for r in changes.values() if r.example is not None]
        splits.append(GoldSplit(gold.track, gold.split, examples))
    return GoldSet(splits, {**parent.meta, **(meta or {})})


def diff_gold(old: GoldSet, new: GoldSet,
              reasons: Mapping[tuple[str, str, str], str] | None = None) -> list[Change]:
    """Every example that was changed, added or retired from old to new, in canonical order."""
    changes: list[Change] = []
    for track, split in sorted(set(old.splits) | set(new.splits)):
        before = old.splits.get((track, split))
        after = new.splits.get((track, split))
        if before is after:
            continue
        old_examples = {e.key: e for e in (before or ())}
        new_examples = {e.key: e for e in (after or ())}
        for key, example in old_examples.items():
            current = new_examples.get(key)
            if current is None:
                kind = "retired"
            elif (current.answers, current.any_answers, current.label) != (
                    example.answers, example.any_answers, example.label):
                kind = "changed"
            else:
                continue
            shown = current or example
            changes.append(_change(track, split, key, kind, shown, reasons))
        for key, example in new_examples.items():
            if key not in old_examples:
                changes.append(_change(track, split, key, "added", example, reasons))
    return changes


def _change(track: str, split: str, key: str, kind: str, example: Example,
            reasons: Mapping[tuple[str, str, str], str] | None) -> Change:
    """A Change from the example as it now is (as it was, for a retired one)."""
    return Change(track=track, split=split, key=key, kind=kind, partitions=example.partitions,
                  answers=() if kind == "retired" else example.answers,
                  any_answers=() if kind == "retired" else example.any_answers,
                  label=example.label if kind != "retired" else None,
                  reason=(reasons or {}).get((track, split, key), ""))


def change_counts(changes: Iterable[Change]) -> dict[str, dict[str, dict[str, Counter[str]]]]:
    """Counts of changed/added/retired per track, split and partition ("all" for the split)."""
    counts: dict[str, dict[str, dict[str, Counter[str]]]] = {}
    for change in changes:
        per_split = counts.setdefault(change.track, {}).setdefault(change.split, {})
        for partition in ("all", *change.partitions):
            per_split.setdefault(partition, Counter())[change.kind] += 1
    return counts


def gold_checksums(gold: GoldSet) -> dict[str, str]:
    """SHA-256 of every split's canonical JSONL, as GoldSet.save writes it."""
    checksums = {}
    for (track, split), data in sorted(gold.splits.items()):
        digest = hashlib.sha256()
        for example in data.examples:
            digest.update((json.dumps(example.to_json(), ensure_ascii=False) + "\n").encode())
        checksums[f"{track}.{split}.jsonl"] = digest.hexdigest()
    return checksums


def fingerprint(checksums: Mapping[str, str]) -> str:
    """One SHA-256 over a manifest of file checksums."""
    return hashlib.sha256(json.dumps(dict(checksums), sort_keys=True).encode()).hexdigest()


def realign(predictions: Predictions, gold: GoldSplit) -> Predictions:
    """Predictions read against one key set, aligned to another split of the same track.

    Predictions for examples the gold no longer has are dropped; an example with no
    prediction (added after the file was made) counts as wrong.
    """
    if predictions.keys == gold.keys:
        return predictions
    position = {key: i for i, key in enumerate(predictions.keys)}
    keys = gold.keys
    if predictions.answers is not None:
        # An empty answer matches no gold answer: gold answers are non-empty strings.
        answers = tuple(predictions.answers[position[k]] if k in position else "" for k in keys)
        return Predictions(gold.track, gold.split, predictions.format, answers=answers, keys=keys)
    old_labels = predictions.labels if predictions.labels is not None else np.zeros(0, bool)
    labels = np.array([bool(old_labels[position[e.key]]) if e.key in position else not e.label
                       for e in gold.examples], dtype=np.bool_)
    scores = None
    if predictions.scores is not None:
        old_scores = predictions.scores
        scores = np.array([old_scores[position[e.key]] if e.key in position
                           else (0.0 if e.label else 1.0) for e in gold.examples],
                          dtype=np.float64)
    return Predictions(gold.track, gold.split, predictions.format, labels=labels, scores=scores,
                       keys=keys)
