"""The documents and prompts the harness tasks share: one closed-book prompt per track.

A document is an example of the release as our tasks give it to a harness: the key, the NQ
id, the question and its context fields, the paper's query-modified question ("… as of
DATE", "… in LOCATION"), the gold (only where the inputs carry it: never for the server's
blank inputs), and the marker fields that say which task, version, split and scorer wrote
it (benchmark.harness_files checks them when the harness's file is uploaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..example import Example
from ..harness_files import TASK_FIELD, first_line, task_name
from ..tracks import track_info
from .conformance import fingerprint
from .prompts import ID_INSTRUCTION, QA_INSTRUCTION, prompt

#: Bumped whenever a task's documents, prompt or filter change.
TASK_VERSION: Final = 2

__all__ = ["ID_INSTRUCTION", "QA_INSTRUCTION", "TASK_VERSION", "document", "first_line", "prompt",
           "target", "task_name"]


def document(example: Example, track: str, split: str, *, harness: str,
             model: str | None = None, with_gold: bool = True) -> dict[str, Any]:
    """An example as a task's document (flat: harnesses store it as it is)."""
    info = track_info(track)
    doc: dict[str, Any] = {
        "key": example.key, "id": example.id, "question": example.question,
        **{name: example.context[name] for name in info.context_fields},
        "query": info.query(example.question, example.context),
    }
    if with_gold:
        if info.identification:
            doc["label"] = bool(example.label)
        else:
            doc["answers"] = list(example.answers)
            doc["any_answers"] = list(example.any_answers)
    doc.update({TASK_FIELD: task_name(track), "situatedqa_task_version": TASK_VERSION,
                "situatedqa_split": split, "situatedqa_scorer": fingerprint(),
                "situatedqa_harness": harness, "situatedqa_model": model or ""})
    return doc


def target(doc: Mapping[str, Any], track: str) -> str:
    """A document's target: its first answer, or yes/no; "" where the gold is not given."""
    if track_info(track).identification:
        return "" if "label" not in doc else ("yes" if doc["label"] else "no")
    answers = doc.get("answers") or []
    return str(answers[0]) if answers else ""
