"""Issue 10: the upload path's shortcuts keep every result the plain path gives."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark import GoldSet, Predictions, equivalence, score
from benchmark.normalize import normalize_many
from benchmark.scoring import warm_lenient
from situatedqa_server.services import duplicates

#: Any text, lone surrogates and control characters included.
TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30)


def stdlib_canonical(content: dict[str, object]) -> bytes:
    """The canonical JSON as the first digests were computed (stdlib json)."""
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(answers=st.lists(TEXT, max_size=8), track=st.sampled_from(["temp", "geo"]))
def test_canonical_json_is_the_stdlib_bytes(answers: list[str], track: str) -> None:
    content: dict[str, object] = {"track": track, "split": "dev", "answers": answers}
    assert duplicates.canonical_json(content) == stdlib_canonical(content)


def test_digest_is_the_sha256_of_the_normalized_answers() -> None:
    answers = ("The Beatles!", "  1945 ", "Paris, France")
    predictions = Predictions(track="temp", split="dev", format="jsonl", answers=answers)
    normalized = ["beatles", "1945", "paris france"]
    expected = hashlib.sha256(stdlib_canonical(
        {"track": "temp", "split": "dev", "answers": normalized})).hexdigest()
    assert normalize_many(answers) == normalized
    assert duplicates.digest(predictions) == expected
    # The scorer's normalized answers are computed once and shared with the digest.
    assert predictions.normalized_answers is predictions.normalized_answers


def test_warm_lenient_builds_what_scoring_reads(release_gold: GoldSet,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's warm-up parses the lenient metrics' gold: its first uploads parse nothing."""
    gold = release_gold.get("temp", "dev")
    warm_lenient(gold)

    def no_build(*_: object) -> None:
        raise AssertionError("the gold forms were built again")

    monkeypatch.setattr(equivalence.GoldForms, "__init__", no_build)
    answers = tuple(e.any_answers[-1] if e.any_answers else "" for e in gold.examples)
    predictions = Predictions(track="temp", split="dev", format="jsonl", answers=answers)
    result = score(gold, predictions, resamples=0)
    assert result.metrics["em_any"] == 100.0 and result.metrics["em_equiv_any"] == 100.0
