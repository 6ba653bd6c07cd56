"""Helpers for the benchmark-core tests: tiny hand-built gold splits and file writers.

Imported by the test modules (`from bm_helpers import ...`); the fixtures are re-exported by
conftest.py. The real-release fixtures (`release_dir`, `release_gold`) come from tests/conftest.py.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from benchmark import Example, GoldSplit, Predictions, parse_predictions, score
from benchmark.gold import curprev_key, geo_key, question_key, temp_key
from benchmark.scoring import ScoreResult


def jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    """Records as JSON Lines bytes."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def csv_bytes(header: tuple[str, str], rows: Iterable[tuple[str, Any]]) -> bytes:
    """A two-column CSV file with a header."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def gz(data: bytes) -> bytes:
    """gzip-compress (mtime fixed so the bytes are reproducible)."""
    return gzip.compress(data, mtime=0)


def parse(data: bytes, gold: GoldSplit, **kwargs: Any) -> Predictions:
    """parse_predictions with a fixed file name."""
    return parse_predictions(data, gold, filename="preds.jsonl", **kwargs)


def score_bytes(data: bytes, gold: GoldSplit, resamples: int = 0,
                lenient: bool = False) -> ScoreResult:
    """Parse and score a file (no CIs unless asked; the paper's metrics unless lenient)."""
    return score(gold, parse(data, gold), resamples=resamples, lenient=lenient)


# --- tiny gold splits, built directly from Example objects ----------------------------------


def temp_example(nq_id: int, date: str, date_type: str, answers: tuple[str, ...],
                 any_answers: tuple[str, ...] = (), question: str = "q?") -> Example:
    partition = {"orig": "static", "start": "start"}.get(date_type, "sampled")
    return Example(
        key=temp_key(nq_id, date, date_type), id=nq_id, question=question,
        context={"date": date, "date_type": date_type}, answers=answers,
        any_answers=any_answers or answers, partitions=(partition,))


def geo_example(nq_id: int, location: str, answers: tuple[str, ...],
                any_answers: tuple[str, ...] = ()) -> Example:
    from benchmark.gold import geo_partitions

    partition, group = geo_partitions(location)
    return Example(
        key=geo_key(nq_id, location), id=nq_id, question="q?", context={"location": location},
        answers=answers, any_answers=any_answers or answers,
        partitions=(partition,) if group == "rare" else (partition, group))


def id_example(nq_id: int, label: bool, source: str | None = None) -> Example:
    return Example(key=question_key(nq_id), id=nq_id, question=f"question {nq_id}?",
                   partitions=("dependent" if label else "independent",), label=label,
                   source=source)


def present_example(nq_id: int, partition: str, answers: tuple[str, ...]) -> Example:
    return Example(key=question_key(nq_id), id=nq_id, question="q?", answers=answers,
                   any_answers=answers, partitions=(partition,))


def curprev_example(nq_id: int, which: str, answers: tuple[str, ...],
                    other: tuple[str, ...] = ()) -> Example:
    return Example(key=curprev_key(nq_id, which), id=nq_id, question="q?",
                   context={"which": which}, answers=answers,
                   any_answers=answers + other, partitions=(which,))


@pytest.fixture
def tiny_temp() -> GoldSplit:
    """Four temp examples: one Static, two Sampled, one Start; (id, date) repeats once."""
    return GoldSplit("temp", "test", [
        temp_example(1, "2019", "orig", ("Beyoncé",), ("Beyoncé", "Rihanna")),
        temp_example(2, "2010", "sampled_year", ("The Beatles",), ("The Beatles", "Oasis")),
        temp_example(2, "2010", "start", ("U.S.A.",), ("U.S.A.", "Canada")),
        temp_example(3, "March 3, 2015", "sampled_date", ("New  York",), ("New  York", "Paris")),
    ])


@pytest.fixture
def tiny_geo() -> GoldSplit:
    """Five geo examples: US, India, Other common (lower-cased 'usa'), two Rare."""
    return GoldSplit("geo", "test", [
        geo_example(10, "United States", ("Washington",), ("Washington", "Delhi")),
        geo_example(11, "India", ("Delhi",), ("Delhi", "Washington")),
        geo_example(12, "usa", ("Joe Biden",), ("Joe Biden", "Modi")),
        geo_example(12, "Peru", ("Pedro Castillo",), ("Pedro Castillo", "Joe Biden")),
        geo_example(13, "Ghana", ("cedi",), ("cedi", "naira")),
    ])


@pytest.fixture
def tiny_id() -> GoldSplit:
    """Ten temp-id questions: 5 dependent, 5 not; two sources."""
    labels = [True, True, True, True, True, False, False, False, False, False]
    sources = ["nq_passage.open", "nq_passage.open", "webq", "webq", "webq",
               "nq_passage.open", "webq", "webq", "webq", "webq"]
    return GoldSplit("temp-id", "test", [
        id_example(100 + i, label, source) for i, (label, source) in
        enumerate(zip(labels, sources, strict=True))])


@pytest.fixture
def tiny_geo_id() -> GoldSplit:
    return GoldSplit("geo-id", "test", [id_example(200 + i, i % 2 == 0) for i in range(4)])


@pytest.fixture
def tiny_present() -> GoldSplit:
    return GoldSplit("present", "test", [
        present_example(30, "stable", ("Paris",)),
        present_example(31, "stable", ("London",)),
        present_example(32, "updated", ("Joe Biden",)),
    ])


@pytest.fixture
def tiny_curprev() -> GoldSplit:
    return GoldSplit("curprev", "test", [
        curprev_example(40, "current", ("Joe Biden",), ("Donald Trump",)),
        curprev_example(40, "previous", ("Donald Trump",), ("Joe Biden",)),
        curprev_example(41, "current", ("Olaf Scholz",), ("Angela Merkel",)),
    ])


@pytest.fixture
def tiny_golds(tiny_temp: GoldSplit, tiny_geo: GoldSplit, tiny_id: GoldSplit,
               tiny_geo_id: GoldSplit, tiny_present: GoldSplit,
               tiny_curprev: GoldSplit) -> dict[str, GoldSplit]:
    """One tiny gold split per track."""
    return {"temp": tiny_temp, "geo": tiny_geo, "temp-id": tiny_id, "geo-id": tiny_geo_id,
            "present": tiny_present, "curprev": tiny_curprev}


def official_records(gold: GoldSplit, answer: Callable[[Example], Any]) -> list[dict[str, Any]]:
    """Official-format records: id plus the context fields plus pred_answer."""
    return [{"id": e.id, "question": e.question, **e.context, "pred_answer": answer(e)}
            for e in gold.examples]
