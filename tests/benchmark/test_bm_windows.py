"""Fresh windows (benchmark.windows): a later version's test split read as its board reads
it. The paper's metrics on the release's examples alone, bit for bit what scoring those
examples alone gives; a window per input release answered, EM with its count and Wilson
interval by hand; `fresh` only for a submission that answered every published release."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from bm_helpers import jsonl, parse, temp_example

from benchmark import Example, GoldSet, GoldSplit, score
from benchmark.error_classes import error_tables
from benchmark.intervals import wilson_interval
from benchmark.provenance import provenance_values, unreleased_mask
from benchmark.scoring import ScoreResult
from benchmark.tracks import FRESH, TRACK_INFO, is_window
from benchmark.versions import realign
from benchmark.windows import Windows, make_windows, window_error_values, windowed

RELEASE = [temp_example(100 + i, "2018", "sampled_year", (f"answer {i}",)) for i in range(6)]
FRESH_A = [temp_example(200 + i, "2031", "sampled_year", (f"fresh a{i}",)) for i in range(2)]
FRESH_B = [temp_example(300 + i, "2032", "sampled_year", (f"fresh b{i}",)) for i in range(2)]
VERSION = GoldSplit("temp", "test", [*RELEASE, *FRESH_A, *FRESH_B])
RELEASE_SPLIT = GoldSplit("temp", "test", RELEASE)
KEYS_A = [e.key for e in FRESH_A]
KEYS_B = [e.key for e in FRESH_B]


def predictions(right: dict[str, bool]) -> bytes:
    """A file answering every example of VERSION: right where asked, else wrong."""
    return jsonl({"key": e.key, "prediction": e.answers[0] if right.get(e.key) else "wrong"}
                 for e in VERSION.examples)


#: 4 of the 6 release examples right, 1 of 2 in release A, 0 of 2 in release B.
RIGHT = {**{e.key: i < 4 for i, e in enumerate(RELEASE)}, KEYS_A[0]: True}


def version_result(resamples: int = 200) -> ScoreResult:
    return score(VERSION, parse(predictions(RIGHT), VERSION), resamples=resamples)


def percent(interval: tuple[float, float]) -> tuple[float, float]:
    return 100.0 * interval[0], 100.0 * interval[1]


def test_the_paper_metrics_read_the_release_examples_alone_bit_for_bit() -> None:
    windows = make_windows(VERSION, None, RELEASE_SPLIT.index, [], every=False)
    read = windowed(version_result(), windows, VERSION, resamples=200)
    alone = score(RELEASE_SPLIT, realign(parse(predictions(RIGHT), VERSION), RELEASE_SPLIT),
                  resamples=200)
    assert read.metrics == alone.metrics and read.ci == alone.ci
    assert read.counts == alone.counts
    assert read.metrics["em"] == pytest.approx(100 * 4 / 6)
    assert read.counts["em"] == 6
    # The per-example codes stay the whole split's, in its order, as they are stored.
    assert read.n == len(VERSION) and read.outcomes.shape == (len(VERSION),)
    assert not any(is_window(name) for name in read.metrics)


def test_each_release_answered_is_a_window_with_its_count_and_wilson_interval() -> None:
    windows = make_windows(VERSION, None, RELEASE_SPLIT.index,
                           [("a", KEYS_A), ("b", KEYS_B)], every=True)
    read = windowed(version_result(), windows, VERSION, resamples=200)
    # By hand: A 1 of 2, B 0 of 2, all fresh 1 of 4.
    assert (read.metrics["fresh_a"], read.counts["fresh_a"]) == (50.0, 2)
    assert (read.metrics["fresh_b"], read.counts["fresh_b"]) == (0.0, 2)
    assert (read.metrics[FRESH], read.counts[FRESH]) == (25.0, 4)
    assert read.ci["fresh_a"] == pytest.approx(percent(wilson_interval(1, 2)))
    assert read.ci["fresh_b"] == pytest.approx(percent(wilson_interval(0, 2)))
    assert read.ci[FRESH] == pytest.approx(percent(wilson_interval(1, 4)))
    # Wilson at 1 of 4, by hand: (1 + z²/2 ± z sqrt(3/4 + z²/4)) / (4 + z²).
    z2 = 1.959963984540054 ** 2
    half = 1.959963984540054 * np.sqrt(0.75 + z2 / 4)
    assert read.ci[FRESH] == pytest.approx((100 * (1 + z2 / 2 - half) / (4 + z2),
                                            100 * (1 + z2 / 2 + half) / (4 + z2)))
    # The paper's metrics are the same as without windows.
    plain = windowed(version_result(), make_windows(VERSION, None, RELEASE_SPLIT.index, [],
                                                    every=False), VERSION, resamples=200)
    assert {k: v for k, v in read.metrics.items() if not is_window(k)} == plain.metrics


def test_fresh_needs_every_published_release_and_unanswered_windows_are_absent() -> None:
    windows = make_windows(VERSION, None, RELEASE_SPLIT.index, [("a", KEYS_A)], every=False)
    read = windowed(version_result(), windows, VERSION, resamples=0)
    assert read.metrics["fresh_a"] == 50.0 and read.ci["fresh_a"] is None  # no CIs asked
    assert FRESH not in read.metrics and "fresh_b" not in read.metrics


def test_a_release_board_reads_as_it_is() -> None:
    result = score(RELEASE_SPLIT, parse(jsonl({"key": e.key, "prediction": e.answers[0]}
                                              for e in RELEASE), RELEASE_SPLIT), resamples=50)
    windows = make_windows(RELEASE_SPLIT, None, RELEASE_SPLIT.index, [], every=False)
    assert windows.trivial and windowed(result, windows, RELEASE_SPLIT) is result


def test_provenance_counts_the_fresh_examples_given_only() -> None:
    """unreleased: the changed answers plus the fresh examples the submission answered."""
    changed = replace(RELEASE[0], answers=("a new answer",), any_answers=("a new answer",))
    version = GoldSplit("temp", "test", [changed, *RELEASE[1:], *FRESH_A, *FRESH_B])
    result = score(version, parse(predictions(RIGHT), version), resamples=100)
    mask = unreleased_mask(RELEASE_SPLIT, version)
    assert int(mask.sum()) == 5  # the changed one and the four fresh
    windows = make_windows(version, None, RELEASE_SPLIT.index, [("a", KEYS_A)], every=False)
    figures = provenance_values(version, result.outcomes, mask, given=windows.given(
        len(version)), seed=0, resamples=100)
    # Given: the 6 release examples and release A's 2 (not B's). Unreleased: the changed one
    # (wrong) and A's two (1 right): 1 of 3. Released: 5 release examples, 3 right.
    assert (figures["unreleased"].value, figures["unreleased"].count) == (
        pytest.approx(100 / 3), 3)
    assert (figures["released"].value, figures["released"].count) == (pytest.approx(60.0), 5)


def fresh_copies(examples: list[Example], year: str, start: int) -> list[Example]:
    """Examples like the given ones, asked as of a later year, under new keys."""
    return [replace(e, key=TRACK_INFO["temp"].key(start + i, {"date": year,
                                                             "date_type": "sampled_year"}),
                    id=start + i, context={"date": year, "date_type": "sampled_year"})
            for i, e in enumerate(examples)]


def test_error_figures_and_horizon_on_the_release_gold(release_gold: GoldSet) -> None:
    """On the real temp test split plus 10 fresh examples: the paper's error figures and
    horizon are those of the release's examples alone; each window has its own."""
    release = release_gold.get("temp", "test")
    added = fresh_copies(list(release.examples[:10]), "2031", 991_000_000)
    version = GoldSplit("temp", "test", [*release.examples, *added])
    gold = GoldSet([version, release_gold.get("curprev", "test")])
    tables = error_tables(gold, "temp", "test")
    right = {e.key for e in release.examples[::3]} | {e.key for e in added[:5]}
    data = jsonl({"key": e.key, "prediction": e.answers[0] if e.key in right else "wrong"}
                 for e in version.examples)
    result = score(version, parse(data, version), resamples=100, errors=tables)
    windows = make_windows(version, tables, release.index,
                           [("2031", [e.key for e in added])], every=True)
    read = windowed(result, windows, version, resamples=100)
    release_gold_set = GoldSet([release, release_gold.get("curprev", "test")])
    alone = score(release, realign(parse(data, version), release), resamples=100,
                  errors=error_tables(release_gold_set, "temp", "test"))
    paper = {k: v for k, v in read.metrics.items() if not k.startswith(FRESH)}
    assert paper == alone.metrics
    assert read.horizon == alone.horizon
    assert (read.metrics["fresh_2031"], read.counts["fresh_2031"]) == (50.0, 10)
    assert read.metrics["fresh_2031/unrelated_rate"] == 50.0  # "wrong" is no other answer
    assert "fresh_2031/horizon" in read.counts
    # The completion path (error figures from the codes) gives the same numbers.
    assert result.error_classes is not None
    figures, horizon = window_error_values(windows, version, tables, result.error_classes,
                                           resamples=100)
    for name, value in figures.items():
        assert read.metrics[name] == value.value, name
    assert horizon == alone.horizon


def test_windows_cover_only_what_the_split_still_holds() -> None:
    windows = make_windows(VERSION, None, RELEASE_SPLIT.index,
                           [("a", KEYS_A), ("gone", ["7|not|here"])], every=True)
    assert [part.name for part in windows.windows] == [FRESH, "fresh_a"]
    assert isinstance(windows, Windows)
    assert windows.given(len(VERSION)).tolist() == [True] * 8 + [False] * 2
