"""Fine-tuning: one epoch on a handful of synthetic examples, then run the finetuned setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")

from baselines_helpers import dpr_args, invoke, read

from baselines.finetune import find_sublist, reader_examples
from baselines.release import QAItem


@pytest.mark.parametrize("context", ["temp", "previous"])
def test_finetune_bart_then_run(tmp_path: Path, release_dir: Path, bart_models: dict[str, Path],
                                context: str) -> None:
    out_dir = tmp_path / "ft"
    result = invoke("finetune", "bart", "--context", context, "--data", release_dir,
                    "--output-dir", out_dir, "--epochs", 1, "--batch-size", 4,
                    "--model", bart_models["model"], "--limit-dev", 3)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["best_epoch"] == 1
    marker = json.loads((out_dir / "finetune.json").read_text())
    assert marker["config"]["context"] == context and marker["config"]["lr"] == 1e-5
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
    examples = reader_examples(items, [[0, 1, 2], [0, 1]], texts, negatives=5)
    assert len(examples) == 1
    assert examples[0].passages == (1, 0)


def test_find_sublist_respects_bounds() -> None:
    assert find_sublist([5, 1, 2, 9, 1, 2], [1, 2], 3, 5) == (4, 5)
    assert find_sublist([5, 1, 2], [1, 2], 2, 2) is None
