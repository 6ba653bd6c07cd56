"""Score intervals for shares at 0% or 100% (benchmark.intervals): Wilson's and Newcombe's
values by hand and from the literature, the rule that picks them, and every figure it
reaches (EM, em_equiv, token F1, identification accuracy/precision/recall, error classes).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from bm_helpers import parse, temp_example
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark import GoldSplit, Predictions, score
from benchmark.error_classes import build_error_tables
from benchmark.intervals import (
    BOOTSTRAP,
    WILSON,
    Z,
    difference_ci,
    interval_method,
    mean_ci,
    newcombe_interval,
    score_interval_applies,
    share_ci,
    wilson_interval,
)
from benchmark.metrics import (
    DEFAULT_SEED,
    accuracy_from_binary,
    id_accuracy,
    mean_metric,
    metric_from_codes,
)

Z2 = 1.959963984540054 ** 2  # 3.841459


def percent(interval: tuple[float, float]) -> tuple[float, float]:
    return 100.0 * interval[0], 100.0 * interval[1]


# --- the intervals by hand ----------------------------------------------------------------------


def test_the_normal_quantile_is_1_96() -> None:
    assert abs(Z - 1.959963984540054) < 1e-12


def test_wilson_by_hand() -> None:
    # Wilson: (k + z²/2 ± z sqrt(k(n-k)/n + z²/4)) / (n + z²).
    # 0 of 3: the lower end is 0, the upper (z²/2 + z·z/2) / (3 + z²) = z² / (3 + z²).
    assert wilson_interval(0, 3) == (0.0, pytest.approx(Z2 / (3 + Z2)))
    assert wilson_interval(0, 3)[1] == pytest.approx(0.5615, abs=5e-5)
    # 5 of 10: (5 + 1.9207 ± 1.96 sqrt(2.5 + 0.9604)) / 13.8415 = (6.9207 ± 3.6461) / 13.8415.
    assert wilson_interval(5, 10) == (pytest.approx(0.2366, abs=5e-5),
                                      pytest.approx(0.7634, abs=5e-5))
    # All right mirrors none right: 3 of 3 is [1 - 0.5615, 1].
    assert wilson_interval(3, 3) == (pytest.approx(3 / (3 + Z2)), 1.0)
    # One example: 0 of 1 is [0, z² / (1 + z²)] = [0, 0.7935].
    assert wilson_interval(0, 1)[1] == pytest.approx(0.7935, abs=5e-5)


def test_newcombe_worked_example() -> None:
    # Newcombe (1998), "Interval estimation for the difference between independent
    # proportions: comparison of eleven methods", Statistics in Medicine 17:873-890,
    # example (a): 56/70 - 48/80 = 0.2000, method 10 gives [0.0524, 0.3339].
    low, high = newcombe_interval(56, 70, 48, 80)
    assert low == pytest.approx(0.0524, abs=5e-5) and high == pytest.approx(0.3339, abs=5e-5)


def test_newcombe_when_both_sides_are_zero_by_hand() -> None:
    # p1 = p2 = 0: the lower end is 0 - sqrt(0 + u2²) = -u2, the upper 0 + sqrt(u1² + 0) = u1,
    # with u = z² / (n + z²): 0/10 - 0/20 is [-z²/(20 + z²), z²/(10 + z²)] = [-0.1611, 0.2775].
    low, high = newcombe_interval(0, 10, 0, 20)
    assert low == pytest.approx(-Z2 / (20 + Z2)) and high == pytest.approx(Z2 / (10 + Z2))
    assert (round(low, 4), round(high, 4)) == (-0.1611, 0.2775)
    # All right against none right: the upper end is the difference itself, 1.
    assert newcombe_interval(3, 3, 0, 3)[1] == 1.0


@pytest.mark.parametrize("k, n", [(-1, 3), (4, 3), (0, 0), (1, -2)])
def test_a_share_needs_a_count_inside_its_examples(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson_interval(k, n)


# --- the rule ------------------------------------------------------------------------------------


def test_the_rule_takes_the_score_interval_at_0_and_100_percent_only() -> None:
    assert score_interval_applies(0, 3) and score_interval_applies(3, 3)
    assert not score_interval_applies(1, 3) and not score_interval_applies(0, 0)
    bootstrap = (10.0, 50.0)
    assert share_ci(6, 20, bootstrap) is bootstrap  # in between: the bootstrap, as it was
    assert share_ci(0, 20, None) is None  # no CIs asked for: none given
    assert share_ci(0, 20, (0.0, 0.0)) == percent(wilson_interval(0, 20))
    assert share_ci(0, 20, (0.0, 0.0)) == (0.0, pytest.approx(16.11, abs=5e-3))
    assert difference_ci(2, 3, 1, 3, bootstrap) is bootstrap
    assert difference_ci(5, 5, 0, 4, (100.0, 100.0)) == percent(newcombe_interval(5, 5, 0, 4))
    assert difference_ci(5, 5, 0, 4, None) is None


def test_the_interval_named_from_the_stored_figure() -> None:
    assert interval_method(0.0, (0.0, 16.1)) == WILSON
    assert interval_method(100.0, (83.9, 100.0)) == WILSON
    assert interval_method(100.0, (100.0, 100.0)) == BOOTSTRAP  # a point: the bootstrap's
    assert interval_method(30.0, (10.0, 50.0)) == BOOTSTRAP
    assert interval_method(None, None) == BOOTSTRAP


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 10**6), data=st.data())
def test_wilson_contains_the_share_and_lies_in_0_1(n: int, data: st.DataObject) -> None:
    k = data.draw(st.sampled_from([0, n]) | st.integers(0, n))
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert low < high  # never a point: the data never make a share certain
    ci = percent((low, high))  # as share_ci scales it, against the figure as computed
    assert 0.0 <= ci[0] <= 100.0 * k / n <= ci[1] <= 100.0


@settings(max_examples=300, deadline=None)
@given(n1=st.integers(1, 10**5), n2=st.integers(1, 10**5), data=st.data())
def test_newcombe_contains_the_difference_and_lies_in_minus_1_1(
        n1: int, n2: int, data: st.DataObject) -> None:
    k1 = data.draw(st.sampled_from([0, n1]) | st.integers(0, n1))
    k2 = data.draw(st.sampled_from([0, n2]) | st.integers(0, n2))
    low, high = newcombe_interval(k1, n1, k2, n2)
    assert -1.0 <= low <= k1 / n1 - k2 / n2 <= high <= 1.0
    assert low < high
    ci = percent((low, high))  # as difference_ci scales it
    gap = 100.0 * k1 / n1 - 100.0 * k2 / n2  # as provenance_values computes the gap
    assert -100.0 <= ci[0] <= gap <= ci[1] <= 100.0


# --- the figures the rule reaches ----------------------------------------------------------------


def answers_of(gold: GoldSplit, texts: list[str]) -> Predictions:
    return Predictions(gold.track, gold.split, "test", answers=tuple(texts), keys=gold.keys)


def test_em_all_right_on_four_examples_is_wide_and_half_right_keeps_its_bootstrap(
        tiny_temp: GoldSplit) -> None:
    result = score(tiny_temp, answers_of(tiny_temp, [e.answers[0] for e in tiny_temp]),
                   resamples=200)
    assert result.metrics["em"] == 100.0
    assert result.ci["em"] == percent(wilson_interval(4, 4))  # [51.01, 100], not [100, 100]
    assert result.ci["em_static"] == percent(wilson_interval(1, 1))  # 1 of 1: [20.65, 100]
    # The lenient metrics equal EM here: they carry the same interval.
    assert result.ci["em_equiv"] == result.ci["f1"] == result.ci["em"]
    # No CIs asked for: none, at 100% as anywhere.
    assert score(tiny_temp, answers_of(tiny_temp, [e.answers[0] for e in tiny_temp]),
                 resamples=0).ci["em"] is None
    # Half right: the bootstrap, as without the rule.
    texts = [e.answers[0] if i % 2 else "wrong" for i, e in enumerate(tiny_temp)]
    half = score(tiny_temp, answers_of(tiny_temp, texts), resamples=200, seed=3)
    codes = (half.outcomes & 1).astype(np.int64)
    assert half.ci["em"] == metric_from_codes(codes, 2, accuracy_from_binary, name="em",
                                              seed=3, resamples=200).ci


def test_em_equiv_at_100_percent_where_em_is_not() -> None:
    # "2015-03-03" is the date "March 3, 2015" written another way: em_equiv, not EM.
    gold = GoldSplit("temp", "test", [
        temp_example(1, "2019", "orig", ("March 3, 2015",)),
        temp_example(2, "2010", "sampled_year", ("1999",))])
    result = score(gold, answers_of(gold, ["2015-03-03", "1999"]), resamples=200)
    assert result.metrics["em"] == 50.0 and result.metrics["em_equiv"] == 100.0
    assert result.ci["em_equiv"] == percent(wilson_interval(2, 2))  # [34.24, 100]


def test_token_f1_at_100_percent_where_em_is_not(tiny_present: GoldSplit) -> None:
    # "Biden Joe" has every token of "Joe Biden": F1 1, EM 0. Every F1 is then 1, a 0/1 share.
    texts = ["Paris", "London", "Biden Joe"]
    result = score(tiny_present, answers_of(tiny_present, texts), resamples=200)
    assert result.metrics["em"] == pytest.approx(200 / 3)
    assert result.metrics["f1"] == 100.0
    assert result.ci["f1"] == percent(wilson_interval(3, 3))
    # Partial credit is no share: the bootstrap stays, a point when every F1 is the same
    # (the card's Limitations), here one in two tokens right everywhere (F1 2/3 each).
    partial = score(tiny_present, answers_of(tiny_present, ["Paris France", "London England",
                                                            "Joe"]), resamples=200)
    assert partial.f1 is not None
    assert partial.ci["f1"] == mean_metric(partial.f1, name="f1", seed=DEFAULT_SEED,
                                           resamples=200).ci


def test_token_f1_at_0_percent_is_a_share_of_zeros() -> None:
    scores = np.zeros(5)
    assert mean_ci(scores, (0.0, 0.0)) == percent(wilson_interval(0, 5))
    assert mean_ci(np.ones(5), (100.0, 100.0)) == percent(wilson_interval(5, 5))
    assert mean_ci(np.zeros(0), None) is None


def test_identification_shares_at_100_percent(tiny_id: GoldSplit) -> None:
    data = json.dumps({e.key: bool(label) for e, label in
                       zip(tiny_id.examples, tiny_id.labels, strict=True)}).encode()
    result = score(tiny_id, parse(data, tiny_id), resamples=200)
    assert result.metrics["accuracy"] == 100.0
    assert result.ci["accuracy"] == percent(wilson_interval(10, 10))
    # Precision: 5 of the 5 predicted dependent; recall: 5 of the 5 dependent.
    assert result.ci["precision"] == result.ci["recall"] == percent(wilson_interval(5, 5))
    # Per source: nq_passage has 3 questions (2 dependent), webq 7 (3 dependent).
    assert result.ci["accuracy_nq_passage"] == percent(wilson_interval(3, 3))
    assert result.ci["recall_webq"] == percent(wilson_interval(3, 3))
    # F1 is no share: its bootstrap stays, a point at 100% (the card's Limitations).
    assert result.ci["f1"] == (100.0, 100.0)


def test_identification_precision_without_a_predicted_positive_keeps_its_bootstrap(
        tiny_id: GoldSplit) -> None:
    data = json.dumps({e.key: False for e in tiny_id.examples}).encode()
    result = score(tiny_id, parse(data, tiny_id), resamples=200)
    # 0 by convention over no example: no share, no score interval.
    assert result.metrics["precision"] == 0.0 and result.ci["precision"] == (0.0, 0.0)
    assert result.ci["recall"] == percent(wilson_interval(0, 5))  # 0 of the 5 dependent
    # Accuracy, 5 of 10, keeps its bootstrap: the same as with no rule at all.
    assert result.metrics["accuracy"] == 50.0
    assert result.ci["accuracy"] == metric_from_codes(
        result.outcomes, 4, id_accuracy, name="accuracy", seed=DEFAULT_SEED, resamples=200).ci


def test_error_figures_at_0_and_100_percent(tiny_geo: GoldSplit) -> None:
    # Every answer wrong and unrelated to every other answer: the unrelated share of the
    # wrong answers is 5 of 5, wrong place's rate 0 of 5.
    result = score(tiny_geo, answers_of(tiny_geo, ["zzz"] * 5), resamples=200,
                   errors=build_error_tables(tiny_geo))
    assert result.metrics["unrelated_share"] == 100.0
    assert result.ci["unrelated_share"] == percent(wilson_interval(5, 5))
    assert result.metrics["wrong_place_rate"] == 0.0
    assert result.ci["wrong_place_rate"] == percent(wilson_interval(0, 5))
    assert result.ci["em"] == percent(wilson_interval(0, 5))
    # The India partition, one example, none right: [0, 79.35], as wide as one example is.
    assert result.ci["em_india"] == percent(wilson_interval(0, 1))
    assert math.isclose(result.ci["em_india"][1], 79.35, abs_tol=5e-3)  # type: ignore[index]
