"""Answer-equivalence metrics (issue 15): em_equiv and token F1, beside the paper's EM.

Hand-written gold / prediction pairs for every accepted date and number form, pairs that must
not match, hand-computed F1 values, Hypothesis properties on random files (em_equiv holds and
F1 is 1 wherever EM holds; the paper's metrics are the same with or without the lenient
ones), and checks on the release.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from bm_helpers import jsonl, parse, temp_example
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark import GoldSet, GoldSplit, compare, normalize_answer, per_example, score
from benchmark import cli as cli_module
from benchmark.cli import main
from benchmark.equivalence import (
    LENIENT_RULES,
    GoldForms,
    best_token_f1,
    gold_keys,
    lenient_outcomes,
    prediction_keys,
    token_f1,
)
from benchmark.metrics import (
    MetricValue,
    binary_metric,
    binary_metric_of_counts,
    fast_interval,
    mean_metric,
    rng_for,
)
from benchmark.scoring import (
    CORRECT,
    CORRECT_ANY,
    CORRECT_EQUIV,
    CORRECT_EQUIV_ANY,
    LENIENT_SCORED,
)

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def equivalent(gold: str, prediction: str) -> bool:
    """em_equiv of one prediction against one gold answer, through the scorer."""
    split = GoldSplit("temp", "dev", [temp_example(1, "2000", "orig", (gold,))])
    data = jsonl([{"key": split.examples[0].key, "prediction": prediction}])
    return score(split, parse(data, split), resamples=0).metrics["em_equiv"] == 100.0


def exact(gold: str, prediction: str) -> bool:
    """The paper's EM of one pair."""
    return normalize_answer(gold) == normalize_answer(prediction)


# Every accepted form; none of these pairs is an exact match after normalization.
DATE_PAIRS = [
    ("July 5, 1945", "5 July 1945"),
    ("July 5, 1945", "1945-07-05"),
    ("July 5, 1945", "the 5th of July 1945"),
    ("July 5, 1945", "5th of July, 1945"),
    ("July 5, 1945", "Jul. 5th, 1945"),
    ("July 5, 1945", "Thursday, July 5, 1945"),
    ("July 5, 1945", "1945/07/05"),
    ("July 5, 1945", "5-Jul-1945"),
    ("July 5, 1945", "1945 July 5"),
    ("5 July 1945", "July 5 1945"),
    ("September 3, 2018", "Sept. 3, 2018"),
    ("May 24,2017", "24 May 2017"),
    ("July\u00a021,\u00a01861", "21 July 1861"),  # no-break spaces, as in the release
    ("July 1945", "July of 1945"),
    ("July 1945", "1945-07-05"),  # a full date matches a gold month...
    ("1945", "July 5, 1945"),  # ...and a gold year
    ("1945", "July 1945"),
    ("in 1945", "1945"),
    ("1945", "the year 1945"),
    ("44 BC", "44 BCE"),
    ("AD 79", "79 AD"),
    ("1939\u20131945", "1939-1945"),
    ("1939\u20131945", "1939 to 1945"),
    ("1939\u20131945", "from 1939 to 1945"),
    ("1939\u20131945", "between 1939 and 1945"),
    ("1939\u20131945", "1939\u201445"),
    ("1940\u00e2\u20ac\u201c49", "1940-1949"),  # mojibake en dash, as in the release
    ("2005-06", "2005\u20132006"),
]
NUMBER_PAIRS = [
    ("1000", "one thousand"),
    ("1,638,000", "1.638 million"),
    ("3", "three"),
    ("twenty-one", "21"),
    ("one hundred and five", "105"),
    ("two thousand", "2,000"),
    ("5 million", "5,000,000"),
    ("5,000,000", "five million"),
    ("5.5 million", "5,500,000"),
    ("3.1", "3.10"),
    ("15 medals", "fifteen medals"),
    ("about 5 million people", "about 5,000,000 people"),
    ("nine hundred ninety-nine million", "999,000,000"),
]
MUST_NOT = [
    ("July 5, 1945", "July 6, 1945"),  # different days
    ("July 5, 1945", "5 August 1945"),
    ("1945", "1946"),
    ("May 5, 1945", "May"),  # no year: never a date
    ("May 5, 1945", "May 1945"),  # coarser than the gold
    ("July 1945", "1945"),
    ("the 1990s", "1990"),
    ("1990", "the 1990s"),
    ("1939\u20131945", "1939"),
    ("1939\u20131945", "1939-1944"),
    ("February 30, 2000", "March 1, 2000"),  # not a date at all
    ("5 million", "5"),
    ("5 million", "5 people"),
    ("15 medals", "15 goals"),
    ("3", "third"),
    ("1,000", "1.5"),
    ("Joe Biden", "Biden"),
]


@pytest.mark.parametrize(("gold", "prediction"), DATE_PAIRS + NUMBER_PAIRS)
def test_accepted_forms(gold: str, prediction: str) -> None:
    assert not exact(gold, prediction)
    assert equivalent(gold, prediction)


@pytest.mark.parametrize(("gold", "prediction"), MUST_NOT)
def test_must_not_match(gold: str, prediction: str) -> None:
    assert not equivalent(gold, prediction)


def test_granularity_is_the_gold_s() -> None:
    assert sorted(gold_keys("July 5, 1945")) == ["d:1945-07-05"]
    assert sorted(prediction_keys("July 5, 1945")) == ["d:1945", "d:1945-07", "d:1945-07-05"]
    assert sorted(gold_keys("July 1945")) == ["d:1945-07", "n:1945|july|"]
    assert gold_keys("the 1990s") == frozenset() == gold_keys("May")
    assert gold_keys("5 million") == {"n:5000000||"} == gold_keys("5,000,000")


@pytest.mark.parametrize(("gold", "prediction", "expected"), [
    ("the cat sat", "cat sat down", 0.8),  # common 2, P 2/3, R 1 (the article goes)
    ("Barack Obama", "Obama", 2 / 3),  # P 1, R 1/2
    ("New York City", "York", 0.5),
    ("x b b", "b b b", 2 / 3),  # multiset overlap: 2 of the 3 b's
    ("Paris", "London", 0.0),
])
def test_token_f1_by_hand(gold: str, prediction: str, expected: float) -> None:
    gold_tokens = normalize_answer(gold).split()
    value = token_f1(normalize_answer(prediction).split(), Counter(gold_tokens), len(gold_tokens))
    assert value == pytest.approx(expected)


def test_f1_best_over_gold_answers_and_partitions() -> None:
    gold = GoldSplit("temp", "dev", [
        temp_example(1, "2000", "orig", ("Barack Obama", "President Obama")),
        temp_example(2, "2001", "start", ("New York City",), ("New York City", "Boston")),
        temp_example(3, "2002", "sampled_year", ("July 5, 1945",)),
    ])
    predictions = {gold.examples[0].key: "Obama",  # 2/3 against both: best 2/3
                   gold.examples[1].key: "Boston",  # 0; but 1 against any_answer
                   gold.examples[2].key: "5 July 1945"}  # same tokens, other order: F1 1
    result = score(gold, parse(jsonl({"key": k, "prediction": v}
                                     for k, v in predictions.items()), gold), resamples=0)
    m = result.metrics
    assert m["em"] == 0.0
    assert m["f1"] == pytest.approx(100 * (2 / 3 + 0 + 1) / 3)
    assert m["f1_static"] == pytest.approx(100 * 2 / 3)
    assert m["f1_start"] == 0.0
    assert m["f1_any"] == pytest.approx(100 * (2 / 3 + 1 + 1) / 3)
    assert m["em_equiv"] == pytest.approx(100 / 3)
    assert m["em_equiv_sampled"] == 100.0
    assert m["em_equiv_any"] == pytest.approx(200 / 3)  # Boston, and the date
    assert result.counts["f1_static"] == 1 == result.counts["em_equiv_static"]
    rows = per_example(gold, parse(jsonl({"key": k, "prediction": v}
                                         for k, v in predictions.items()), gold), result)
    assert [r["correct_equiv"] for r in rows] == [False, False, True]
    assert [r["f1"] for r in rows] == pytest.approx([2 / 3, 0.0, 1.0])


# --- properties on random files ------------------------------------------------------------

WORDS = ["1945", "1,000", "1000", "July", "5", "July 5, 1945", "5 July 1945", "the", "a",
         "Paris", "three", "3", "May", "1939\u20131945", "1939-45", "Obama", "!", " ", "É",
         "5 million", "5,000,000", "", "in", "1990s"]
ANSWER = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)


@st.composite
def tiny_files(draw: st.DrawFn, answer: st.SearchStrategy[str], guess_any: bool
               ) -> tuple[GoldSplit, list[str]]:
    """A tiny temp split with gold answers drawn from `answer`, and predictions that are
    another draw or one of the example's answers (any_answer's too with guess_any)."""
    n = draw(st.integers(1, 8))
    examples = []
    for i in range(n):
        answers = tuple(draw(st.lists(answer, min_size=1, max_size=3)))
        extra = tuple(draw(st.lists(answer, max_size=2)))
        examples.append(temp_example(i + 1, str(2000 + i),
                                     draw(st.sampled_from(["orig", "start", "sampled_year"])),
                                     answers, answers + extra))
    gold = GoldSplit("temp", "dev", examples)
    predictions = [draw(answer | st.sampled_from(e.any_answers if guess_any else e.answers))
                   for e in examples]
    return gold, predictions


def random_files() -> st.SearchStrategy[tuple[GoldSplit, list[str]]]:
    """A tiny temp split with random gold answers and random predictions."""
    return tiny_files(ANSWER, guess_any=False)


@SETTINGS
@given(case=random_files())
def test_lenient_holds_wherever_em_holds(case: tuple[GoldSplit, list[str]]) -> None:
    gold, predictions = case
    data = jsonl({"key": e.key, "prediction": p}
                 for e, p in zip(gold.examples, predictions, strict=True))
    parsed = parse(data, gold)
    result = score(gold, parsed, resamples=0)
    paper = score(gold, parsed, resamples=0, lenient=False)
    assert {k: v for k, v in result.metrics.items() if k in paper.metrics} == paper.metrics
    codes = result.outcomes
    em = (codes & CORRECT) > 0
    assert np.all(codes & LENIENT_SCORED)
    assert np.all((codes[em] & CORRECT_EQUIV) > 0)
    assert result.f1 is not None and result.f1_any is not None
    assert np.all(result.f1[em] == 1.0)
    assert np.all((result.f1 >= 0) & (result.f1 <= 1))
    for name, value in result.metrics.items():
        if name.startswith(("em_equiv", "f1")) and value is not None:
            base = paper.metrics["em" + name.removeprefix("em_equiv").removeprefix("f1")]
            assert base is not None and value >= base - 1e-9, name
    # em_equiv_any and F1 Any equal a direct computation against the whole any_answer lists
    # (the scorer reads only the answers any_answer adds).
    any_forms = GoldForms([e.any_answers or e.answers for e in gold.examples])
    direct_equiv, direct_f1 = lenient_outcomes(
        parsed.answers or (), parsed.normalized_answers, (paper.outcomes & CORRECT_ANY) > 0,
        any_forms, {})
    assert np.array_equal((codes & CORRECT_EQUIV_ANY) > 0, direct_equiv)
    assert np.array_equal(result.f1_any, direct_f1)
    # Reference: EM (normalized equality) implies em_equiv, per example, by definition.
    for position, (example, prediction) in enumerate(
            zip(gold.examples, predictions, strict=True)):
        if any(exact(a, prediction) for a in example.answers):
            assert codes[position] & CORRECT_EQUIV


def plain_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 written out: Counter intersection of the normalized tokens."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def plain_equiv(prediction: str, gold: str) -> bool:
    """em_equiv of one pair by its definition: EM, or their match keys meet (no shortcut)."""
    return (normalize_answer(prediction) == normalize_answer(gold)
            or not gold_keys(gold).isdisjoint(prediction_keys(prediction)))


def plain_lenient_metrics(gold: GoldSplit, predictions: list[str]) -> dict[str, float | None]:
    """Every lenient metric of a temp split, one example and one gold answer at a time."""
    rows = []
    for example, prediction in zip(gold.examples, predictions, strict=True):
        every = example.any_answers or example.answers
        rows.append((example.partitions,
                     {"em_equiv": any(plain_equiv(prediction, a) for a in example.answers),
                      "em_equiv_any": any(plain_equiv(prediction, a) for a in every),
                      "f1": max(plain_f1(prediction, a) for a in example.answers),
                      "f1_any": max(plain_f1(prediction, a) for a in every)}))
    metrics: dict[str, float | None] = {}
    for family in ("em_equiv", "f1"):
        for suffix in ("", "_static", "_sampled", "_start", "_any"):
            key = family + ("_any" if suffix == "_any" else "")
            values = [float(v[key]) for partitions, v in rows
                      if suffix in ("", "_any") or suffix[1:] in partitions]
            metrics[family + suffix] = 100.0 * sum(values) / len(values) if values else None
    return metrics


#: Answers in several equivalent forms: dates at each granularity, ranges, numbers.
FORMS = ["July 5, 1945", "5 July 1945", "1945-07-05", "the 5th of July 1945", "July 1945",
         "1945", "1946", "May 1945", "1939\u20131945", "1939 to 1945", "1939-45", "1,000",
         "1000", "one thousand", "5 million", "5,000,000", "three", "3", "3 people",
         "three people", "the 1990s", "1990"]
FORM_ANSWER = st.sampled_from(FORMS) | ANSWER


def lenient_files() -> st.SearchStrategy[tuple[GoldSplit, list[str]]]:
    """A tiny temp split whose gold answers and predictions are often dates and numbers."""
    return tiny_files(FORM_ANSWER, guess_any=True)


@SETTINGS
@given(case=random_files() | lenient_files())
def test_lenient_metrics_equal_a_plain_reference(case: tuple[GoldSplit, list[str]]) -> None:
    """The scorer's em_equiv and F1 (work only where EM failed, per-pair caches, the token
    and year pre-tests, any_answer read from the added answers) equal a plain per-pair
    computation, on random files through the fast parse path."""
    gold, predictions = case
    data = jsonl({"key": e.key, "prediction": p}
                 for e, p in zip(gold.examples, predictions, strict=True))
    result = score(gold, parse(data, gold), resamples=0)
    expected = plain_lenient_metrics(gold, predictions)
    for name, value in expected.items():
        assert result.metrics[name] == pytest.approx(value, abs=1e-9), name


TOKENS = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=5)


@SETTINGS
@given(words=TOKENS, golds=st.lists(TOKENS, max_size=3))
def test_best_token_f1_is_token_f1_s_best(words: list[str], golds: list[list[str]]) -> None:
    """The set-intersection count (gold tokens distinct) gives token_f1's value bit for bit."""
    bags = tuple((Counter(g), len(g), len(set(g)) == len(g)) for g in golds)
    expected = max((token_f1(words, Counter(g), len(g)) for g in golds), default=0.0)
    assert repr(best_token_f1(words, bags)) == repr(expected)


@SETTINGS
@given(case=random_files() | lenient_files())
def test_gold_side_tables_give_what_the_counts_and_parses_give(
        case: tuple[GoldSplit, list[str]]) -> None:
    """GoldForms's tables (each example's alternates' F1, the gold sets each gold text
    matches) give lenient_outcomes the very values it computes without them."""
    gold, predictions = case
    answer_sets = [e.answers for e in gold.examples]
    tables = GoldForms(answer_sets, [[normalize_answer(a) for a in e.any_answers]
                                     for e in gold.examples])
    plain = GoldForms(answer_sets)
    normalized = [normalize_answer(p) for p in predictions]
    em = np.array([n in {normalize_answer(a) for a in e.answers}
                   for n, e in zip(normalized, gold.examples, strict=True)], dtype=np.bool_)
    equiv, f1 = lenient_outcomes(predictions, normalized, em, tables, {})
    plain_equiv, plain_f1 = lenient_outcomes(predictions, normalized, em, plain, {})
    assert np.array_equal(equiv, plain_equiv)
    assert f1.tobytes() == plain_f1.tobytes()
    for position in range(len(gold)):
        bags = tables.bags[position]
        for text, value in tables.f1_of[position].items():
            assert repr(value) == repr(max((token_f1(text.split(), bag, length)
                                            for bag, length, _ in bags), default=0.0))
        for text, groups in tables.known_groups.items():
            assert (tables.group[position] in groups) == (
                not tables.keys[position].isdisjoint(prediction_keys(text)))


# --- CIs ----------------------------------------------------------------------------------------


def _index_bootstrap(values: np.ndarray, resamples: int = 4000) -> tuple[float, float]:
    """The plain percentile bootstrap of a mean, in percent: resampled example indices."""
    rng = np.random.default_rng(11)
    draws = values[rng.integers(0, values.size, (resamples, values.size))].mean(axis=1) * 100
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def test_binary_metric_ci_matches_an_index_bootstrap() -> None:
    correct = np.array([True] * 300 + [False] * 700)
    value = binary_metric(correct, name="em_equiv", seed=4, resamples=4000)
    assert value.value == 30.0 and value.count == 1000
    assert value.ci is not None
    low, high = _index_bootstrap(correct.astype(np.float64))
    # Binomial(1000, 0.3) in percent: sd 1.449, so the interval is about 30 ± 2.84.
    assert value.ci[0] == pytest.approx(low, abs=0.35)
    assert value.ci[1] == pytest.approx(high, abs=0.35)
    assert value.ci[0] == pytest.approx(30 - 2.84, abs=0.35)
    assert binary_metric(correct, name="em_equiv", seed=4, resamples=0).ci is None
    assert binary_metric(correct[:0], name="x", seed=4, resamples=9).value is None


@pytest.mark.parametrize("partial", [0, 40, 150, 400])
def test_mean_metric_ci_matches_an_index_bootstrap(partial: int) -> None:
    rng = np.random.default_rng(7)
    scores = np.concatenate([np.zeros(500), np.ones(350), rng.uniform(0.1, 0.9, partial)])
    value = mean_metric(scores, name="f1", seed=3, resamples=4000)
    assert value.value == pytest.approx(100 * scores.mean())
    low, high = _index_bootstrap(scores)
    assert value.ci is not None
    assert value.ci[0] == pytest.approx(low, abs=0.4)
    assert value.ci[1] == pytest.approx(high, abs=0.4)


def test_mean_metric_small_partition() -> None:
    scores = np.array([0.0] * 25 + [1.0] * 12 + [0.5, 0.4, 0.8, 2 / 3, 0.25, 0.5])  # 43, as US
    value = mean_metric(scores, name="f1_us", seed=3, resamples=4000)
    low, high = _index_bootstrap(scores)
    assert value.ci is not None
    assert value.ci[0] == pytest.approx(low, abs=1.5)
    assert value.ci[1] == pytest.approx(high, abs=1.5)


def reference_mean_metric(scores: np.ndarray, *, name: str, seed: int, resamples: int
                          ) -> MetricValue:
    """mean_metric as first written: ndarray.mean, np.clip, the percentages, fast_interval."""
    n = int(scores.size)
    if n == 0:
        return MetricValue(None, None, 0)
    value = 100.0 * float(scores.mean())
    if resamples <= 0:
        return MetricValue(value, None, n)
    positive = scores[scores > 0]
    size = positive.size
    mean = float(np.add.reduce(positive)) / size if size else 0.0
    spread = 0.0
    if size:
        deviations = positive - mean
        spread = math.sqrt(float(np.add.reduce(deviations * deviations)) / size)
    rng = rng_for(seed, name)
    counts = rng.binomial(n, size / n, size=resamples).astype(np.float64)
    totals = counts * mean
    if spread > 0:
        noise = rng.standard_normal(resamples) * np.sqrt(counts)
        noise *= spread
        totals += noise
        np.clip(totals, 0.0, counts, out=totals)
    totals *= 100.0
    totals /= n
    return MetricValue(value, fast_interval(totals), n)


def reference_binary_metric(correct: np.ndarray, *, name: str, seed: int, resamples: int
                            ) -> MetricValue:
    """binary_metric as first written: the percentages of the draws, fast_interval."""
    n = int(correct.size)
    if n == 0:
        return MetricValue(None, None, 0)
    k = int(np.count_nonzero(correct))
    if resamples <= 0:
        return MetricValue(100.0 * k / n, None, n)
    draws = rng_for(seed, name).binomial(n, k / n, size=resamples)
    return MetricValue(100.0 * k / n, fast_interval(100.0 * draws / n), n)


def _score_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(12)
    return [np.zeros(30), np.ones(30), np.full(20, 0.5), np.array([0.3]), np.zeros(0),
            np.array([1e-300, 0.5, 1.0]), np.array([0.5, 0.5, 1.0, 0.0, 0.25] * 20),
            rng.random(400) * (rng.random(400) < 0.4),
            np.round(rng.random(2795) * (rng.random(2795) < 0.7) * 6) / 6]


@pytest.mark.parametrize("resamples", [0, 1, 2, 3, 7, 40, 2000, 2001])
def test_lenient_cis_equal_their_first_form(resamples: int) -> None:
    """mean_metric (partial sort before the scaling, max/min for np.clip) and
    binary_metric_of_counts give the values and CIs of their first form, bit for bit."""
    for scores in _score_arrays():
        for seed in (0, 5, 20211107):
            got = mean_metric(scores, name="f1_x", seed=seed, resamples=resamples)
            assert repr(got) == repr(reference_mean_metric(
                scores, name="f1_x", seed=seed, resamples=resamples))
            correct = scores > 0.4
            expected = reference_binary_metric(correct, name="em_equiv_x", seed=seed,
                                               resamples=resamples)
            assert repr(binary_metric(correct, name="em_equiv_x", seed=seed,
                                      resamples=resamples)) == repr(expected)
            assert repr(binary_metric_of_counts(
                int(correct.sum()), correct.size, name="em_equiv_x", seed=seed,
                resamples=resamples)) == repr(expected)


def test_lenient_metrics_equal_to_em_reuse_its_ci(tiny_temp: GoldSplit) -> None:
    data = jsonl({"key": e.key, "prediction": e.answers[0] if i % 2 else "zzz"}
                 for i, e in enumerate(tiny_temp.examples))
    result = score(tiny_temp, parse(data, tiny_temp), resamples=200)
    assert result.metrics["em_equiv"] == result.metrics["em"]
    assert result.ci["em_equiv"] == result.ci["em"]
    assert result.ci["f1"] == result.ci["em"]


# --- comparisons and stored scores -----------------------------------------------------------


def test_compare_lenient_only_with_marked_codes(tiny_temp: GoldSplit) -> None:
    good = score(tiny_temp, parse(jsonl({"key": e.key, "prediction": e.answers[0]}
                                        for e in tiny_temp.examples), tiny_temp), resamples=0)
    bad = score(tiny_temp, parse(jsonl({"key": e.key, "prediction": "zzz"}
                                       for e in tiny_temp.examples), tiny_temp), resamples=0)
    paired = compare(tiny_temp, good.outcomes, bad.outcomes, resamples=50, lenient=True)
    assert paired["em_equiv"].difference == 100.0
    assert "f1" not in paired
    # Codes stored before the lenient metrics (no LENIENT_SCORED bit): no em_equiv rows.
    old = good.outcomes & ~(LENIENT_SCORED | CORRECT_EQUIV)
    assert set(compare(tiny_temp, old, bad.outcomes, resamples=50, lenient=True)) == {
        "em", "em_static", "em_sampled", "em_start", "em_any"}
    assert compare(tiny_temp, good.outcomes, bad.outcomes, resamples=50)["em"] == \
        compare(tiny_temp, old, bad.outcomes & 3, resamples=50)["em"]


# --- the release ----------------------------------------------------------------------------


@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_release_any_answer_predictions(release_gold: GoldSet, track: str) -> None:
    """The release's first any_answer as predictions: lenient >= EM, counts as EM's."""
    gold = release_gold.get(track, "test")
    data = jsonl({"key": e.key, "prediction": (e.any_answers or e.answers)[0]}
                 for e in gold.examples)
    parsed = parse(data, gold)
    result = score(gold, parsed, resamples=0)
    paper = score(gold, parsed, resamples=0, lenient=False)
    for name in paper.metrics:
        assert result.metrics[name] == paper.metrics[name]
        suffix = name.removeprefix("em")
        for family in ("em_equiv", "f1"):
            assert result.counts[family + suffix] == paper.counts[name]
            assert result.metrics[family + suffix] >= paper.metrics[name]  # type: ignore[operator]
    assert np.array_equal(result.outcomes & 3, paper.outcomes)


def test_release_gold_as_predictions_scores_100_everywhere(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "test")
    data = json.dumps({e.key: e.answers[0] for e in gold.examples}).encode()
    result = score(gold, parse(data, gold), resamples=0)
    assert all(v == 100.0 for k, v in result.metrics.items() if k != "em_any" and
               not k.endswith("_any"))


# --- the offline CLI ------------------------------------------------------------------------


def test_cli_shows_lenient_metrics_apart(monkeypatch: pytest.MonkeyPatch, release_gold: GoldSet,
                                         release_dir: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("SITUATEDQA_DATA", str(release_dir))
    monkeypatch.setattr(cli_module, "import_release", lambda *a, **k: release_gold)
    gold = release_gold.get("temp", "test")

    def iso(answer: str) -> str:  # a full-date gold answer in ISO 8601: EM wrong, equiv right
        full = [k[2:] for k in gold_keys(answer) if k.startswith("d:") and k.count("-") == 2]
        return full[0].zfill(10) if full else answer  # ISO pads the year: 0624-03-13

    file = tmp_path / "iso.jsonl"
    file.write_bytes(jsonl({"key": e.key, "prediction": iso(e.answers[0])} for e in gold))
    runner = CliRunner()
    table = runner.invoke(main, ["score", "--track", "temp", "--split", "test", str(file),
                                 "--resamples", "0"])
    assert table.exit_code == 0, table.output
    paper_part, _, lenient_part = table.output.partition("Not in the paper")
    assert "EM (em)" in paper_part and "em_equiv" not in paper_part
    assert "EM equiv (em_equiv)" in lenient_part and "Token F1 Any (f1_any)" in lenient_part
    assert LENIENT_RULES["em_equiv"] in lenient_part
    line = next(x for x in lenient_part.splitlines() if x.startswith("EM equiv (em_equiv) "))
    assert line.split()[3] == "100.00"  # every ISO date matches its gold at full granularity
    em_line = next(x for x in paper_part.splitlines() if x.startswith("EM (em) "))
    assert float(em_line.split()[2]) < 100.0
    only = runner.invoke(main, ["score", "--track", "temp", "--split", "test", str(file),
                                "--resamples", "0", "--json", "--paper-only"])
    assert only.exit_code == 0, only.output
    assert list(json.loads(only.stdout)["metrics"]) == [
        "em", "em_static", "em_sampled", "em_start", "em_any"]


def test_cli_identification_f1_is_the_paper_s(monkeypatch: pytest.MonkeyPatch,
                                              release_gold: GoldSet, release_dir: Path,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("SITUATEDQA_DATA", str(release_dir))
    monkeypatch.setattr(cli_module, "import_release", lambda *a, **k: release_gold)
    gold = release_gold.get("temp-id", "test")
    file = tmp_path / "id.jsonl"
    file.write_bytes(jsonl({"key": e.key, "label": bool(e.label)} for e in gold))
    table = CliRunner().invoke(main, ["score", "--track", "temp-id", "--split", "test",
                                      str(file), "--resamples", "0"])
    assert table.exit_code == 0, table.output
    assert "F1 (f1)" in table.output and "Not in the paper" not in table.output
