"""Answer normalization of DrQA / the SQuAD evaluation script, as the paper uses it.

One definition, built from precompiled tables: a translate table, one regex.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from itertools import filterfalse

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
#: The same regex for ASCII text, where Unicode and ASCII word characters agree: twice as fast.
_ASCII_ARTICLES = re.compile(r"\b(?:an?|the)\b", re.ASCII)
_PUNCTUATION = str.maketrans("", "", string.punctuation)
#: For ASCII text NFD is the identity and lower() maps A-Z only: one table does both steps.
_ASCII_LOWER_NO_PUNCTUATION = str.maketrans(
    string.ascii_uppercase, string.ascii_lowercase, string.punctuation)
#: Joins the texts normalized in one batch: neither white space, a word character,
#: punctuation nor a letter of an article, so no step of the normalization crosses it.
_SEPARATOR = "\x00"


def normalize_answer(text: str) -> str:
    """NFD, lower-case, drop ASCII punctuation, remove a/an/the, collapse white space."""
    if text.isascii():
        text = text.translate(_ASCII_LOWER_NO_PUNCTUATION)
    else:
        text = unicodedata.normalize("NFD", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _normalize_ascii_batch(texts: list[str]) -> list[str] | None:
    """normalize_answer of ASCII texts, in one pass over their joined text; None if one has NUL.

    Each step acts alike on every text alone and on the texts joined by NUL: translation is
    per character (NUL is kept), an article never holds NUL and a word boundary at NUL is one
    at a text's end, and white space collapsed over the whole text leaves at most one space
    each side of a NUL, which strip() removes. One C call per step instead of per text.
    """
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:
        return None
    joined = joined.translate(_ASCII_LOWER_NO_PUNCTUATION)
    collapsed = " ".join(_ASCII_ARTICLES.sub(" ", joined).split())
    return list(map(str.strip, collapsed.split(_SEPARATOR)))


def normalize_many(texts: Sequence[str]) -> list[str]:
    """normalize_answer of every text, computing each distinct text once."""
    distinct = list(dict.fromkeys(texts))
    batch = list(filter(str.isascii, distinct))
    done = _normalize_ascii_batch(batch) if batch else None
    if done is None:
        normalized, rest = {}, distinct
    else:
        normalized, rest = dict(zip(batch, done, strict=True)), list(
            filterfalse(str.isascii, distinct))
    normalized.update(zip(rest, map(normalize_answer, rest), strict=True))
    return list(map(normalized.__getitem__, texts))
