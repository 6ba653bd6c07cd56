"""Fine-tuning: one epoch on a handful of synthetic examples, then run the finetuned setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")

from baselines_helpers import dpr_args, invoke, read

from baselines import bart
from baselines.finetune import (
    FinetuneConfig,
    find_sublist,
    finetune_bart,
    reader_examples,
    train_epochs,
)
from baselines.release import QAItem


def test_train_epochs_keeps_the_best_dev_epoch() -> None:
    dev_ems = iter([5.0, 10.0, 30.0, 20.0])  # before training, then epochs 1-3
    saved: list[int] = []
    steps: list[list[int]] = []

    def step(batch: list[int]) -> float:
        steps.append(batch)
        return float(len(steps))

    info = train_epochs(FinetuneConfig("temp", epochs=3, batch_size=2), 3, step,
                        lambda: next(dev_ems), lambda found: saved.append(found["best_epoch"]))
    assert (info["best_epoch"], info["dev_em"], info["start_dev_em"]) == (2, 30.0, 5.0)
    assert saved == [1, 2]  # epoch 3 (20 < 30) does not overwrite the best checkpoint
    assert len(steps) == 6 and all(sorted(sum(steps[i:i + 2], [])) == [0, 1, 2]
                                   for i in (0, 2, 4))
    assert [h["loss"] for h in info["history"]] == [1.5, 3.5, 5.5]


def test_tiny_bart_learns_a_handful_of_pairs(tmp_path: Path,
                                             bart_models: dict[str, Path]) -> None:
    model, tok = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    pairs = [("who won the cup", "France"), ("capital of india", "delhi"),
             ("currency of usa", "dollar"), ("chancellor of germany", "scholz")]
    items = [QAItem((i,), {"id": i}, q, (a,)) for i, (q, a) in enumerate(pairs)]
    cfg = FinetuneConfig("temp", epochs=25, batch_size=4, lr=2e-2, predict_batch_size=4)
    info = finetune_bart(model, tok, items, items, cfg, tmp_path / "ft", {})
    losses = [h["loss"] for h in info["history"]]
    assert info["start_dev_em"] == 0.0 and info["dev_em"] == 100.0
    assert losses[-1] < losses[0] / 5
    # the saved checkpoint answers with the same preprocessing as training
    predictor = bart.BartPredictor.load(bart.resolve_source(tmp_path / "ft", None, None))
    assert predictor.predict(items) == ["france", "delhi", "dollar", "scholz"]


@pytest.mark.parametrize("context", ["temp", "previous"])
def test_finetune_bart_then_run(tmp_path: Path, release_dir: Path, bart_models: dict[str, Path],
                                context: str) -> None:
    out_dir = tmp_path / "ft"
    result = invoke("finetune", "bart", "--context", context, "--data", release_dir,
                    "--output-dir", out_dir, "--epochs", 1, "--batch-size", 4,
                    "--model", bart_models["model"], "--limit-dev", 3)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    marker = json.loads((out_dir / "finetune.json").read_text())
    assert summary["dev_em"] == round(marker["dev_em"], 2)
    assert [h["epoch"] for h in marker["history"]] == [1]
    assert marker["config"]["context"] == context and marker["config"]["lr"] == 1e-5
    # the checkpoint records the preprocessing it was trained with (the same as prediction)
    assert marker["preprocessing"] == bart.PREPROCESSING
    track = "temp" if context == "temp" else "curprev"
    pred = tmp_path / "pred.jsonl"
    invoke("run", "bart", "--track", track, "--setting", "finetuned", "--data", release_dir,
           "-o", pred, "--model", out_dir)
    assert read(pred)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["setting"] == "finetuned" and meta["finetune"]["config"]["context"] == context


def test_finetune_bart_from_state_dict(tmp_path: Path, release_dir: Path,
                                       bart_models: dict[str, Path]) -> None:
    invoke("finetune", "bart", "--context", "geo", "--data", release_dir, "--output-dir",
           tmp_path / "ft", "--epochs", 1, "--model", bart_models["pt"], "--config",
           bart_models["config"], "--limit-train", 4, "--limit-dev", 2)
    assert (tmp_path / "ft" / "config.json").is_file()


@pytest.mark.parametrize("context", ["geo", "current"])
def test_finetune_reader_then_run(tmp_path: Path, release_dir: Path,
                                  dpr_models: dict[str, Path], corpus: Path,
                                  context: str) -> None:
    out_dir = tmp_path / "reader"
    invoke("finetune", "dpr-reader", "--context", context, "--data", release_dir,
           "--output-dir", out_dir, "--epochs", 1, "--batch-size", 2, "--index", "numpy",
           *dpr_args(dpr_models, corpus))
    marker = json.loads((out_dir / "finetune.json").read_text())
    assert marker["model"] == "dpr-reader" and marker["train_examples"] > 0
    args = dpr_args(dpr_models, corpus)
    args[args.index("--reader") + 1] = out_dir
    track = "geo" if context == "geo" else "curprev"
    pred = tmp_path / "pred.jsonl"
    invoke("run", "dpr", "--track", track, "--setting", "finetuned", "--data", release_dir,
           "-o", pred, "--index", "numpy", *args)
    assert read(pred)


def test_reader_examples_use_normalized_containment() -> None:
    items = [QAItem((1,), {}, "q1", ("The Rupee",)), QAItem((2,), {}, "q2", ("nothing",))]
    texts = ["the euro", "currency is rupee.", "rupee again"]
    examples = reader_examples(items, [[0, 1, 2], [0, 1]], texts.__getitem__, negatives=5)
    assert len(examples) == 1
    assert examples[0].passages == (1, 0)


def test_find_sublist_respects_bounds() -> None:
    assert find_sublist([5, 1, 2, 9, 1, 2], [1, 2], 3, 5) == (4, 5)
    assert find_sublist([5, 1, 2], [1, 2], 2, 2) is None
