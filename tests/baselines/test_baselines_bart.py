"""BART loading (folder or raw state dict), preprocessing and generation settings."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from baselines_helpers import invoke, read

from baselines import bart

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_question_text_follows_the_checkpoint_code() -> None:
    # "?" only when missing (no strip first, as data.py does), then lower-cased
    assert bart.bart_question("Who Is The President") == "who is the president?"
    assert bart.bart_question("Who won?") == "who won?"
    assert bart.bart_question("who won? ") == "who won? ?"
    assert bart.bart_answer("Joe Biden") == "joe biden"
    assert bart.clean_up("it is n't 5 , is it ?") == "it isn't 5, is it?"


def char_ids(tok_dir: Path, text: str) -> list[int]:
    """Ids of TEXT in the tiny character-level vocabulary (byte-level: space is 'Ġ')."""
    vocab = json.loads((tok_dir / "vocab.json").read_text())
    return [vocab["Ġ" if ch == " " else ch] for ch in text]


def test_question_token_ids_have_two_bos_and_no_prefix_space(
        bart_models: dict[str, Path]) -> None:
    _, tok = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    batch = bart.encode_questions(tok, ["Who Won", "Where is it?"])
    # <s> <s> "who won?" </s>: the first word without a leading space (transformers 2.x
    # stripped the text after the "<s> " that --append_another_bos prepends)
    first = [0, 0, *char_ids(bart_models["model"].parent / "tok", "who won?"), 2]
    second = [0, 0, *char_ids(bart_models["model"].parent / "tok", "where is it?"), 2]
    assert batch["input_ids"][1].tolist() == second
    assert batch["input_ids"][0].tolist() == first + [1] * (len(second) - len(first))
    assert batch["attention_mask"][0].tolist() == [1] * len(first) + [0] * (
        len(second) - len(first))


def test_long_questions_are_cut_to_32_ids_with_the_end_token(
        bart_models: dict[str, Path]) -> None:
    _, tok = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    ids = bart.encode_questions(tok, ["a" * 50])["input_ids"][0].tolist()
    assert ids == [0, 0, *char_ids(bart_models["model"].parent / "tok", "a" * 29), 2]
    labels = bart.encode_answers(tok, ["Paris", "a b"])
    tok_dir = bart_models["model"].parent / "tok"
    assert labels[0].tolist() == [0, 0, *char_ids(tok_dir, "paris"), 2]
    assert labels[1].tolist() == [0, 0, *char_ids(tok_dir, "a b"), 2, -100, -100]


def test_state_dict_loads_with_logged_key_differences(
        tmp_path: Path, bart_models: dict[str, Path], release_dir: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    source = bart.resolve_source(bart_models["pt"], bart_models["config"], None)
    with caplog.at_level(logging.WARNING, logger="baselines.bart"):
        model, _ = bart.load_bart(source)
    assert "1 unexpected keys ignored: unexpected.weight" in caplog.text
    assert "missing keys left at their random" not in caplog.text
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
    assert ("1 missing keys left at their random initial values: "
            "model.encoder.layernorm_embedding.weight") in caplog.text


def test_tied_keys_missing_from_an_old_checkpoint_are_filled(
        tmp_path: Path, bart_models: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    state = torch.load(str(bart_models["pt"]), weights_only=True)
    # the old BartForConditionalGeneration had no lm_head: it reused model.shared
    state.pop("module.lm_head.weight", None)
    state.pop("module.unexpected.weight")
    pt = tmp_path / "old.pt"
    torch.save(state, str(pt))
    with caplog.at_level(logging.INFO, logger="baselines.bart"):
        model, _ = bart.load_bart(bart.resolve_source(pt, bart_models["config"], None))
    assert "missing keys left" not in caplog.text
    assert torch.equal(model.lm_head.weight, state["module.model.shared.weight"])


def test_generation_decodes_lower_cased_within_20_tokens(
        bart_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    model, tok = bart.load_bart(bart.resolve_source(bart_models["model"], None, None))
    seen: dict[str, Any] = {}

    def fake_generate(**kwargs: Any) -> Any:
        seen.update(kwargs)
        # what a model trained with --append_another_bos emits: </s> <s> <s> answer </s>
        ids = [2, 0, 0, *char_ids(bart_models["model"].parent / "tok", "Joe Biden"), 2]
        return torch.tensor([ids, ids])

    monkeypatch.setattr(model, "generate", fake_generate)
    answers = bart.generate(model, tok, ["Who won", "where"])
    assert answers == ["joe biden", "joe biden"]
    assert seen["input_ids"][0].tolist()[:2] == [0, 0]
    assert (seen["num_beams"], seen["max_length"], seen["early_stopping"]) == (4, 20, True)
    # the random model never emits </s>: its beams are cut at 20 tokens
    monkeypatch.undo()
    outputs: list[Any] = []
    original = model.generate

    def spy(**kwargs: Any) -> Any:
        outputs.append(original(**kwargs))
        return outputs[-1]

    monkeypatch.setattr(model, "generate", spy)
    bart.generate(model, tok, ["who won"])
    assert outputs[0].shape[1] == 20
