"""The scorer equals the official evaluation logic on 20 generated prediction files.

The official SituatedQA evaluation (eval/temp_eval.py of the release's repository) reads each
prediction record in the official format, normalizes the record's gold answers inside the
loop, and counts EM as `in` over that list, per date type and against any_answer. It is
re-implemented below from its published text (not imported from scripts/): nested helpers,
no precomputation, no shared code with the benchmark.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmark import GoldSet, parse_predictions, score
from benchmark.gold import read_jsonl

FILES = 20


def official_normalize(s: str) -> str:
    """The official script's normalize_answer: NFD, lower, no punctuation, no articles."""
    s = unicodedata.normalize("NFD", s)

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def official_temp_eval(lines: list[str]) -> dict[str, float]:
    """The official temp evaluation: EM overall, per date type, and against any_answer."""
    counts: dict[str, Counter[bool]] = {
        "em": Counter(), "em_static": Counter(), "em_sampled": Counter(),
        "em_start": Counter(), "em_any": Counter()}
    for line in lines:
        pred = json.loads(line)
        gold_answers = [official_normalize(a) for a in pred["answer"]]
        match = official_normalize(pred["pred_answer"]) in gold_answers
        if pred["date_type"] == "orig":
            counts["em_static"][match] += 1
        elif pred["date_type"] == "start":
            counts["em_start"][match] += 1
        else:
            counts["em_sampled"][match] += 1
        counts["em"][match] += 1
        any_answers = [official_normalize(a) for a in pred["any_answer"]]
        counts["em_any"][official_normalize(pred["pred_answer"]) in any_answers] += 1
    return {name: 100 * c[True] / sum(c.values()) for name, c in counts.items()}


def disguise(answer: str, rng: np.random.Generator) -> str:
    """The answer as a system might write it: case, an article, punctuation, spacing, NFC."""
    forms = [answer.upper(), f"The {answer}", f"{answer}.", f"  {answer}  ",
             f"a {answer.lower()}!", unicodedata.normalize("NFC", answer), answer.title()]
    return forms[int(rng.integers(len(forms)))]


def prediction(record: dict[str, Any], rng: np.random.Generator, right: float) -> str:
    """A right, disguised, other-context, near-miss or wrong answer, by the file's mix."""
    draw = rng.random()
    answers = record["answer"]
    others = [a for a in record["any_answer"] if a not in answers]
    if draw < right / 2:
        return str(answers[int(rng.integers(len(answers)))])
    if draw < right:
        return disguise(answers[int(rng.integers(len(answers)))], rng)
    if draw < right + 0.2 and others:
        return disguise(others[int(rng.integers(len(others)))], rng)
    if draw < right + 0.3:
        return f"{answers[0]} and more"  # contains the answer, but is not it
    return ["", "unknown", "1999", "the", "-"][int(rng.integers(5))]


def generated_file(records: list[dict[str, Any]], seed: int) -> list[str]:
    """One official-format file (each release record plus pred_answer), its own mix."""
    rng = np.random.default_rng(seed)
    right = 0.05 + 0.9 * seed / (FILES - 1)
    return [json.dumps({**r, "pred_answer": prediction(r, rng, right)}, ensure_ascii=False)
            for r in records]


@pytest.fixture(scope="module")
def temp_records(release_dir: Path) -> list[dict[str, Any]]:
    """The temp test records of the release, in the official format."""
    return read_jsonl(release_dir / "qa_data" / "temp.test.jsonl")


def test_scorer_equals_the_official_logic_on_20_files(temp_records: list[dict[str, Any]],
                                                       release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "test")
    seen: set[float] = set()
    for seed in range(FILES):
        lines = generated_file(temp_records, seed)
        official = official_temp_eval(lines)
        data = ("\n".join(lines) + "\n").encode("utf-8")
        ours = score(gold, parse_predictions(data, gold, filename=f"file{seed}.jsonl"),
                     resamples=0).metrics
        assert {name: ours[name] for name in official} == official, f"file {seed}"
        seen.add(official["em"])
    # The files span the range: equality is not that of 20 identical scores.
    assert len(seen) == FILES
    assert min(seen) < 25 and max(seen) > 75


def test_the_official_logic_counts_disguised_answers(temp_records: list[dict[str, Any]]) -> None:
    # Hand-checked on one record of each date type: on the static one the gold answer in
    # capitals with an article and a full stop (right); on the start one an answer of another
    # date (right only against any_answer); on the sampled one "<gold> and more" (wrong).
    static = next(r for r in temp_records if r["date_type"] == "orig")
    start, other = next(
        (r, a) for r in temp_records if r["date_type"] == "start" for a in r["any_answer"]
        if official_normalize(a) not in {official_normalize(g) for g in r["answer"]})
    sampled = next(r for r in temp_records if r["date_type"].startswith("sampled"))
    lines = [json.dumps({**static, "pred_answer": f"The {static['answer'][0].upper()}."}),
             json.dumps({**start, "pred_answer": other}),
             json.dumps({**sampled, "pred_answer": f"{sampled['answer'][0]} and more"})]
    assert official_temp_eval(lines) == pytest.approx({
        "em": 100 / 3, "em_static": 100.0, "em_start": 0.0, "em_sampled": 0.0,
        "em_any": 200 / 3})
