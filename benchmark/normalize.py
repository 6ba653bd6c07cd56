"""Answer normalization of DrQA / the SQuAD evaluation script, as the paper uses it.

One definition, built from precompiled tables: a translate table, one regex.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)
#: For ASCII text NFD is the identity and lower() maps A-Z only: one table does both steps.
_ASCII_LOWER_NO_PUNCTUATION = str.maketrans(
    string.ascii_uppercase, string.ascii_lowercase, string.punctuation)


def normalize_answer(text: str) -> str:
    """NFD, lower-case, drop ASCII punctuation, remove a/an/the, collapse white space."""
    if text.isascii():
        text = text.translate(_ASCII_LOWER_NO_PUNCTUATION)
    else:
        text = unicodedata.normalize("NFD", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_many(texts: Sequence[str]) -> list[str]:
    """normalize_answer of every text, computing each distinct text once."""
    distinct = dict.fromkeys(texts)
    normalized = {text: normalize_answer(text) for text in distinct}
    return list(map(normalized.__getitem__, texts))
