"""nn-train: the answer of the nearest training question, within a track and context type."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from baselines_helpers import invoke, read
from click.testing import CliRunner

from baselines import nn_train
from baselines.release import QAItem, load_qa_items
from benchmark.cli import main as benchmark_main

pytest.importorskip("sklearn")

REAL = os.environ.get("SITUATEDQA_DATA")
HAVE_RELEASE = bool(REAL) and (Path(REAL or ".") / "qa_data").is_dir()
EMBEDDERS = ["tfidf"] + (["minilm"] if nn_train.have_torch() else [])


def item(key: int, query: str, answer: str = "", which: str | None = None) -> QAItem:
    """A hand-made QA item (curprev items carry their side)."""
    record = {"id": key, **({"which": which} if which else {})}
    return QAItem((key,), record, query, (answer,) if answer else ())


def make(track: str, train: list[QAItem], embedder: str) -> nn_train.NearestTrain:
    """A NearestTrain on hand-made items, MiniLM from the packaged weights."""
    minilm = None
    if embedder == "minilm":
        from baselines.devices import cpu

        minilm = nn_train.MiniLMEncoder(nn_train.minilm_path(), cpu(), batch_size=8)
    return nn_train.NearestTrain(track, nn_train.train_pools(train, track), embedder, minilm)


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_handmade_pairs_get_their_neighbours_answers(embedder: str) -> None:
    train = [item(1, "who is the president of the usa as of 2018", "Trump"),
             item(2, "who is the president of the usa as of 2022", "Biden"),
             item(3, "what is the currency in india", "rupee"),
             item(4, "what is the capital of france", "Paris"),
             item(5, "who painted the mona lisa", "")]  # no answer: never a neighbour
    test = [item(11, "who was the president of the usa as of 2022"),
            item(12, "which currency is used in india"),
            item(13, "what is the capital city of france")]
    assert make("temp", train, embedder).predict(test) == ["Biden", "rupee", "Paris"]
    # the unanswered training question is not in the pool at all
    assert "who painted the mona lisa" not in make("temp", train, embedder).pools["temp"].queries


@pytest.mark.parametrize("embedder", EMBEDDERS)
def test_curprev_matches_within_the_same_side(embedder: str) -> None:
    train = [item(1, "who is the president of the usa", "biden", "current"),
             item(2, "previously who is the president of the usa", "trump", "previous"),
             item(3, "who won the last world cup", "argentina", "current")]
    test = [item(11, "previously who is the president of the usa", which="previous"),
            item(12, "who won the last world cup", which="previous"),
            item(13, "who is the president of the usa", which="current")]
    # the "previous" side has one training question: both previous items get its answer
    assert make("curprev", train, embedder).predict(test) == ["trump", "trump", "biden"]


def test_identical_training_questions_resolve_to_the_first() -> None:
    train = [item(1, "who is the chancellor of germany", "merkel"),
             item(2, "who is the chancellor of germany", "scholz")]
    nearest = make("temp", train, "tfidf")
    hit = nearest.neighbours([item(9, "who is the chancellor of germany")])[0]
    assert hit is not None and hit[:2] == ("temp", 0) and hit[2] == pytest.approx(1.0)


def test_runner_on_the_synthetic_release(tmp_path: Path, release_dir: Path) -> None:
    # train and test of the synthetic release ask the same questions at the same dates
    out = tmp_path / "qm.jsonl"
    invoke("run", "nn-train", "--track", "temp", "--setting", "query-modified", "--embedder",
           "tfidf", "--data", release_dir, "-o", out)
    gold = {(r.key): r.answers[0] for r in load_qa_items(release_dir, "temp", "test",
                                                         "query-modified")}
    records = read(out)
    assert [r["pred_answer"] for r in records] == [
        gold[(r["id"], r["date"], r["date_type"])] for r in records]
    # the question alone: every date of a question gets its first training row's answer
    out = tmp_path / "plain.jsonl"
    invoke("run", "nn-train", "--track", "temp", "--embedder", "tfidf", "--data", release_dir,
           "-o", out)
    assert [r["pred_answer"] for r in read(out)] == ["trump"] * 3 + ["modi"] * 3 + [
        "merkel"] * 3
    meta = json.loads((tmp_path / "plain.jsonl.meta.json").read_text())
    assert meta["runner"] == "nn-train" and meta["settings"]["embedder"] == "tfidf"
    assert meta["fingerprints"]["data_train"]["sha256"]


def test_runner_refuses_the_finetuned_setting(tmp_path: Path, release_dir: Path) -> None:
    from baselines.cli import main

    result = CliRunner().invoke(main, ["run", "nn-train", "--track", "geo", "--setting",
                                       "finetuned", "--data", str(release_dir), "-o",
                                       str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "nothing to fine-tune" in result.output


@pytest.mark.skipif(not HAVE_RELEASE, reason="SITUATEDQA_DATA is not a release folder here")
def test_real_release_end_to_end_scores_in_full(tmp_path: Path) -> None:
    out = tmp_path / "nn.geo.test.jsonl"
    invoke("run", "nn-train", "--track", "geo", "--split", "test", "--setting",
           "query-modified", "--embedder", "tfidf", "--batch-size", 128, "-o", out)
    assert len(read(out)) == 506
    result = CliRunner().invoke(benchmark_main, ["score", "--track", "geo", "--split", "test",
                                                 "--resamples", "0", "--json", str(out)])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output)
    assert scored["n"] == 506
    # memorised answers get a few right, far below the paper's QA models
    assert 0 < scored["metrics"]["em"] < 20


@pytest.mark.skipif(not HAVE_RELEASE, reason="SITUATEDQA_DATA is not a release folder here")
@pytest.mark.skipif(not nn_train.have_torch(), reason="MiniLM needs torch")
def test_real_neighbours_are_the_questions_a_reader_would_pick() -> None:
    data = Path(REAL or "")
    train = load_qa_items(data, "geo", "train", "query-modified")
    nearest = make("geo", list(train), "minilm")
    pool = nearest.pools["geo"]
    # test question (query-modified) -> the training question a reader would choose
    chosen = {
        "when did the first fleet arive in australia":
            "when did the first fleet get in australia",
        "who was the first executive president in united states":
            "what is the name of the first president in america",
        "who is the prime minister in india": "who who is the prime minister in india",
        "when did seat belts become law in hawaii": "when did seat belts become mandatory in us",
    }
    hits = nearest.neighbours([item(i, q) for i, q in enumerate(chosen)])
    found = {q: pool.queries[hit[1]] for q, hit in zip(chosen, hits, strict=True) if hit}
    assert found == chosen
