"""The lenient metrics' faster code gives what the code before it gave, bit for bit.

Every committed reference submission and every benchmark file (scripts/bench_files.py) is
scored through the scorer's lenient code and through the reference (lenient_reference.py,
the code as it was): the per-example codes and F1 values, and every metric and CI, must be
equal exactly. could_be's two conditions are checked to be necessary on the release's gold
answers, the benchmark files' predictions and random texts. No timing here: the speed is
measured by scripts/bench_scoring.py.
"""

from __future__ import annotations

import gzip
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lenient_reference import reference_lenient_codes

from benchmark import GoldSet, parse_predictions
from benchmark.equivalence import _DATE_WORDS, could_be, date_keys, number_keys
from benchmark.gold import GoldSplit
from benchmark.harness_files import parse_file
from benchmark.scoring import lenient_codes, outcome_codes, result_from_outcomes
from benchmark.tracks import track_info

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "submissions" / "reference"
sys.path.insert(0, str(ROOT / "scripts"))

from bench_files import bench_files  # noqa: E402

QA_REFERENCE_FILES = sorted(
    path for path in REFERENCE.glob("*.jsonl.gz")
    if not track_info(path.name.split(".")[1]).identification)


def same(a: float | tuple[float, float] | None, b: float | tuple[float, float] | None) -> bool:
    """Equal values, NaN equal to NaN (the CIs are compared as written)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def assert_scored_as_before(gold: GoldSplit, data: bytes, resamples: int = 2000) -> None:
    """Codes, F1 values, metrics and CIs of the new lenient code equal the reference's."""
    predictions = parse_file(data, gold)  # a language model's lm-eval samples file too
    outcomes = outcome_codes(gold, predictions)
    new = lenient_codes(gold, predictions, outcomes)
    old = reference_lenient_codes(gold, predictions, outcomes)
    assert np.array_equal(new[0], old[0])
    for new_f1, old_f1 in zip(new[1:], old[1:], strict=True):
        assert new_f1.dtype == old_f1.dtype == np.float64
        assert new_f1.tobytes() == old_f1.tobytes()  # bit for bit, -0.0 and all
    new_result = result_from_outcomes(gold, *new, resamples=resamples)
    old_result = result_from_outcomes(gold, *old, resamples=resamples)
    assert new_result.metrics.keys() == old_result.metrics.keys()
    for name in old_result.metrics:
        assert same(new_result.metrics[name], old_result.metrics[name]), name
        assert same(new_result.ci[name], old_result.ci[name]), name
        assert new_result.counts[name] == old_result.counts[name], name


@pytest.mark.parametrize("path", QA_REFERENCE_FILES, ids=lambda path: path.name)
def test_reference_submissions_score_as_before(release_gold: GoldSet, path: Path) -> None:
    """Every committed QA reference submission: the same codes, F1, metrics and CIs."""
    _, track, split = path.name.removesuffix(".jsonl.gz").split(".")
    assert_scored_as_before(release_gold.get(track, split), gzip.decompress(path.read_bytes()))


def test_bench_files_score_as_before(release_gold: GoldSet, release_dir: Path) -> None:
    """Every benchmark file (temp test): the same codes, F1, metrics and CIs."""
    gold = release_gold.get("temp", "test")
    files = bench_files(release_dir)
    assert set(files) == {"gold-or-alternate", "nn-train", "closed-book-llm", "empty-or-unknown"}
    for data in files.values():
        assert_scored_as_before(gold, data)


def assert_could_be_is_necessary(text: str) -> None:
    """could_be never rules out a date, range or number key that the parse would find."""
    maybe_date, runs = could_be(text)
    if date_keys(text, finer=True):
        assert maybe_date, text
    for key in number_keys(text):
        context = " ".join(key.split("|", 2)[1:])
        assert all(run in context for run in runs), (text, key)


def test_could_be_on_the_release_and_the_bench_files(release_gold: GoldSet,
                                                     release_dir: Path) -> None:
    """could_be's conditions hold on every gold answer and every benchmark prediction."""
    texts = {a for split in release_gold.splits.values() if not split.is_identification
             for example in split.examples for a in (*example.answers, *example.any_answers)}
    gold = release_gold.get("temp", "test")
    for data in bench_files(release_dir).values():
        answers = parse_predictions(data, gold).answers
        assert answers is not None
        texts.update(answers)
    for text in sorted(texts):
        assert_could_be_is_necessary(text)


_WORDS = sorted(_DATE_WORDS) + [
    "one", "twenty-one", "hundred", "million", "and", "a", "the", "people", "well-known",
    "u.s.", "x", "5th", "1,000", "1945", "3.5", "45", "ad", "b.c.", "café", "K", "-", ",",
    ".", "/", "'", "(", "\u2013", "\u00a0", "\u00e2\u20ac\u201c"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
       st.lists(st.sampled_from(["", " ", "  ", "-", ", "]), min_size=6, max_size=6))
def test_could_be_on_random_texts(words: list[str], separators: list[str]) -> None:
    """could_be's conditions hold on texts made of date, number and other words."""
    text = "".join(word + separator for word, separator in zip(words, separators, strict=False))
    assert_could_be_is_necessary(text)


def test_bench_files_are_deterministic_and_mostly_wrong(release_gold: GoldSet,
                                                        release_dir: Path) -> None:
    """The same bytes on every call; each file as wrong as its description says."""
    gold = release_gold.get("temp", "test")
    first, second = bench_files(release_dir), bench_files(release_dir)
    assert first == second
    expected = {"gold-or-alternate": (0.30, 0.40), "nn-train": (0.85, 0.95),
                "closed-book-llm": (0.65, 0.85), "empty-or-unknown": (0.85, 0.95)}
    for name, data in first.items():
        predictions = parse_predictions(data, gold)
        assert len(predictions.answers or ()) == len(gold)
        em = float(np.mean((outcome_codes(gold, predictions) & 1) > 0))
        low, high = expected[name]
        assert low <= 1 - em <= high, (name, 1 - em)
