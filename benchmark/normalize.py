"""Answer normalization of DrQA / the SQuAD evaluation script, as the paper uses it."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """NFD, lower-case, drop ASCII punctuation, remove a/an/the, collapse white space."""
    text = unicodedata.normalize("NFD", text).lower()
    text = text.translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def normalized_set(answers: Iterable[str]) -> frozenset[str]:
    """Normalize every answer once, for constant-time exact-match checks."""
    return frozenset(normalize_answer(a) for a in answers)
