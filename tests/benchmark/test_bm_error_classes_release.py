"""The error classes on the real release: the paper's metrics unchanged on every reference
submission, crafted files classified as written (their counts computed here, independently,
from the release files), and the `error-classes` command."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
from bm_helpers import jsonl, temp_example
from click.testing import CliRunner

from benchmark import GoldSet, GoldSplit, normalize_answer, parse_predictions, score
from benchmark import cli as cli_module
from benchmark import incremental as inc
from benchmark.cli import main
from benchmark.error_classes import build_error_tables, error_tables, possible_counts
from benchmark.tracks import TRACK_INFO
from benchmark.versions import realign

REFERENCE = Path(__file__).resolve().parents[2] / "submissions" / "reference"
#: The paper's metrics, CIs and counts of every reference submission as the scorer gave them
#: before the error classes existed (`python -m benchmark score --paper-only --json`, default
#: seed and resamples; JSON floats round-trip exactly).
BEFORE = json.loads((Path(__file__).resolve().parent / "reference_paper_scores.json").read_text())


def normalized(answers: Iterable[str]) -> set[str]:
    return {normalize_answer(a) for a in answers}


def read(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def span(text: str) -> tuple[date, date]:
    """The days a release date covers (written here, apart from the library's)."""
    if re.fullmatch(r"\d{4}", text):
        return date(int(text), 1, 1), date(int(text), 12, 31)
    day = datetime.strptime(text, "%B %d, %Y").date()
    return day, day


# --- the paper's metrics, bit for bit -----------------------------------------------------------


def reference_files() -> list[Path]:
    """The reference files whose scores were recorded before the error classes (files added
    since, such as the language models' samples files, have no earlier score to keep)."""
    return sorted(path for path in REFERENCE.glob("*.jsonl.gz") if path.name in BEFORE)


def test_there_are_reference_submissions_of_every_qa_track() -> None:
    tracks = {path.name.split(".")[1] for path in reference_files()}
    assert {"temp", "geo", "present", "curprev"} <= tracks


@pytest.mark.parametrize("path", reference_files(), ids=lambda path: path.name)
def test_paper_metrics_unchanged_on_reference_submissions(path: Path,
                                                          release_gold: GoldSet) -> None:
    _, track, split = path.name.split(".")[:3]
    gold = release_gold.get(track, split)
    predictions = parse_predictions(gzip.decompress(path.read_bytes()), gold,
                                    filename=path.name)
    plain = score(gold, predictions)
    before = BEFORE[path.name]
    assert set(before["metrics"]) <= set(plain.metrics)
    for name, value in before["metrics"].items():  # today's scorer, without error tables
        assert plain.metrics[name] == value, name
        assert plain.ci[name] == (tuple(before["ci"][name]) if before["ci"][name] else None)
        assert plain.counts[name] == before["counts"][name], name
    if TRACK_INFO[track].errors is None:
        with pytest.raises(ValueError, match="no error classes"):
            error_tables(release_gold, track, split)
        assert plain.error_classes is None and plain.horizon is None
        return
    full = score(gold, predictions, errors=error_tables(release_gold, track, split))
    # Every metric of today's score (the paper's and the lenient ones), its CI and count:
    # the same floats, bit for bit, and the same outcome codes.
    for name in plain.metrics:
        assert full.metrics[name] == plain.metrics[name], name
        assert full.ci[name] == plain.ci[name], name
        assert full.counts[name] == plain.counts[name], name
    assert (full.outcomes == plain.outcomes).all()
    assert {name: full.metrics[name] for name in before["metrics"]} == before["metrics"]
    assert set(full.metrics) - set(plain.metrics) == set(TRACK_INFO[track].error_metrics)
    # ... and score() without tables is today's score: nothing new in it.
    assert list(plain.metrics) == [*TRACK_INFO[track].metrics,
                                   *TRACK_INFO[track].lenient_metrics]


# --- crafted files, counted independently -----------------------------------------------------


def beyond_own_answers(prediction: str, record: dict[str, Any],
                       group: list[dict[str, Any]]) -> bool:
    """A normalized prediction that can be an error class: not empty, not one of the
    example's own answers, nor an alias of them (an answer some context of the question
    lists beside one of its own)."""
    own = normalized(record["answer"])
    if not prediction or prediction in own:
        return False
    aliases = own.union(*(normalized(c["answer"]) for c in group
                          if normalized(c["answer"]) & own))
    return prediction not in aliases


def test_temp_dev_earliest_answer_everywhere(release_dir: Path, release_gold: GoldSet) -> None:
    records = read(release_dir / "qa_data" / "temp.dev.jsonl")
    raw = {r["id"]: r for r in read(release_dir / "raw_data" / "temp.dev.jsonl")}
    questions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        questions[record["id"]].append(record)
    earliest = {nq_id: min(group, key=lambda r: span(r["date"])[0])["answer"][0]
                for nq_id, group in questions.items()}  # the first in file order of a tie
    outdated = 0
    for record in records:
        prediction = normalize_answer(earliest[record["id"]])
        own = normalized(record["answer"])
        group = questions[record["id"]]
        if not beyond_own_answers(prediction, record, group):
            continue
        ways = set()
        first, last = span(record["date"])
        for other in group:
            if other is not record and prediction in normalized(other["answer"]):
                if span(other["date"])[1] < first:
                    ways.add("earlier")
                elif span(other["date"])[0] > last:
                    ways.add("later")
        timeline = raw[record["id"]]
        if timeline["is_dependent"]:
            current = normalized(timeline["cur_answers"] or [])
            previous = normalized(timeline["prev_answers"] or [])
            if own & current and not own & previous and prediction in previous - current:
                ways.add("earlier")
        outdated += ways == {"earlier"}
    assert outdated > 500  # the file is far from trivial

    gold = release_gold.get("temp", "dev")
    data = jsonl({**r, "pred_answer": earliest[r["id"]]} for r in records)
    result = score(gold, parse_predictions(data, gold, filename="earliest.jsonl"), resamples=0,
                   errors=error_tables(release_gold, "temp", "dev"))
    assert result.metrics["outdated_rate"] == 100 * outdated / len(records)
    assert result.metrics["premature_rate"] == 0.0  # nothing is earlier than the earliest
    assert result.error_classes is not None
    assert int((result.error_classes == 1).sum()) == outdated


def test_geo_dev_us_answer_wherever_there_is_one(release_dir: Path,
                                                 release_gold: GoldSet) -> None:
    records = read(release_dir / "qa_data" / "geo.dev.jsonl")
    questions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        questions[record["id"]].append(record)

    def place(record: dict[str, Any]) -> str:
        return normalize_answer(record["location"])

    us_answer = {nq_id: next((r["answer"][0] for r in group if place(r) == "united states"),
                             "no answer here") for nq_id, group in questions.items()}
    us_default = 0
    for record in records:
        prediction = normalize_answer(us_answer[record["id"]])
        group = questions[record["id"]]
        carriers = [c for c in group
                    if c is not record and prediction in normalized(c["answer"])]
        if not beyond_own_answers(prediction, record, group) or not carriers or any(
                place(c) == place(record) for c in carriers):
            continue
        us_default += all(place(c) == "united states" for c in carriers)
    assert us_default > 150

    gold = release_gold.get("geo", "dev")
    data = jsonl({"id": r["id"], "location": r["location"],
                  "pred_answer": us_answer[r["id"]]} for r in records)
    result = score(gold, parse_predictions(data, gold, filename="us.jsonl"), resamples=0,
                   errors=error_tables(release_gold, "geo", "dev"))
    assert result.metrics["us_default_rate"] == 100 * us_default / len(records)
    assert result.error_classes is not None
    assert int((result.error_classes == 5).sum()) == us_default
    assert result.metrics["us_default_rate_us"] == 0.0  # a US location is never US default


# --- the error-classes command -----------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, release_gold: GoldSet,
        release_dir: Path) -> CliRunner:
    monkeypatch.setenv("SITUATEDQA_DATA", str(release_dir))
    monkeypatch.setattr(cli_module, "import_release", lambda *a, **k: release_gold)
    return CliRunner()


def test_error_classes_command(cli: CliRunner, release_gold: GoldSet) -> None:
    result = cli.invoke(main, ["error-classes", "--track", "temp", "--split", "dev", "--json"])
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)
    gold = release_gold.get("temp", "dev")
    assert counts == possible_counts(gold, error_tables(release_gold, "temp", "dev"))
    assert counts["all"]["examples"] == 3423 and counts["static"]["with_other_answers"] == 0
    table = cli.invoke(main, ["error-classes", "--track", "geo", "--split", "test"])
    assert table.exit_code == 0, table.output
    assert "geo / test" in table.output and "us_default" in table.output
    bad = cli.invoke(main, ["error-classes", "--track", "temp-id", "--split", "dev"])
    assert bad.exit_code != 0


def test_score_table_shows_error_classes_apart(cli: CliRunner, release_gold: GoldSet,
                                               tmp_path: Path) -> None:
    gold = release_gold.get("curprev", "test")
    # Every current answer swapped for the previous one (and back): outdated and premature.
    other = {e.key: next(iter(set(e.any_answers) - set(e.answers)), "none") for e in gold}
    file = tmp_path / "swapped.jsonl"
    file.write_bytes(jsonl({"key": key, "prediction": text} for key, text in other.items()))
    table = cli.invoke(main, ["score", "--track", "curprev", "--split", "test", str(file),
                              "--resamples", "50"])
    assert table.exit_code == 0, table.output
    paper, _, rest = table.output.partition("Not in the paper (lenient")
    assert "Outdated" not in paper and "outdated" not in paper
    lenient, _, errors = rest.partition("Not in the paper (situated error classes")
    assert "Outdated" in errors and "Premature" in errors and "% of errors" in errors
    row = next(line for line in errors.splitlines() if line.startswith("Current"))
    assert row.split()[1] == "Outdated"
    assert "Knowledge horizon" not in table.output  # curprev contexts are not dated
    paper_only = cli.invoke(main, ["score", "--track", "curprev", "--split", "test", str(file),
                                   "--resamples", "0", "--paper-only", "--json"])
    assert not any("rate" in name for name in json.loads(paper_only.stdout)["metrics"])


def test_metric_card_counts_are_the_command_s(release_gold: GoldSet) -> None:
    """The metric card's table of possible classes states what `error-classes` prints."""
    card = (Path(__file__).resolve().parents[2] / "benchmark" / "README.md").read_text()
    rows = {}
    for line in card.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) > 3 and " / " in cells[0] and cells[1].startswith("all"):
            rows[cells[0]] = [cell.split(" ")[0].replace(",", "") for cell in cells[2:]]
    assert set(rows) == {f"{t} / {s}" for t in ("temp", "geo", "present", "curprev")
                         for s in ("dev", "test")}
    for name, cells in rows.items():
        track, split = name.split(" / ")
        counts = possible_counts(release_gold.get(track, split),
                                 error_tables(release_gold, track, split))["all"]
        stated = [int(cell) for cell in cells if cell != "-"]
        assert stated == list(counts.values()), name


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rescore_with_error_classes_equals_score_on_updated_release(
        seed: int, release_gold: GoldSet) -> None:
    """Random gold updates of temp dev (answers set to a sibling context's or a new one,
    examples retired and added): the incremental rescore equals a full score, bit for bit."""
    rng = random.Random(seed)
    parent = release_gold.get("temp", "dev")
    companion = release_gold.get("curprev", "dev")
    by_id: dict[int, list[int]] = defaultdict(list)
    for position, example in enumerate(parent.examples):
        by_id[example.id].append(position)
    texts = [rng.choice([*e.any_answers, "no idea"]) for e in parent.examples]
    predictions = parse_predictions(jsonl({"key": e.key, "prediction": t}
                                          for e, t in zip(parent.examples, texts, strict=True)),
                                    parent, filename="random.jsonl")
    examples = list(parent.examples)
    for position in rng.sample(range(len(examples)), 40):
        example = examples[position]
        sibling = examples[rng.choice(by_id[example.id])]
        answers = sibling.answers if rng.random() < 0.5 else ("a new answer",)
        examples[position] = replace(example, answers=answers,
                                     any_answers=tuple({*example.any_answers, *answers}))
    for position in sorted(rng.sample(range(len(examples)), 10), reverse=True):
        del examples[position]
    examples += [temp_example(10**6 + k, "2020", "start", (f"added {k}",)) for k in range(5)]
    new = GoldSplit("temp", "dev", examples)
    tables = (build_error_tables(parent, companion), build_error_tables(new, companion))
    first = score(parent, predictions, errors=tables[0])
    assert first.error_classes is not None and first.f1 is not None
    assert first.f1_any is not None
    stored = inc.decode_predictions(inc.encode_predictions(predictions, parent))
    result = inc.rescore(parent, new, first.outcomes, stored, parent.keys,
                         (first.f1, first.f1_any), errors=tables,
                         parent_error_classes=first.error_classes)
    full = score(new, realign(predictions, new), errors=tables[1])
    assert result.error_classes is not None and full.error_classes is not None
    assert (result.error_classes == full.error_classes).all()
    assert result.metrics == full.metrics and result.ci == full.ci
    assert result.counts == full.counts and result.horizon == full.horizon


# --- the US answer beside US default, and the outdated bound: the metric card's figures ------


def test_the_us_spellings_of_the_release(release_dir: Path) -> None:
    """The ways the release writes the US as a location, counted on geo dev, are the ones
    the US-answer figure reads; every declared variant is written somewhere in it."""
    from collections import Counter

    from benchmark.tracks import US_ANSWER_LOCATIONS, is_us_answer_location

    written: Counter[str] = Counter()
    for split in ("train", "dev", "test"):
        for record in read(release_dir / "qa_data" / f"geo.{split}.jsonl"):
            written[normalize_answer(record["location"])] += split == "dev"
    assert set(US_ANSWER_LOCATIONS) <= set(written)
    dev = Counter(r["location"] for r in read(release_dir / "qa_data" / "geo.dev.jsonl")
                  if is_us_answer_location(r["location"]))
    assert dev == {"United States": 91, "us": 27, "the united states": 13, "USA": 12,
                   "america": 10, "usa": 7, "United states": 5, "united states": 2,
                   "US ": 1, "US": 1, "United States of America": 1, "United States ": 1}


def test_geo_dev_us_answer_counted_apart(release_dir: Path, release_gold: GoldSet) -> None:
    """Every geo dev example answered with a US record's answer of its question where one
    exists (any spelling of the US): US answer counted here from the records, beside US
    default, which it exceeds."""
    us_names = {"united states", "us", "usa", "america", "united states of america",
                "united state of america"}  # written here, apart from the library's
    records = read(release_dir / "qa_data" / "geo.dev.jsonl")
    questions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        questions[record["id"]].append(record)

    def at_us(record: dict[str, Any]) -> bool:
        return normalize_answer(record["location"]) in us_names

    answer = {nq_id: next((r["answer"][0] for r in group if at_us(r)), "no answer here")
              for nq_id, group in questions.items()}
    counted = hits = wrong = 0
    for record in records:
        if at_us(record):
            continue
        counted += 1
        prediction = normalize_answer(answer[record["id"]])
        if prediction in normalized(record["answer"]):
            continue
        wrong += 1
        hits += any(prediction in normalized(r["answer"]) - {""}
                    for r in questions[record["id"]] if at_us(r))
    assert hits > 300
    gold = release_gold.get("geo", "dev")
    data = jsonl({"id": r["id"], "location": r["location"], "pred_answer": answer[r["id"]]}
                 for r in records)
    result = score(gold, parse_predictions(data, gold, filename="us.jsonl"), resamples=0,
                   errors=error_tables(release_gold, "geo", "dev"))
    assert result.metrics["us_answer_rate"] == 100 * hits / counted
    assert result.counts["us_answer_rate"] == counted
    assert result.metrics["us_answer_share"] == 100 * hits / wrong
    us_default = result.metrics["us_default_rate"]
    assert us_default is not None and result.metrics["us_answer_rate"] > us_default
    assert result.metrics["us_answer_rate_us"] is None  # every US example is outside


def test_the_card_s_outdated_bound_is_the_command_s(cli: CliRunner) -> None:
    from benchmark import metric_card

    command = (f"python -m benchmark error-classes --track temp --split "
               f"{metric_card.OUTDATED_BOUND_SPLIT} --earlier")
    assert command.replace(" ", "") in metric_card.OUTDATED_BOUND.replace(" ", "")
    result = cli.invoke(main, ["error-classes", "--track", "temp", "--split",
                               metric_card.OUTDATED_BOUND_SPLIT, "--earlier", "--json"])
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["all"]
    assert {name: counts[name] for name in metric_card.OUTDATED_BOUND_COUNTS} == (
        metric_card.OUTDATED_BOUND_COUNTS)
    table = cli.invoke(main, ["error-classes", "--track", "temp", "--split", "dev",
                              "--earlier"])
    assert table.exit_code == 0 and "12.4" in table.output
    refused = cli.invoke(main, ["error-classes", "--track", "geo", "--split", "dev",
                                "--earlier"])
    assert refused.exit_code != 0 and "no dated contexts" in refused.output
