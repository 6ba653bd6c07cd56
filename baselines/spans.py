"""Span decoding for the DPR reader, written here because transformers' decode_best_spans
takes the first [SEP] as the passage start (transformers issue #10375).

The reader input is ``[CLS] question [SEP] title [SEP] text``: the passage starts after the
SECOND [SEP] and ends before padding (or any later special token). Spans never leave it.
"""

from __future__ import annotations

from collections.abc import Sequence


def passage_bounds(input_ids: Sequence[int], sep_id: int, stop_ids: frozenset[int],
                   ) -> tuple[int, int] | None:
    """Return the inclusive (first, last) token positions of the passage text, or None."""
    seps = [i for i, token in enumerate(input_ids) if token == sep_id]
    if len(seps) < 2:
        return None
    first = seps[1] + 1
    last = first - 1
    for position in range(first, len(input_ids)):
        if input_ids[position] == sep_id or input_ids[position] in stop_ids:
            break
        last = position
    return (first, last) if last >= first else None


def best_span(start_logits: Sequence[float], end_logits: Sequence[float],
              bounds: tuple[int, int], max_span_length: int) -> tuple[int, int, float]:
    """Best (start, end, score) with first <= start <= end <= last, end - start < max length.

    The score is start_logit + end_logit, as in DPR; ties keep the earliest, shortest span.
    """
    first, last = bounds
    best: tuple[int, int, float] | None = None
    for start in range(first, last + 1):
        for end in range(start, min(last, start + max_span_length - 1) + 1):
            score = float(start_logits[start]) + float(end_logits[end])
            if best is None or score > best[2]:
                best = (start, end, score)
    if best is None:
        raise ValueError("empty passage bounds")
    return best


def extend_to_words(tokens: Sequence[str], start: int, end: int,
                    bounds: tuple[int, int]) -> tuple[int, int]:
    """Widen a span to whole words (WordPiece '##' continuations), staying in the passage."""
    first, last = bounds
    while start > first and tokens[start].startswith("##"):
        start -= 1
    while end < last and tokens[end + 1].startswith("##"):
        end += 1
    return start, end
