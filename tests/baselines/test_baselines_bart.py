"""BART loading (folder or raw state dict), preprocessing and generation settings."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from baselines_helpers import invoke, read

from baselines import bart


def test_bart_input() -> None:
    assert bart.bart_input("Who Is The President") == "who is the president?"
    assert bart.bart_input("who won?") == "who won?"


def test_state_dict_loads_with_logged_key_differences(
        tmp_path: Path, bart_models: dict[str, Path], release_dir: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    source = bart.resolve_source(bart_models["pt"], bart_models["config"], None)
    with caplog.at_level(logging.WARNING, logger="baselines.bart"):
        model, _ = bart.load_bart(source)
    assert "unexpected.weight" in caplog.text
    reference, _ = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    for name, value in reference.state_dict().items():
        assert torch.equal(value, model.state_dict()[name]), name
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    invoke("run", "bart", "--track", "geo", "--data", release_dir, "-o", a,
           "--model", bart_models["pt"], "--config", bart_models["config"])
    invoke("run", "bart", "--track", "geo", "--data", release_dir, "-o", b,
           "--model", bart_models["model"])
    assert read(a) == read(b)


def test_missing_keys_are_logged(tmp_path: Path, bart_models: dict[str, Path],
                                 caplog: pytest.LogCaptureFixture) -> None:
    state = torch.load(str(bart_models["pt"]), weights_only=True)
    dropped = "module.model.encoder.layernorm_embedding.weight"
    del state[dropped]
    pt = tmp_path / "partial.pt"
    torch.save({"state_dict": state}, str(pt))
    with caplog.at_level(logging.WARNING, logger="baselines.bart"):
        bart.load_bart(bart.resolve_source(pt, bart_models["config"], None))
    assert "missing keys" in caplog.text and "layernorm_embedding.weight" in caplog.text


def test_generation_parameters_are_explicit(bart_models: dict[str, Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    model, tok = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    seen: dict[str, Any] = {}
    original = model.generate

    def spy(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(model, "generate", spy)
    answers = bart.generate(model, tok, ["Who won", "where"])
    assert len(answers) == 2 and all(a == a.lower() for a in answers)
    assert (seen["num_beams"], seen["max_length"], seen["early_stopping"]) == (4, 20, True)
