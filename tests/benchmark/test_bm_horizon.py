"""The knowledge horizon: the change point by hand, the not-determined rules, and seeded
synthetic submissions with a known horizon on the real temp dev split."""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from datetime import datetime

import numpy as np
import pytest
from bm_helpers import temp_example

from benchmark import GoldSet, GoldSplit, Predictions, score
from benchmark.error_classes import build_error_tables, error_tables
from benchmark.horizon import (
    MIN_EXAMPLES,
    Horizon,
    best_split,
    by_context_year,
    knowledge_horizon,
)


def test_best_split_by_hand() -> None:
    index, gain = best_split(np.array([5, 5, 5, 5]), np.array([5, 5, 0, 0]))
    # One segment: 10 right of 20, log-likelihood 20 log 1/2; two pure segments: 0.
    assert int(index) == 1 and math.isclose(float(gain), 20 * math.log(2))
    # Equal gains (an empty year between): the earliest split.
    assert int(best_split(np.array([5, 0, 5]), np.array([5, 0, 0]))[0]) == 0
    # Too few examples on a side, or no drop: none.
    assert int(best_split(np.array([4, 6]), np.array([4, 0]))[0]) == -1
    assert int(best_split(np.array([5, 5]), np.array([0, 5]))[0]) == -1
    assert int(best_split(np.array([9]), np.array([3]))[0]) == -1
    # Rows of curves at once (bootstrap draws).
    rows, _ = best_split(np.array([[5, 5, 5], [5, 5, 5]]), np.array([[5, 0, 0], [5, 5, 0]]))
    assert rows.tolist() == [0, 1]


def stepped_gold() -> tuple[GoldSplit, GoldSplit, list[str]]:
    """30 questions whose answer changed in 2000, 2002 or 2005 (10 each; none in 2003-2004),
    and a model right up to 2002, outdated after."""
    examples, texts = [], []
    for number in range(30):
        year = (2000, 2002, 2005)[number // 10]
        examples += [temp_example(number, "1990", "start", (f"old {number}",)),
                     temp_example(number, str(year), "start", (f"new {number}",))]
        texts += [f"old {number}", f"new {number}" if year <= 2002 else f"old {number}"]
    return GoldSplit("temp", "test", examples), GoldSplit("curprev", "test", []), texts


def horizon_of(gold: GoldSplit, companion: GoldSplit, texts: list[str],
               resamples: int = 500, seed: int = 1) -> Horizon:
    result = score(gold, Predictions("temp", gold.split, "test", answers=tuple(texts),
                                     keys=gold.keys),
                   resamples=resamples, seed=seed, errors=build_error_tables(gold, companion))
    assert result.horizon is not None
    return result.horizon


def test_horizon_by_hand() -> None:
    gold, companion, texts = stepped_gold()
    horizon = horizon_of(gold, companion, texts)
    assert horizon.bins == ((2000, 10, 10), (2002, 10, 10), (2005, 10, 0))
    assert horizon.n == 30 and horizon.determined and horizon.reason is None
    assert horizon.year == 2002 and horizon.identified == (2002, 2004)  # 2003-2004: no data
    assert horizon.ci == (2002, 2004)
    assert horizon.p_value is not None and horizon.p_value < 0.01
    assert horizon.to_json()["identified"] == [2002, 2004]
    # By context year: 1990 (30 contexts, right), 2000 and 2002 (right), 2005 (outdated).
    result = score(gold, Predictions("temp", gold.split, "test", answers=tuple(texts),
                                     keys=gold.keys), resamples=0,
                   errors=build_error_tables(gold, companion))
    assert result.error_classes is not None
    assert by_context_year(build_error_tables(gold, companion), result.error_classes) == (
        (1990, 30, 30, 0), (2000, 10, 10, 0), (2002, 10, 10, 0), (2005, 10, 0, 10))
    no_cis = horizon_of(gold, companion, texts, resamples=0)
    assert (no_cis.year, no_cis.ci, no_cis.p_value) == (2002, None, None)


def test_not_determined() -> None:
    gold, companion, texts = stepped_gold()
    right = [e.answers[0] for e in gold.examples]
    always = horizon_of(gold, companion, right)
    assert not always.determined and always.year is None and always.ci is None
    assert always.reason is not None and "never drops" in always.reason
    few = GoldSplit("temp", "test", list(gold.examples[:2 * (MIN_EXAMPLES // 2 - 1)]))
    few_horizon = horizon_of(few, companion, texts[:len(few)])
    assert few_horizon.reason is not None and few_horizon.reason.startswith("fewer than 20")
    one_year = GoldSplit("temp", "test", [  # 25 answers, all taking effect in 2000
        temp_example(n, date, "start", (f"{date} {n}",)) for n in range(25)
        for date in ("1990", "2000")])
    assert horizon_of(one_year, companion, [e.answers[0] for e in one_year.examples]).reason \
        == "every such answer took effect in the same year"
    # Right or outdated at random, whatever the year: rarely a significant drop.
    rng = random.Random(4)
    found = sum(horizon_of(gold, companion, [
        e.answers[0] if i % 2 == 0 or rng.random() < 0.5 else f"old {e.id}"
        for i, e in enumerate(gold.examples)], resamples=400, seed=seed).determined
        for seed in range(10))
    assert found <= 2


def test_horizon_needs_dated_contexts(release_gold: GoldSet) -> None:
    tables = error_tables(release_gold, "geo", "test")
    with pytest.raises(ValueError, match="no dated contexts"):
        knowledge_horizon(tables, np.zeros(len(tables), dtype=np.int64))


# --- synthetic submissions with a known horizon -------------------------------------------------


def start_year(date: str) -> int:
    """The year a release date starts in (read here, apart from the library)."""
    if re.fullmatch(r"\d{4}", date):
        return int(date)
    return datetime.strptime(date, "%B %d, %Y").year


def frozen_at(gold: GoldSplit, year: int, rng: random.Random, unrelated: float,
              slips: float) -> list[str]:
    """A model right up to `year`, answering with the year's answer after it.

    After `year` a context gets the answer of its question's latest context that starts by
    `year` (the earliest context's when none does). Noise: a share `unrelated` of the answers
    is replaced by a wrong, unrelated one, and a share `slips` of those up to `year` by the
    question's earliest answer (a stale slip).
    """
    questions: dict[int, list[int]] = defaultdict(list)
    for position, example in enumerate(gold.examples):
        questions[example.id].append(position)
    texts = [""] * len(gold)
    for positions in questions.values():
        order = sorted(positions, key=lambda p: start_year(gold.examples[p].context["date"]))
        for position in positions:
            example = gold.examples[position]
            if start_year(example.context["date"]) <= year:
                text = example.answers[0]
                if rng.random() < slips:
                    text = gold.examples[order[0]].answers[0]
            else:
                known = [p for p in order
                         if start_year(gold.examples[p].context["date"]) <= year]
                text = gold.examples[(known or order)[-1 if known else 0]].answers[0]
            texts[position] = "no idea" if rng.random() < unrelated else text
    return texts


def test_synthetic_horizons_are_recovered(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    companion = release_gold.get("curprev", "dev")
    recovered, trials = 0, 50
    for seed in range(trials):
        rng = random.Random(seed)
        year = rng.randint(2000, 2019)
        texts = frozen_at(gold, year, rng, unrelated=rng.uniform(0.0, 0.6),
                          slips=rng.uniform(0.0, 0.05))
        horizon = horizon_of(gold, companion, texts, resamples=2000, seed=seed)
        recovered += horizon.ci is not None and horizon.ci[0] <= year <= horizon.ci[1]
    assert recovered >= 0.9 * trials
