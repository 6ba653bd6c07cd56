"""The example file of every format in submissions/examples/ is what the docs say it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark import GoldSet, GoldSplit, ValidationError, parse_predictions

EXAMPLES = Path(__file__).resolve().parents[2] / "submissions" / "examples"
FORMATS = {"temp.dev.records.jsonl": "jsonl", "temp.dev.compact.jsonl": "jsonl",
           "temp.dev.object.json": "json-map", "temp.dev.csv": "csv",
           "present.dev.jsonl": "jsonl", "curprev.dev.jsonl": "jsonl",
           "temp-id.dev.jsonl": "jsonl"}


def test_every_example_file_is_listed() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.name != "README.md") == sorted(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_example_answers_the_first_examples_of_its_split(name: str,
                                                         release_gold: GoldSet) -> None:
    track = name.split(".")[0]
    gold = release_gold.get(track, "dev")
    data = (EXAMPLES / name).read_bytes()
    first = GoldSplit(track, "dev", gold.examples[:3])
    predictions = parse_predictions(data, first, filename=name)
    assert predictions.format == FORMATS[name] and len(predictions.keys) == 3
    with pytest.raises(ValidationError) as rejected:  # a shape, not a whole submission
        parse_predictions(data, gold, filename=name)
    assert any("no prediction" in p.message for p in rejected.value.problems)
