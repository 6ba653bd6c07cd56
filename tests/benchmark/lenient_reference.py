"""The lenient metrics' per-example code as it was before could_be: the reference that
tests/benchmark/test_bm_lenient_reference.py compares the scorer's with, bit for bit, and
that `scripts/bench_scoring.py --reference` times beside it.

`reference_lenient_outcomes` is `benchmark.equivalence.lenient_outcomes` as it was (a
Python loop over every wrong example; a parse of every distinct prediction that may be a
date or number, whatever its letters; F1 counted wherever a token is shared),
`reference_lenient_codes` `benchmark.scoring.lenient_codes` calling it. Both read only
GoldForms attributes that the scorer still builds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchmark.equivalence import (
    BoolArray,
    FloatArray,
    GoldForms,
    best_token_f1,
    prediction_keys,
)
from benchmark.formats import Predictions
from benchmark.gold import GoldSplit
from benchmark.metrics import IntArray
from benchmark.scoring import (
    CORRECT,
    CORRECT_ANY,
    CORRECT_EQUIV,
    CORRECT_EQUIV_ANY,
    LENIENT_SCORED,
    added_forms,
    answer_forms,
)
from benchmark.tracks import track_info


def reference_lenient_outcomes(
    predictions: Sequence[str], normalized: Sequence[str], em: BoolArray, forms: GoldForms,
    key_cache: dict[tuple[str, int], frozenset[str]],
) -> tuple[BoolArray, FloatArray]:
    """Per-example em_equiv and best token F1 of predictions against one gold side.

    Work is spent only where EM failed (F1 is 1 and em_equiv holds wherever EM holds) and
    the gold has an answer, the parse only where the gold is a date, range or number and
    the prediction is no gold answer of the split (those are matched in GoldForms), and
    F1's count only where the prediction shares a token with the gold. key_cache maps a
    prediction to its match keys, shared between the gold sides.
    """
    equiv = em.copy()
    f1 = em.astype(np.float64)
    wrong = np.flatnonzero(~em & forms.answered)
    if not wrong.size:
        return equiv, f1
    group = forms.group
    # em_equiv: where the gold is a date, range or number. A prediction that is a gold answer
    # of the split is matched by GoldForms already (a plain loop: cheaper here than C loops
    # over lists); the others are parsed, once per (gold set, prediction).
    kinds_of, years_of, gold_keys_of = forms.kinds, forms.years, forms.keys
    known = forms.known_groups
    matched: dict[tuple[int, str], bool] = {}
    for i in wrong[kinds_of[wrong] > 0].tolist():
        text = predictions[i]
        groups = known.get(text)
        if groups is not None:
            if group[i] in groups:
                equiv[i] = True
            continue
        years = years_of[i]
        # A date or range matches only a prediction holding one of its years (tested first,
        # uncached: a few substring searches cost less than the cache's lookup).
        if years is not None and not any(map(text.__contains__, years)):
            continue
        pair = (group[i], text)
        hit = matched.get(pair)
        if hit is None:
            entry = (text, int(kinds_of[i]))
            keys = key_cache.get(entry)
            if keys is None:
                keys = key_cache[entry] = prediction_keys(*entry)
            hit = matched[pair] = not gold_keys_of[i].isdisjoint(keys)
        if hit:
            equiv[i] = True
    # Token F1: looked up where the prediction is an alternate of the example (another
    # context's answer, as wrong predictions often are); elsewhere 0 without a shared token
    # (an empty gold bag needs an empty prediction), as most other wrong predictions are:
    # tested first, uncached (most pairs are distinct); then counted once per (gold set,
    # normalized prediction). Plain loops: cheaper here than C loops over built lists.
    alternate_f1, vocab, bags = forms.f1_of, forms.vocab, forms.bags
    scores: dict[tuple[int, str], float] = {}
    for i in wrong.tolist():
        text = normalized[i]
        value = alternate_f1[i].get(text)
        if value is None:
            words = text.split()
            if words and vocab[i].isdisjoint(words):
                continue
            pair = (group[i], text)
            value = scores.get(pair)
            if value is None:
                value = scores[pair] = best_token_f1(words, bags[i])
        if value:
            f1[i] = value
    return equiv, f1


def reference_lenient_codes(gold: GoldSplit, predictions: Predictions, outcomes: IntArray
                  ) -> tuple[IntArray, FloatArray, FloatArray]:
    """The outcome codes with the em_equiv bits added, and per-example token F1 (answers, any).

    EM comes from the codes, so work is spent only where EM failed.
    """
    if predictions.answers is None:
        raise ValueError("QA predictions need answers")
    answers = predictions.answers
    normalized = predictions.normalized_answers
    cache: dict[tuple[str, int], frozenset[str]] = {}
    forms = answer_forms(gold)
    equiv, f1 = reference_lenient_outcomes(answers, normalized, (outcomes & CORRECT) > 0,
                                           forms, cache)
    codes = outcomes | LENIENT_SCORED | (equiv.astype(np.int64) * CORRECT_EQUIV)
    if "em_any" not in track_info(gold.track).metrics:
        return codes, f1, f1
    # any_answer is the answers plus the other contexts' answers, so against it em_equiv and
    # F1 are those against the answers or against the added answers, whichever is better:
    # only the added ones need reading, and only where EM Any and the answers fall short.
    added = added_forms(gold)
    settled = ((outcomes & CORRECT_ANY) > 0) | (equiv & (f1 >= 1.0))
    equiv_added, f1_added = reference_lenient_outcomes(answers, normalized, settled, added, cache)
    equiv_any = equiv | equiv_added
    return (codes | (equiv_any.astype(np.int64) * CORRECT_EQUIV_ANY), f1,
            np.maximum(f1, f1_added))
