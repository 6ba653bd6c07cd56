"""FreshQA snapshots as gold examples, and two snapshots' difference as gold-version updates.

Identity. A snapshot's `id` is its row number: the authors insert and reorder rows, so the
same question has another id in a later snapshot. A question's key is therefore its text:
"fq:" and the first 16 hex digits of the SHA-256 of the question normalized as answers are
(benchmark.normalize: NFD, lower case, no ASCII punctuation, no a/an/the, white space
collapsed), so case, punctuation and spacing edits keep the key. An edited question (its
normalized text differs) is another question: the later snapshot retires the old key and
adds the new one. No fuzzy matching: the rule is the key, and the changelog says so.

Examples. One Example per row: the key, the row's id, the question, no context (the as-of
date is the gold version's, not an example's), the non-empty answer slots as both `answers`
and `any_answers` (FreshQA has no other contexts), and four partitions: the fact type
(never_changing, slow_changing, fast_changing), the premise (false_premise, valid_premise),
the hops (one_hop, multi_hop) and the effective year (before_2022, or the year: "2024").

Versions. Per split, a key of both snapshots whose answers differ is `changed` (an update
record), a key of the later only `added`, of the earlier only `retired` (a question moving
split is retired from one and added to the other). A key whose answers are equal but whose
partitions differ is `reclassified`: listed in the changelog, with no update record. An
update record of benchmark/versions.py carries answers only, so a version built from
update records keeps each question's partitions (and id) from the snapshot that added it;
the changelog shows every partition change, of changed questions too.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final, Literal

from ..example import Example
from ..normalize import normalize_answer
from ..tracks import SPLITS
from .reader import FACT_TYPES, FactType, FreshQAError, Row

#: The track name the update records carry (the name the registry declares FreshQA under).
TRACK: Final = "freshqa"
KEY_PREFIX: Final = "fq:"
KEY_DIGITS: Final = 16
FACT_TYPE_PARTITIONS: Final[Mapping[FactType, str]] = {
    "never-changing": "never_changing", "slow-changing": "slow_changing",
    "fast-changing": "fast_changing"}
FALSE_PREMISE, VALID_PREMISE = "false_premise", "valid_premise"
HOPS_PARTITIONS: Final = {"one-hop": "one_hop", "multi-hop": "multi_hop"}
BEFORE_2022_PARTITION: Final = "before_2022"
#: How the changelog and the docs state the identity rule.
EDIT_RULE: Final = ("A question is identified by its normalized text: an edited question is "
                    "retired under its old key and added under its new one.")

Kind = Literal["changed", "added", "retired", "reclassified"]
KINDS: Final[tuple[Kind, ...]] = ("changed", "added", "retired", "reclassified")
#: The update-file action of each kind ("reclassified" has none).
ACTION_OF: Final[Mapping[Kind, str]] = {"changed": "update", "added": "add", "retired": "retire"}


def question_key(question: str) -> str:
    """The stable key of a question: "fq:" + 16 hex digits of SHA-256 of its normalized text."""
    digest = hashlib.sha256(normalize_answer(question).encode("utf-8")).hexdigest()
    return KEY_PREFIX + digest[:KEY_DIGITS]


def row_partitions(row: Row) -> tuple[str, ...]:
    """Fact type, premise, hops and effective year of a row, as partition names."""
    year = BEFORE_2022_PARTITION if row.effective_year is None else str(row.effective_year)
    return (FACT_TYPE_PARTITIONS[row.fact_type],
            FALSE_PREMISE if row.false_premise else VALID_PREMISE,
            HOPS_PARTITIONS[row.num_hops], year)


def row_example(row: Row) -> Example:
    """The gold example of one row."""
    return Example(key=question_key(row.question), id=row.id, question=row.question,
                   context={}, answers=row.answers, any_answers=row.answers,
                   partitions=row_partitions(row))


@dataclass(frozen=True)
class Snapshot:
    """One dated snapshot: its file name, the date its answers are true as of, its rows."""

    file: str
    date: date
    rows: tuple[Row, ...]


def check_unique_keys(snapshot: Snapshot) -> None:
    """FreshQAError naming both lines when two rows of a snapshot have one key."""
    seen: dict[str, Row] = {}
    for row in snapshot.rows:
        key = question_key(row.question)
        if key in seen:
            raise FreshQAError(f"the question has key {key}, as on line {seen[key].line} "
                               "(the same question after normalization)",
                               snapshot.file, row.line, "question")
        seen[key] = row


def snapshot_examples(snapshot: Snapshot) -> dict[str, tuple[Example, ...]]:
    """A snapshot's examples by split (in benchmark.tracks.SPLITS order), in file order."""
    check_unique_keys(snapshot)
    examples = [row_example(row) for row in snapshot.rows]
    by_split = {split: tuple(e for e, row in zip(examples, snapshot.rows, strict=True)
                             if row.split == split) for split in SPLITS}
    return {split: found for split, found in by_split.items() if found}


@dataclass(frozen=True)
class SnapshotChange:
    """One question that differs between two snapshots, as it was and as it is now."""

    kind: Kind
    split: str
    key: str
    before: Example | None
    after: Example | None
    fact_type: str

    @property
    def question(self) -> str:
        """The question's text (the later snapshot's, when it has it)."""
        shown = self.after or self.before
        return shown.question if shown else ""


@dataclass(frozen=True)
class SnapshotDiff:
    """Every change from one snapshot to a later one, in canonical order."""

    old: Snapshot
    new: Snapshot
    changes: tuple[SnapshotChange, ...]

    def of_kind(self, kind: Kind) -> tuple[SnapshotChange, ...]:
        """The changes of one kind, in order."""
        return tuple(change for change in self.changes if change.kind == kind)


def _fact_type(example: Example) -> str:
    """The fact type partition of an example (its first partition)."""
    return example.partitions[0]


def diff_split(split: str, before: Sequence[Example],
               after: Sequence[Example]) -> list[SnapshotChange]:
    """One split's changes: the earlier examples in their order, then the added ones."""
    old = {e.key: e for e in before}
    new = {e.key: e for e in after}
    changes = []
    for key, example in old.items():
        current = new.get(key)
        kind: Kind | None = (
            "retired" if current is None
            else "changed" if current.answers != example.answers
            else "reclassified" if current.partitions != example.partitions
            else None)
        if kind is not None:
            changes.append(SnapshotChange(kind, split, key, example, current,
                                  _fact_type(current or example)))
    changes += [SnapshotChange("added", split, key, None, example, _fact_type(example))
                for key, example in new.items() if key not in old]
    return changes


def diff_snapshots(old: Snapshot, new: Snapshot) -> SnapshotDiff:
    """Every changed, added, retired and reclassified question from `old` to `new`."""
    before, after = snapshot_examples(old), snapshot_examples(new)
    changes = [change for split in SPLITS if split in before or split in after
               for change in diff_split(split, before.get(split, ()), after.get(split, ()))]
    return SnapshotDiff(old, new, tuple(changes))


def counts_by_fact_type(changes: Iterable[SnapshotChange]) -> dict[str, int]:
    """How many changes of each fact type, in FACT_TYPES order, zeros left out."""
    counts = Counter(change.fact_type for change in changes)
    return {FACT_TYPE_PARTITIONS[f]: counts[FACT_TYPE_PARTITIONS[f]] for f in FACT_TYPES
            if counts[FACT_TYPE_PARTITIONS[f]]}


# --- update records and the changelog -----------------------------------------------------


def _reason(change: SnapshotChange, diff: SnapshotDiff) -> str:
    """The reason an update record gives: the snapshots and what happened."""
    what = {"changed": "the answers changed", "added": "the question is new",
            "retired": "the question is gone (or its text was edited)"}[change.kind]
    return f"FreshQA {diff.old.date.isoformat()} -> {diff.new.date.isoformat()}: {what}"


def update_record(change: SnapshotChange, diff: SnapshotDiff) -> dict[str, Any]:
    """The benchmark/versions.py update record of one change (not of a reclassified one)."""
    record: dict[str, Any] = {"track": TRACK, "split": change.split, "key": change.key,
                              "action": ACTION_OF[change.kind]}
    if change.kind != "retired" and change.after is not None:
        after = change.after
        if change.kind == "added":
            record.update(id=after.id, question=after.question, context={},
                          partitions=list(after.partitions))
        record.update(answer=list(after.answers), any_answer=list(after.any_answers))
    record["reason"] = _reason(change, diff)
    return record


def update_records(diff: SnapshotDiff) -> list[dict[str, Any]]:
    """The update records taking the older snapshot's gold to the newer's answers.

    `any_answer` is always given with `answer`: an update that gave only `answer` would
    keep the old answers as any_answers.
    """
    return [update_record(change, diff) for change in diff.changes if change.kind in ACTION_OF]


def update_file_text(records: Iterable[Mapping[str, Any]]) -> str:
    """Update records as an update file (JSON Lines)."""
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


_HEADINGS: Final[Mapping[Kind, str]] = {
    "changed": "Changed answers (partitions shown when they changed too)", "added": "Added",
    "retired": "Retired",
    "reclassified": "Partitions changed, answers kept (no update record)"}


def _section(kind: Kind, changes: Sequence[SnapshotChange]) -> list[str]:
    """One kind's heading, its counts by fact type and one line per question."""
    counts = ", ".join(f"{name} {n}" for name, n in counts_by_fact_type(changes).items())
    lines = [f"{_HEADINGS[kind]}: {len(changes)}" + (f" ({counts})" if counts else "")]
    for change in changes:
        lines.append(f"  {change.split}  {change.key}  {change.question}")
        if change.before and change.after and (
                change.before.partitions != change.after.partitions):
            lines.append(f"      {', '.join(change.before.partitions)} -> "
                         f"{', '.join(change.after.partitions)}")
    return lines


def changelog(diff: SnapshotDiff) -> str:
    """The changelog of two snapshots: every changed, added, retired and reclassified
    question by split, key and text (no answers: it names test questions)."""
    lines = [f"FreshQA {diff.old.date.isoformat()} ({diff.old.file}) -> "
             f"{diff.new.date.isoformat()} ({diff.new.file})", "",
             f"Keys: {KEY_PREFIX} + {KEY_DIGITS} hex digits of the SHA-256 of the normalized "
             "question. " + EDIT_RULE]
    for kind in KINDS:
        lines += ["", *_section(kind, diff.of_kind(kind))]
    return "\n".join(lines) + "\n"
