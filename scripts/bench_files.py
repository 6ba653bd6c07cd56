"""The benchmark files: temp test prediction files that look like submissions, made alike
by every benchmark script (`bench_scoring.py`, `bench_server.py`, `bench_instructions.py`).

Each file is the release's 2,795 temp test records in the official format (each with a
`pred_answer`), built deterministically from the release with a fixed seed:

* `gold-or-alternate`: the gold answer on two examples in three, another context's answer
  of the same question on the third (the one file the benchmarks used before: its wrong
  answers are exactly the ones the gold side's alternate tables precompute);
* `nn-train`: the committed nearest-neighbour baseline's answers
  (`submissions/reference/nn-train.temp.test.jsonl.gz`, about 91% wrong: a training
  question's answer, arbitrary for the test question), in the release's full records;
* `closed-book-llm`: what a closed-book LLM writes: short answers, often wrong (another
  question's answer, a year or a date, a person, a decade, "I don't know"), and verbose ones
  ("The answer is X.", "As of 2019, X", a sentence around the answer), right or wrong;
* `empty-or-unknown`: mostly empty or "unknown"-like answers, the gold on a few.

`describe` gives what kind of wrong answers each holds; the benchmark scripts state the
fraction wrong from the scores.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SEED = 20211107
NN_TRAIN = ROOT / "submissions" / "reference" / "nn-train.temp.test.jsonl.gz"

#: What each file's wrong answers are, one line each.
DESCRIPTIONS: dict[str, str] = {
    "gold-or-alternate": "another context's answer of the same question (what the gold side's "
                         "tables precompute)",
    "nn-train": "a training question's answer (the nearest-neighbour baseline, committed)",
    "closed-book-llm": "another question's answer, a year, a date, a person, a decade, "
                       "'I don't know', or a sentence; a third of all answers verbose",
    "empty-or-unknown": "empty, 'unknown', 'I don't know', 'N/A', 'no answer'",
}

_PEOPLE = ("Barack Obama", "Donald Trump", "Queen Elizabeth II", "Taylor Swift",
           "LeBron James", "Elon Musk", "Angela Merkel", "Tom Brady", "Beyonce",
           "Cristiano Ronaldo")
_DECADES = ("the 1990s", "the 1980s", "the 2000s", "the 1970s", "the early 2010s")
_DONT_KNOW = ("I don't know", "unknown", "I'm not sure", "There is no answer.",
              "It is not known.")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_UNKNOWN = ("unknown", "Unknown", "I don't know", "N/A", "no answer", "none")


def release_records(release: Path, track: str = "temp", split: str = "test"
                    ) -> list[dict[str, Any]]:
    """The release's own records of a split (qa_data), as the official format carries them."""
    path = Path(release) / "qa_data" / f"{track}.{split}.jsonl"
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _file(records: list[dict[str, Any]], answers: list[str]) -> bytes:
    lines = [json.dumps({**record, "pred_answer": answer}, ensure_ascii=False)
             for record, answer in zip(records, answers, strict=True)]
    return ("\n".join(lines) + "\n").encode("utf-8")


def gold_or_alternate(records: list[dict[str, Any]]) -> bytes:
    """Gold on two in three, else another context's answer of the same question."""
    answers = []
    for i, record in enumerate(records):
        alternates = [a for a in record["any_answer"] if a not in record["answer"]]
        answers.append(record["answer"][0] if i % 3 else (alternates or ["unknown"])[0])
    return _file(records, answers)


def nn_train(records: list[dict[str, Any]]) -> bytes:
    """The committed nn-train baseline answers of temp test, in the release's full records
    (the committed file carries no gold fields, which the official logic reads)."""
    committed = [json.loads(line) for line in gzip.decompress(NN_TRAIN.read_bytes()).splitlines()
                 if line.strip()]
    fields = ("id", "question", "date", "date_type")
    if [tuple(r[f] for f in fields) for r in committed] != [
            tuple(r[f] for f in fields) for r in records]:
        raise ValueError(f"{NN_TRAIN} is not in the release's temp test order")
    return _file(records, [r["pred_answer"] for r in committed])


def closed_book_llm(records: list[dict[str, Any]], seed: int = SEED) -> bytes:
    """Short answers, often wrong, and verbose ones, as a closed-book LLM writes them."""
    rng = random.Random(seed)
    pool = sorted({a for record in records for a in record["answer"]})
    answers = []
    for record in records:
        gold = record["answer"][0] if record["answer"] else ""
        draw = rng.random()
        if draw < 0.38:
            core = gold
        elif draw < 0.60:
            core = rng.choice(pool)  # another question's answer
        elif draw < 0.70:
            core = str(rng.randint(1950, 2021))
        elif draw < 0.76:
            core = f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, {rng.randint(1950, 2021)}"
        elif draw < 0.84:
            core = rng.choice(_PEOPLE)
        elif draw < 0.90:
            core = rng.choice(_DECADES)
        else:
            answers.append(rng.choice(_DONT_KNOW))
            continue
        style = rng.random()
        if style < 0.12:
            answers.append(f"The answer is {core}.")
        elif style < 0.22:
            answers.append(f"As of {record['date']}, {core}")
        elif style < 0.30:
            answers.append(f"I believe it was {core}, according to {rng.choice(pool)}.")
        elif style < 0.34:
            answers.append(f"{record['question'].capitalize()}? {core}.")
        else:
            answers.append(core)
    return _file(records, answers)


def empty_or_unknown(records: list[dict[str, Any]], seed: int = SEED) -> bytes:
    """Mostly empty or "unknown"-like answers, the gold on about one in ten."""
    rng = random.Random(seed + 1)
    answers = []
    for record in records:
        draw = rng.random()
        if draw < 0.10 and record["answer"]:
            answers.append(record["answer"][0])
        elif draw < 0.55:
            answers.append("")
        else:
            answers.append(rng.choice(_UNKNOWN))
    return _file(records, answers)


BUILDERS: dict[str, Callable[[list[dict[str, Any]]], bytes]] = {
    "gold-or-alternate": gold_or_alternate,
    "nn-train": nn_train,
    "closed-book-llm": closed_book_llm,
    "empty-or-unknown": empty_or_unknown,
}


def bench_files(release: Path) -> dict[str, bytes]:
    """Every benchmark file of temp test (official format), by name, the same on every call."""
    records = release_records(release)
    return {name: build(records) for name, build in BUILDERS.items()}


def variant(data: bytes, number: int) -> bytes:
    """The file with one example's answer made a distinct wrong one ("no idea NUMBER", at
    example NUMBER modulo the file's length): distinct files of the same kind, for the
    server benchmarks (a team may not upload the same predictions twice on a board)."""
    lines = data.decode("utf-8").splitlines()
    position = number % len(lines)
    record = json.loads(lines[position])
    record["pred_answer"] = f"no idea {number}"
    lines[position] = json.dumps(record, ensure_ascii=False)
    return ("\n".join(lines) + "\n").encode("utf-8")


def upload_files(release: Path, count: int) -> list[bytes]:
    """`count` distinct temp test files, the benchmark files in turn (each a variant), the
    same ones on every call."""
    files = list(bench_files(release).values())
    return [variant(files[number % len(files)], number) for number in range(count)]
