"""Provenance of test examples: which gold was never published, and the figures on it.

Tiny hand-made gold and predictions, values worked out by hand; the CIs against the draws
they are defined by (benchmark.provenance).
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from benchmark import Example, GoldSplit, Predictions, parse_predictions, score
from benchmark.intervals import newcombe_interval, wilson_interval
from benchmark.metrics import (
    DEFAULT_SEED,
    accuracy_from_binary,
    accuracy_interval,
    metric_from_codes,
    rng_for,
)
from benchmark.provenance import (
    ADDED_ORIGIN,
    CHANGED_ORIGIN,
    GAP,
    GAP_STREAMS,
    PROVENANCE_METRICS,
    RELEASE_ORIGIN,
    RELEASED,
    UNRELEASED,
    gap_counts,
    gap_interval,
    is_unreleased,
    origins,
    provenance_values,
    unreleased_mask,
)
from benchmark.tracks import TRACK_INFO

CONTEXT = {"date": "2018", "date_type": "sampled_year"}


def qa(key: str, answers: tuple[str, ...], any_answers: tuple[str, ...] = ()) -> Example:
    return Example(key=key, id=int(key.split("|")[0]), question=f"q{key}?", context=CONTEXT,
                   answers=answers, any_answers=any_answers or answers,
                   partitions=("sampled",))


def key(n: int) -> str:
    return f"{n}|2018|sampled_year"


RELEASE = GoldSplit("temp", "test", [
    qa(key(1), ("a",)), qa(key(2), ("b",), ("b", "c")), qa(key(3), ("d",)),
    qa(key(4), ("x",)), qa(key(5), ("retired",))])
VERSION = GoldSplit("temp", "test", [
    qa(key(1), ("a",)),                     # unchanged: released
    qa(key(2), ("c",), ("c", "b")),         # updated to the release's any_answer: released
    qa(key(3), ("new",)),                   # updated to a new answer: unreleased
    qa(key(4), ("The X",)),                 # the release's answer, normalized: released
    qa(key(6), ("added",)),                 # added: unreleased
    qa(key(7), ("another",))])              # added: unreleased
MASK = [False, False, True, False, True, True]


def test_unreleased_mask_by_hand() -> None:
    assert unreleased_mask(RELEASE, VERSION).tolist() == MASK
    assert not unreleased_mask(RELEASE, RELEASE).any()
    with pytest.raises(ValueError):
        unreleased_mask(GoldSplit("temp", "dev", RELEASE.examples), VERSION)


def test_an_answer_added_beside_the_released_one_is_unreleased() -> None:
    released = qa(key(1), ("a",))
    assert is_unreleased(qa(key(1), ("a", "secret")), released)
    assert not is_unreleased(qa(key(1), ("A",)), released)  # normalized: the same answer
    assert is_unreleased(qa(key(1), ("a",)), None)


def test_identification_label_changes_are_unreleased() -> None:
    def ident(n: int, label: bool) -> Example:
        return Example(key=str(n), id=n, question=f"q{n}?", partitions=(
            "dependent" if label else "independent",), label=label, source="nq_table.open")
    release = GoldSplit("temp-id", "test", [ident(1, True), ident(2, False), ident(3, True)])
    version = GoldSplit("temp-id", "test", [ident(1, True), ident(2, True), ident(4, False)])
    mask = unreleased_mask(release, version)
    assert mask.tolist() == [False, True, True]
    # codes 0 TP, 1 FP, 2 FN, 3 TN: right on 1 (TP) and 3 (TN, a new one), wrong on 2 (FN).
    values = provenance_values(version, np.array([0, 2, 3]), mask, seed=DEFAULT_SEED,
                               resamples=0)
    assert values[UNRELEASED].value == pytest.approx(50.0)
    assert values[RELEASED].value == pytest.approx(100.0)
    assert values[GAP].value == pytest.approx(50.0)


def predictions_of(answers: list[str]) -> Predictions:
    lines = [{"key": k, "prediction": a} for k, a in zip(RELEASE_KEYS, answers, strict=True)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return parse_predictions(data, VERSION, filename="p.jsonl")


RELEASE_KEYS = [e.key for e in VERSION.examples]


def test_figures_by_hand_from_a_scored_prediction_set() -> None:
    # Right on 1 (a), 2 (c), 3 (new); wrong on 4, 6, 7.
    result = score(VERSION, predictions_of(["a", "c", "new", "y", "z", "w"]), resamples=0,
                   lenient=False)
    mask = unreleased_mask(RELEASE, VERSION)
    values = provenance_values(VERSION, result.outcomes, mask, seed=DEFAULT_SEED,
                               resamples=0)
    assert list(values) == [UNRELEASED, RELEASED, GAP] == list(PROVENANCE_METRICS)
    # Unreleased: 3, 6, 7 -> one right of three; released: 1, 2, 4 -> two of three.
    assert values[UNRELEASED].value == pytest.approx(100 / 3)
    assert values[RELEASED].value == pytest.approx(200 / 3)
    assert values[GAP].value == pytest.approx(100 / 3)
    # The gap has no n of its own: it compares the two counts, shown side by side.
    assert (values[UNRELEASED].count, values[RELEASED].count, values[GAP].count) == (3, 3, 0)
    assert gap_counts({RELEASED: 2775, UNRELEASED: 20}) == "2,775 vs 20"
    assert all(v.ci is None for v in values.values())  # resamples=0: no CIs
    # The paper's Total is over all six examples, the unreleased ones included.
    assert result.metrics["em"] == pytest.approx(50.0)


def test_the_figures_cis_are_the_paper_partitions_bootstrap_on_streams_of_their_own() -> None:
    outcomes = np.array([1, 1, 1, 0, 0, 0])
    mask = np.array(MASK)
    values = provenance_values(VERSION, outcomes, mask, seed=DEFAULT_SEED, resamples=2000)
    correct = (outcomes & 1).astype(np.int64)
    for name, part in ((UNRELEASED, mask), (RELEASED, ~mask)):
        same = metric_from_codes(correct[part], 2, accuracy_from_binary, name=name,
                                 seed=DEFAULT_SEED, resamples=2000)
        assert values[name] == same
        wrong = int((correct[part] == 0).sum())
        assert values[name].ci == accuracy_interval(wrong, int(part.sum()),
                                                    rng_for(DEFAULT_SEED, name), 2000)


def test_the_gap_ci_resamples_the_two_sets_independently() -> None:
    outcomes = np.array([1, 1, 1, 0, 0, 0])
    values = provenance_values(VERSION, outcomes, np.array(MASK), seed=DEFAULT_SEED,
                               resamples=2000)
    # The definition, written out: each side a binomial draw from its own stream.
    streams = [np.random.default_rng([DEFAULT_SEED, zlib.crc32(name.encode())])
               for name in GAP_STREAMS]
    released = streams[0].binomial(3, 2 / 3, size=2000)
    unreleased = streams[1].binomial(3, 1 / 3, size=2000)
    expected = np.percentile(100.0 * released / 3 - 100.0 * unreleased / 3, [2.5, 97.5])
    assert values[GAP].ci == pytest.approx(tuple(expected), abs=1e-9)
    assert values[GAP].ci == gap_interval(2, 3, 1, 3, seed=DEFAULT_SEED, resamples=2000)


def test_the_gap_ci_by_hand_when_neither_side_can_vary() -> None:
    # Every released answer right, every unreleased one wrong: each resample gives 100 - 0.
    assert gap_interval(5, 5, 0, 4, seed=1, resamples=500) == (100.0, 100.0)
    assert gap_interval(0, 5, 0, 4, seed=1, resamples=500) == (0.0, 0.0)
    assert gap_interval(1, 0, 0, 4, seed=1, resamples=500) is None
    assert gap_interval(1, 2, 0, 4, seed=1, resamples=0) is None


def test_the_gap_ci_width_is_that_of_two_independent_proportions() -> None:
    # p = 1/2 on 400 examples each side: the half-width is 1.96 * 100 * sqrt(2 * 0.25 / 400).
    low, high = gap_interval(200, 400, 200, 400, seed=DEFAULT_SEED, resamples=4000) or (0, 0)
    assert (high - low) / 2 == pytest.approx(1.96 * 100 * (0.5 / 400) ** 0.5, rel=0.1)


def test_no_unreleased_example_gives_no_figure_and_an_empty_side_none() -> None:
    outcomes = np.array([1, 1, 1, 0, 0, 0])
    assert provenance_values(VERSION, outcomes, np.zeros(6, dtype=np.bool_),
                             seed=DEFAULT_SEED, resamples=100) == {}
    every = provenance_values(VERSION, outcomes, np.ones(6, dtype=np.bool_),
                              seed=DEFAULT_SEED, resamples=100)
    assert every[UNRELEASED].value == pytest.approx(50.0)
    assert every[RELEASED].value is None and every[GAP].value is None
    assert every[GAP].ci is None
    with pytest.raises(ValueError):
        provenance_values(VERSION, outcomes, np.ones(5, dtype=np.bool_), seed=1, resamples=0)


def test_labels_say_the_figures_are_not_the_papers() -> None:
    info = TRACK_INFO["temp"]
    assert [info.label(m) for m in PROVENANCE_METRICS] == [
        "Unreleased", "Released", "Contamination gap"]
    assert not set(PROVENANCE_METRICS) & set(info.metrics)


def test_origins_by_hand() -> None:
    assert origins(RELEASE, VERSION) == [
        RELEASE_ORIGIN, CHANGED_ORIGIN, CHANGED_ORIGIN, CHANGED_ORIGIN, ADDED_ORIGIN,
        ADDED_ORIGIN]
    assert origins(RELEASE, RELEASE) == [RELEASE_ORIGIN] * len(RELEASE)


# --- the score intervals where a side cannot vary (benchmark.intervals) -----------------------


def test_none_right_of_three_unreleased_gets_a_wide_interval() -> None:
    # Right on the three released examples (1, 2, 4), wrong on the three unreleased ones:
    # each bootstrap draw of 0 right of 3 is 0 right, so the bootstrap said [0, 0].
    outcomes = np.array([1, 1, 0, 1, 0, 0])
    values = provenance_values(VERSION, outcomes, np.array(MASK), seed=DEFAULT_SEED,
                               resamples=2000)
    assert values[UNRELEASED].value == 0.0
    # Wilson, 0 of 3: [0, z² / (3 + z²)] = [0, 56.15].
    assert values[UNRELEASED].ci == (0.0, pytest.approx(56.15, abs=5e-3))
    assert values[UNRELEASED].ci == tuple(100 * x for x in wilson_interval(0, 3))
    # Released, 3 of 3: [43.85, 100].
    assert values[RELEASED].ci == tuple(100 * x for x in wilson_interval(3, 3))
    # The gap, 100 points, is Newcombe's interval of 3/3 - 0/3, not [100, 100].
    assert values[GAP].value == 100.0
    assert values[GAP].ci == tuple(100 * x for x in newcombe_interval(3, 3, 0, 3))
    low, high = values[GAP].ci or (0.0, 0.0)
    # 1 - sqrt((1 - 0.4385)² + 0.5615²) = 1 - 0.7941: [20.59, 100].
    assert (low, high) == (pytest.approx(20.59, abs=5e-3), 100.0)


def test_the_gap_on_three_unreleased_beside_a_thousand_released_is_wide() -> None:
    # 514 of 1,000 released right, 0 of 3 unreleased: the gap is 51.4 points. The bootstrap
    # drew only the released side's noise ([48.0, 54.6]); Newcombe's interval keeps
    # the three examples' uncertainty, and reaches below 0: no gap is not ruled out.
    examples = [qa(key(n), (f"answer {n}",)) for n in range(1, 1004)]
    split = GoldSplit("temp", "test", examples)
    mask = np.zeros(1003, dtype=np.bool_)
    mask[1000:] = True
    outcomes = np.zeros(1003, dtype=np.int64)
    outcomes[:514] = 1
    values = provenance_values(split, outcomes, mask, seed=DEFAULT_SEED, resamples=2000)
    assert values[GAP].value == pytest.approx(51.4)
    assert values[GAP].ci == tuple(100 * x for x in newcombe_interval(514, 1000, 0, 3))
    low, high = values[GAP].ci or (0.0, 0.0)
    assert low < 0 < values[GAP].value < high  # type: ignore[operator]
    assert high - low > 50
    # The released side alone, 514 of 1,000, keeps its bootstrap.
    assert values[RELEASED].ci == accuracy_interval(486, 1000, rng_for(DEFAULT_SEED, RELEASED),
                                                    2000)
