"""One gold example and its key: what every track's reader of the release produces."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Joins an example's NQ id and its context values into its key ("123|2021|sampled_year").
KEY_SEPARATOR = "|"


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
    #: The date (ISO, YYYY-MM-DD) its answer took effect, when the gold records one: a
    #: gold version's answer from an annotation campaign (the date the annotator gave, else
    #: the campaign's as-of date). The release records none (temp's come from its
    #: contexts: benchmark.cutoff). Serialized only when set, so the release's canonical
    #: gold, and every SHA-256 over it, stays as it is.
    answer_since: str | None = None

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
        if self.answer_since is not None:
            record["answer_since"] = self.answer_since
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
            answer_since=record.get("answer_since"),
        )

    def blank(self) -> dict[str, Any]:
        """The example as researchers receive it: key, id, question and context, no answers."""
        return {"key": self.key, "id": self.id, "question": self.question, **self.context}


def example_key(nq_id: int, context_values: Iterable[str] = ()) -> str:
    """The key of an example: its NQ id, then the values of its track's context fields."""
    return KEY_SEPARATOR.join([str(nq_id), *context_values])


def temp_key(nq_id: int, date: str, date_type: str) -> str:
    """Key of a temp example: NQ id, date and date type."""
    return example_key(nq_id, (date, date_type))


def geo_key(nq_id: int, location: str) -> str:
    """Key of a geo example: NQ id and location, case kept."""
    return example_key(nq_id, (location,))


def curprev_key(nq_id: int, which: str) -> str:
    """Key of a curprev example: NQ id and which answer (current or previous)."""
    return example_key(nq_id, (which,))


def question_key(nq_id: int) -> str:
    """Key of a question-level example (identification and present tracks)."""
    return example_key(nq_id)
