"""Closed-book baseline: BART generating the answer from the question alone.

Loads a saved model folder, or a raw state dict (.pt) on top of a config, as the released
bart-closed-book-qa checkpoint is. torch/transformers are imported lazily.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from baselines.release import QAItem

log = logging.getLogger(__name__)

NUM_BEAMS = 4
MAX_LENGTH = 20
MAX_INPUT_LENGTH = 64


def bart_input(question: str) -> str:
    """Lower-case the question and end it with '?' (bart-closed-book-qa preprocessing)."""
    text = question.strip().lower()
    return text if text.endswith("?") else f"{text}?"


@dataclass(frozen=True)
class BartSource:
    """Where the BART weights, config and tokenizer come from."""

    model: Path
    config: Path | None
    tokenizer: Path

    @property
    def is_state_dict(self) -> bool:
        """Whether the model is a raw state-dict file rather than a saved folder."""
        return self.model.is_file()

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the metadata sidecar."""
        return {"model": str(self.model), "config": str(self.config) if self.config else None,
                "tokenizer": str(self.tokenizer), "state_dict": self.is_state_dict,
                "num_beams": NUM_BEAMS, "max_length": MAX_LENGTH, "early_stopping": True}


def resolve_source(model: Path | None, config: Path | None, tokenizer: Path | None) -> BartSource:
    """Check the --model/--config/--tokenizer options and say which path is wrong."""
    if model is None:
        raise click.BadParameter("the bart runner needs --model (a folder or a .pt state dict)",
                                 param_hint="--model")
    if not model.exists():
        raise click.BadParameter(f"model not found: {model}", param_hint="--model")
    if model.is_dir():
        if not (model / "config.json").is_file():
            raise click.BadParameter(f"{model} has no config.json (not a saved model folder)",
                                     param_hint="--model")
        if config is not None:
            raise click.BadParameter("--config is only used with a .pt state dict",
                                     param_hint="--config")
        tok = tokenizer or model
    else:
        if config is None:
            raise click.BadParameter(f"{model} is a state dict: pass --config (a folder with "
                                     "config.json, or the config.json file)", param_hint="--config")
        if not config.exists():
            raise click.BadParameter(f"config not found: {config}", param_hint="--config")
        tok = tokenizer or (config if config.is_dir() else config.parent)
    if not Path(tok).is_dir():
        raise click.BadParameter(f"tokenizer folder not found: {tok}", param_hint="--tokenizer")
    return BartSource(model, config, Path(tok))


def clean_state_dict(state: Any) -> dict[str, Any]:
    """Unwrap common checkpoint containers and strip DataParallel's 'module.' prefix."""
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    return {(k.removeprefix("module.")): v for k, v in state.items()}


def load_bart(source: BartSource) -> tuple[Any, Any]:
    """Load (model, tokenizer); a state dict is applied with strict=False, differences logged."""
    import torch
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(str(source.tokenizer))
    if not source.is_state_dict:
        return BartForConditionalGeneration.from_pretrained(str(source.model)), tokenizer
    cfg_path = source.config
    config = (BartConfig.from_pretrained(str(cfg_path)) if cfg_path and
              cfg_path.is_dir() else BartConfig.from_json_file(str(cfg_path)))
    model = BartForConditionalGeneration(config)
    state = clean_state_dict(torch.load(str(source.model), map_location="cpu", weights_only=True))
    result = model.load_state_dict(state, strict=False)
    if result.missing_keys:
        log.warning("state dict %s: %d missing keys: %s", source.model, len(result.missing_keys),
                    ", ".join(result.missing_keys))
    if result.unexpected_keys:
        log.warning("state dict %s: %d unexpected keys: %s", source.model,
                    len(result.unexpected_keys), ", ".join(result.unexpected_keys))
    # tied weights (lm_head / shared embeddings) may be reported missing; re-tie them
    model.tie_weights()
    return model, tokenizer


def generate(model: Any, tokenizer: Any, questions: Sequence[str]) -> list[str]:
    """Beam-search answers (4 beams, max length 20, early stopping), lower-cased."""
    import torch

    model.eval()
    enc = tokenizer([bart_input(q) for q in questions], padding=True, truncation=True,
                    max_length=MAX_INPUT_LENGTH, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                             num_beams=NUM_BEAMS, max_length=MAX_LENGTH, early_stopping=True)
    return [text.strip().lower() for text in tokenizer.batch_decode(out, skip_special_tokens=True)]


class BartPredictor:
    """Answers QA items with a closed-book BART model."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        """Wrap a loaded model and tokenizer."""
        self.model, self.tokenizer = model, tokenizer

    @classmethod
    def load(cls, source: BartSource) -> BartPredictor:
        """Load the model and tokenizer from SOURCE."""
        return cls(*load_bart(source))

    def predict(self, batch: list[QAItem]) -> list[str]:
        """Generated answers for a batch of items."""
        return generate(self.model, self.tokenizer, [item.query for item in batch])
