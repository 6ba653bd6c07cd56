"""Agreement of two annotators on a task: raw agreement and Cohen's kappa (pure, no I/O).

An annotator's response to a task is an answer (one or more strings), "no single answer"
or "question is ambiguous". Two responses *agree* when they are the same non-answer
outcome, or both answers and their sets of answers are equal after the benchmark's
normalization (`normalize_answer`, as EM compares answers).

Cohen's kappa is computed on the categorical outcome of each response: `unchanged` (every
answer given is, after normalization, one of the last known answers), `changed` (an answer
that is not), `no_single_answer` or `ambiguous`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from .normalize import normalize_answer

ANSWER: Final = "answer"
NO_SINGLE_ANSWER: Final = "no_single_answer"
AMBIGUOUS: Final = "ambiguous"
#: What an annotator may respond.
RESPONSE_KINDS: Final = (ANSWER, NO_SINGLE_ANSWER, AMBIGUOUS)
UNCHANGED: Final = "unchanged"
CHANGED: Final = "changed"
#: The categories Cohen's kappa is computed on.
CATEGORIES: Final = (UNCHANGED, CHANGED, NO_SINGLE_ANSWER, AMBIGUOUS)


@dataclass(frozen=True)
class Response:
    """One annotator's response: its kind and, for an answer, the answers."""

    kind: str
    answers: tuple[str, ...] = ()

    def normalized(self) -> frozenset[str]:
        """The answers after normalization (empty for a non-answer)."""
        return normalized_answers(self.answers)


def normalized_answers(answers: Iterable[str]) -> frozenset[str]:
    """The set of normalized answers."""
    return frozenset(normalize_answer(answer) for answer in answers)


def agree(a: Response, b: Response) -> bool:
    """The same non-answer outcome, or answers equal (as sets) after normalization."""
    if a.kind != b.kind:
        return False
    return a.kind != ANSWER or a.normalized() == b.normalized()


def category(response: Response, last_known: Iterable[str]) -> str:
    """The response's categorical outcome against the last known answers."""
    if response.kind != ANSWER:
        return response.kind
    known = normalized_answers(last_known)
    return UNCHANGED if known and response.normalized() <= known else CHANGED


def raw_agreement(pairs: Sequence[tuple[Response, Response]]) -> float | None:
    """The share of pairs that agree; None without pairs."""
    if not pairs:
        return None
    return sum(agree(a, b) for a, b in pairs) / len(pairs)


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' categories, (p_o - p_e) / (1 - p_e).

    None without pairs, or when chance agreement is certain (p_e = 1: both raters always
    gave the same one category), where kappa is undefined.
    """
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)
