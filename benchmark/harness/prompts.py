"""The closed-book prompt of each track: what a task's `doc_to_text` gives a document.

Its own module, importing only the track registry, because two sides read it: the tasks
(benchmark.harness.docs) build prompts with it, and the harness-file reader
(benchmark.harness_files) checks each logged prompt against the document beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..tracks import track_info

QA_INSTRUCTION: Final = "Answer the question with a short answer, on one line."
ID_INSTRUCTION: Final = ("Does the answer to this question depend on {what} it is asked? "
                         "Answer yes or no.")
#: What the context of each identification track is about.
_ID_WHAT: Final = {"temp-id": "when", "geo-id": "where"}

__all__ = ["ID_INSTRUCTION", "QA_INSTRUCTION", "prompt"]


def prompt(doc: Mapping[str, Any], track: str) -> str:
    """The zero-shot prompt of a document (few-shot prompts repeat it, with the target)."""
    info = track_info(track)
    if info.identification:
        return f"{ID_INSTRUCTION.format(what=_ID_WHAT.get(track, 'when'))}\n" \
               f"Question: {doc['question']}\nAnswer:"
    return f"{QA_INSTRUCTION}\nQuestion: {doc['query']}\nAnswer:"
