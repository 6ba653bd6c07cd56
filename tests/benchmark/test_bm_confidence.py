"""Bootstrap CIs and the paired comparison: reproducible, sane, equal to index resampling."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from bm_helpers import parse, temp_example
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark import GoldSet, GoldSplit, compare, score
from benchmark.metrics import (
    accuracy_from_binary,
    accuracy_interval,
    auc_metric,
    confusion_codes,
    id_f1,
    metric_from_codes,
    multinomial_draws,
    paired_difference,
    percentile_interval,
    rng_for,
    roc_auc,
)


def _half_right(gold: GoldSplit) -> bytes:
    """The gold answer on two examples in three, a wrong one on the third."""
    return json.dumps({e.key: (e.answers[0] if i % 3 else "wrong answer")
                       for i, e in enumerate(gold.examples)}).encode()


def test_same_seed_same_ci_other_seed_other_ci(release_gold: GoldSet) -> None:
    gold = release_gold.get("geo", "test")
    predictions = parse(_half_right(gold), gold)
    first = score(gold, predictions, resamples=500, seed=1)
    again = score(gold, predictions, resamples=500, seed=1)
    other = score(gold, predictions, resamples=500, seed=2)
    assert first.ci == again.ci
    assert first.metrics == other.metrics  # point estimates never depend on the seed
    assert first.ci != other.ci


@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_point_estimate_inside_ci(release_gold: GoldSet, track: str) -> None:
    gold = release_gold.get(track, "test")
    result = score(gold, parse(_half_right(gold), gold), resamples=500)
    assert result.ci.keys() == result.metrics.keys()
    for name, value in result.metrics.items():
        ci = result.ci[name]
        assert value is not None and ci is not None
        assert ci[0] <= value <= ci[1], name
        assert ci[0] < ci[1], name  # neither all right nor all wrong: a real interval


def test_identification_cis_contain_point(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp-id", "test")
    rng = np.random.default_rng(0)
    scores = np.clip(gold.labels * 0.3 + rng.random(len(gold)) * 0.7, 0, 1)
    data = "\n".join(json.dumps({"key": e.key, "score": float(s)})
                     for e, s in zip(gold.examples, scores, strict=True)).encode()
    result = score(gold, parse(data, gold), resamples=300)
    assert "auc" in result.metrics
    for name, value in result.metrics.items():
        ci = result.ci[name]
        assert value is not None and ci is not None, name
        assert ci[0] <= value <= ci[1], name


def test_no_ci_when_resamples_is_zero(release_gold: GoldSet) -> None:
    gold = release_gold.get("present", "test")
    result = score(gold, parse(_half_right(gold), gold), resamples=0)
    assert all(ci is None for ci in result.ci.values())


def _index_bootstrap(codes: np.ndarray, statistic, rng: np.random.Generator,  # type: ignore[no-untyped-def]
                     resamples: int, categories: int) -> np.ndarray:
    """The plain bootstrap: resample example indices, recompute the statistic."""
    indices = rng.integers(0, codes.size, size=(resamples, codes.size))
    counts = np.stack([np.bincount(codes[i], minlength=categories) for i in indices])
    return statistic(counts)


def test_multinomial_equals_index_bootstrap_for_em() -> None:
    # 13 of 20 right: EM = 65. Both bootstraps draw from the same law (Binomial(20, 0.65)/20),
    # so with 20,000 draws each value's frequency agrees within Monte-Carlo error (sd < 0.004).
    codes = np.array([1] * 13 + [0] * 7)
    counts = np.bincount(codes, minlength=2)
    resamples = 20_000
    multinomial = accuracy_from_binary(
        multinomial_draws(counts, np.random.default_rng(1), resamples))
    plain = _index_bootstrap(codes, accuracy_from_binary, np.random.default_rng(2),
                             resamples, 2)
    support = np.arange(0, 101, 5)
    freq_m = np.array([(multinomial == v).mean() for v in support])
    freq_p = np.array([(plain == v).mean() for v in support])
    assert np.abs(freq_m - freq_p).max() < 0.02
    low_m, high_m = percentile_interval(multinomial)
    low_p, high_p = percentile_interval(plain)
    # The values live on a 5-point grid: the endpoints agree within one step.
    assert abs(low_m - low_p) <= 5 and abs(high_m - high_p) <= 5
    assert multinomial.mean() == pytest.approx(65.0, abs=0.3)
    assert plain.mean() == pytest.approx(65.0, abs=0.3)


def test_multinomial_equals_index_bootstrap_for_f1() -> None:
    rng = np.random.default_rng(3)
    gold = rng.random(60) < 0.4
    predicted = np.where(rng.random(60) < 0.75, gold, ~gold)
    codes = confusion_codes(predicted, gold)
    counts = np.bincount(codes, minlength=4)
    resamples = 8_000
    multinomial = id_f1(multinomial_draws(counts, np.random.default_rng(4), resamples))
    plain = _index_bootstrap(codes, id_f1, np.random.default_rng(5), resamples, 4)
    assert multinomial.mean() == pytest.approx(plain.mean(), abs=0.5)
    assert multinomial.std() == pytest.approx(plain.std(), rel=0.05)
    for q in (2.5, 25, 50, 75, 97.5):
        assert np.percentile(multinomial, q) == pytest.approx(np.percentile(plain, q), abs=1.5)


def test_metric_from_codes_matches_direct_percentiles() -> None:
    codes = np.array([1] * 30 + [0] * 10)
    value = metric_from_codes(codes, 2, accuracy_from_binary, name="em", seed=9, resamples=1000)
    assert value.value == 75.0
    assert value.count == 40
    assert value.ci is not None
    # A 95% interval for p = 0.75, n = 40 is about +-13.4 points (normal approximation).
    half_width = 1.96 * np.sqrt(0.75 * 0.25 / 40) * 100
    assert value.ci[0] == pytest.approx(75 - half_width, abs=3.5)
    assert value.ci[1] == pytest.approx(75 + half_width, abs=3.5)


def test_percentile_interval_is_the_central_95_percent() -> None:
    # Values 0..1000: the 2.5th and 97.5th percentiles are 25 and 975 (ranks 25 and 975
    # of 1001); undefined draws (NaN) are left out, not counted.
    assert percentile_interval(np.arange(1001.0)) == pytest.approx((25.0, 975.0))
    with_nan = np.concatenate([np.arange(1001.0), np.full(500, np.nan)])
    assert percentile_interval(with_nan) == pytest.approx((25.0, 975.0))
    low, high = percentile_interval(np.full(3, np.nan))
    assert np.isnan(low) and np.isnan(high)


def test_paired_comparison_clearly_better() -> None:
    # A right on 180 of 200, B on 100 of 200 (B's right answers are a subset of A's).
    a = np.array([1] * 180 + [0] * 20)
    b = np.array([1] * 100 + [0] * 100)
    result = paired_difference(a, b, 2, accuracy_from_binary, name="em", seed=1,
                               resamples=2000)
    assert result.difference == pytest.approx(40.0)  # 90 - 50
    assert result.p_value is not None and result.p_value < 0.01
    assert result.ci is not None and result.ci[0] > 0
    assert result.count == 200


def test_paired_comparison_identical_systems() -> None:
    a = np.array([1, 0] * 50)
    result = paired_difference(a, a.copy(), 2, accuracy_from_binary, name="em", seed=1,
                               resamples=500)
    assert result.difference == 0.0
    assert result.p_value == 1.0
    assert result.ci == (0.0, 0.0)


def test_paired_comparison_tiny_difference_is_not_significant() -> None:
    # Same on 196 examples; A alone right on 3, B alone right on 1: +1 point, noise.
    both = [1] * 100 + [0] * 96
    a = np.array(both + [1, 1, 1, 0])
    b = np.array(both + [0, 0, 0, 1])
    result = paired_difference(a, b, 2, accuracy_from_binary, name="em", seed=1,
                               resamples=2000)
    assert result.difference == pytest.approx(1.0)
    assert result.p_value is not None and result.p_value > 0.2
    assert result.ci is not None and result.ci[0] <= 0 <= result.ci[1]


def test_compare_on_a_split(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "test")
    good = score(gold, parse(_half_right(gold), gold), resamples=0)
    bad = score(gold, parse(json.dumps({e.key: "no idea" for e in gold}).encode(), gold),
                resamples=0)
    diffs = compare(gold, good.outcomes, bad.outcomes, resamples=500)
    assert list(diffs) == [name for name in good.metrics if name[:2] == "em" and
                           not name.startswith("em_equiv")]  # the paper's metrics
    for name, d in diffs.items():
        assert d.difference == pytest.approx(good.metrics[name] - bad.metrics[name]), name  # type: ignore[operator]
        assert d.p_value is not None and d.p_value < 0.01, name
    same = compare(gold, good.outcomes, good.outcomes, resamples=200)
    assert all(d.difference == 0 and d.p_value == 1.0 for d in same.values())
    with pytest.raises(ValueError):
        compare(gold, good.outcomes[:10], bad.outcomes, resamples=10)


def test_compare_tiny_split_reproducible() -> None:
    gold = GoldSplit("temp", "test", [temp_example(i, "2000", "orig", (f"a{i}",))
                                      for i in range(30)])
    a = score(gold, parse(json.dumps({e.key: e.answers[0] for e in gold}).encode(), gold),
              resamples=0)
    b = score(gold, parse(json.dumps({e.key: (e.answers[0] if e.id % 2 else "x")
                                      for e in gold}).encode(), gold), resamples=0)
    first = compare(gold, a.outcomes, b.outcomes, resamples=300, seed=5)
    assert first == compare(gold, a.outcomes, b.outcomes, resamples=300, seed=5)
    assert first["em"].difference == pytest.approx(50.0)  # 30/30 vs 15/30


@settings(max_examples=60, deadline=None)
@given(labels=st.lists(st.booleans(), min_size=1, max_size=60),
       grid=st.sampled_from([2, 5, 100, 10**6]), seed=st.integers(0, 2**32),
       resamples=st.integers(1, 600), data=st.data())
def test_auc_ci_equals_a_plain_loop_over_resamples(labels: list[bool], grid: int, seed: int,
                                                    resamples: int, data: Any) -> None:
    """The vectorized AUC bootstrap gives the very values of roc_auc on each resample."""
    gold = np.array(labels, dtype=np.bool_)
    # Scores on a grid: few levels give many ties, a fine grid almost none.
    scores = np.array(data.draw(st.lists(st.integers(0, grid), min_size=gold.size,
                                         max_size=gold.size)), dtype=np.float64) / grid
    result = auc_metric(scores, gold, seed=seed, resamples=resamples)
    rng = rng_for(seed, "auc")
    indices = rng.integers(0, gold.size, size=(resamples, gold.size))
    plain = np.array([roc_auc(scores[i], gold[i]) for i in indices])
    if not gold.any() or gold.all():
        assert result.value is None and result.ci is None
    else:
        assert result.ci is not None
        # Equal to the bit (an interval is (nan, nan) when no resample holds both classes).
        np.testing.assert_array_equal(result.ci, percentile_interval(plain))


# --- the cheaper computations of the same CIs are bit-identical to the plain ones ----------

TAIL = (1 - 0.95) / 2 * 100


def _numpy_interval(values: np.ndarray[Any, Any]) -> tuple[float, float]:
    """What percentile_interval computed before it was made cheaper: np.percentile itself."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    low, high = np.percentile(finite, [TAIL, 100 - TAIL])
    return (float(low), float(high))


def _bits(interval: tuple[float, float] | None) -> list[bytes]:
    """The intervals' floats as bytes: equal bits, -0.0 and NaN included."""
    assert interval is not None
    return [np.float64(x).tobytes() for x in interval]


special_floats = st.sampled_from([0.0, -0.0, 5e-324, -1e308, 1e308, np.inf, -np.inf, np.nan,
                                  33.3, 100.0])


@settings(max_examples=400, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True) | special_floats
                       | st.integers(0, 4).map(float), min_size=0, max_size=80),
       repeat=st.integers(1, 40))
def test_percentile_interval_is_np_percentile_bit_for_bit(values: list[float],
                                                          repeat: int) -> None:
    array = np.array(values * repeat, dtype=np.float64)  # repeat: sizes up to 3,200, ties
    assert _bits(percentile_interval(array.copy())) == _bits(_numpy_interval(array))


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 5000), data=st.data(), seed=st.integers(0, 2**64 - 1),
       resamples=st.integers(1, 2500))
def test_em_ci_is_the_multinomial_percentiles_bit_for_bit(n: int, data: Any, seed: int,
                                                          resamples: int) -> None:
    """metric_from_codes's EM CI (one binomial draw, integer order statistics) equals the
    two-category multinomial's percentiles it replaced, and leaves the stream alike."""
    right = data.draw(st.sampled_from([0, n]) | st.integers(0, n))
    codes = np.array([1] * right + [0] * (n - right), dtype=np.int64)
    result = metric_from_codes(codes, 2, accuracy_from_binary, name="em", seed=seed,
                               resamples=resamples)
    rng = np.random.default_rng([seed, 0])
    plain_rng = np.random.default_rng([seed, 0])
    counts = np.bincount(codes, minlength=2)
    plain = _numpy_interval(accuracy_from_binary(multinomial_draws(counts, plain_rng,
                                                                   resamples)))
    assert _bits(accuracy_interval(n - right, n, rng, resamples)) == _bits(plain)
    assert rng.integers(0, 2**62) == plain_rng.integers(0, 2**62)
    generator = rng_for(seed, "em")
    expected = _numpy_interval(accuracy_from_binary(multinomial_draws(counts, generator,
                                                                      resamples)))
    assert _bits(result.ci) == _bits(expected)
