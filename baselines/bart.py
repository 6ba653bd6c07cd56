"""Closed-book baseline: BART generating the answer from the question alone.

Preprocessing and decoding follow the code the released closed-book checkpoint was trained
with (shmsw25/bart-closed-book-qa, commit 27a440d; see baselines/README.md, "BART"):

* the question gets a "?" unless it already ends with one, then the question and answer are
  lower-cased (``data.py`` ``QAData.load_dataset``; ``--do_lowercase`` defaults to True);
* ``--append_another_bos`` prepends ``"<s> "`` to questions and answers, so with the
  tokenizer's own ``<s>`` every sequence starts with two BOS tokens. The transformers 2.x
  tokenizer of that code stripped the space after a special token, so the first word is
  encoded without a leading space (``who``, not ``Ġwho``); :func:`encode` rebuilds exactly
  those ids instead of relying on how today's tokenizers split ``"<s> who"``;
* questions are truncated to 32 ids including the special tokens (``--max_input_length``),
  answers are generated with 4 beams up to 20 tokens with early stopping
  (``--num_beams``, ``--max_output_length``) and decoded lower-cased.

Loads a saved model folder, or a raw state dict (.pt) on top of a config, as the released
checkpoint is. torch/transformers are imported lazily (the server imports the runner list).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from baselines.devices import Placement, cpu
from baselines.output import path_name
from baselines.release import QAItem

log = logging.getLogger(__name__)

#: bart-closed-book-qa cli.py defaults (--num_beams, --max_output_length, --max_input_length).
NUM_BEAMS = 4
MAX_OUTPUT_LENGTH = 20
MAX_INPUT_LENGTH = 32
#: What the checkpoint was trained with; recorded in run metadata and finetune.json.
PREPROCESSING = {"append_another_bos": True, "do_lowercase": True, "question_mark": True,
                 "max_input_length": MAX_INPUT_LENGTH, "max_output_length": MAX_OUTPUT_LENGTH,
                 "num_beams": NUM_BEAMS, "early_stopping": True}
#: Parameters a raw state dict of the old BartForConditionalGeneration lacks because they
#: are tied to model.shared: re-tied after loading, so their absence is expected.
TIED_KEYS = frozenset({"lm_head.weight", "model.encoder.embed_tokens.weight",
                       "model.decoder.embed_tokens.weight"})


def bart_question(question: str) -> str:
    """The question text as the checkpoint saw it: '?' appended if missing, lower-cased."""
    text = question if question.endswith("?") else f"{question}?"
    return text.lower()


def bart_answer(answer: str) -> str:
    """The answer text as the checkpoint was trained on it: lower-cased."""
    return answer.lower()


def encode(tokenizer: Any, text: str, max_length: int | None) -> list[int]:
    """Ids of ``"<s> " + text`` as bart-closed-book-qa encoded them: <s> <s> tokens </s>.

    Truncation keeps the first tokens so that the whole sequence, special tokens included,
    has at most MAX_LENGTH ids (transformers 2.x ``batch_encode_plus(max_length=...)``).
    """
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    body = [bos, *tokenizer(text, add_special_tokens=False)["input_ids"]]
    if max_length is not None:
        body = body[:max(0, max_length - 2)]
    return [bos, *body, eos]


#: transformers 2.x ``clean_up_tokenization`` (applied by data.py's decode); transformers 5
#: no longer applies it to BPE tokenizers, so it is done here.
CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def clean_up(text: str) -> str:
    """Remove the spaces before punctuation and contractions, as transformers 2.x did."""
    for before, after in CLEAN_UP:
        text = text.replace(before, after)
    return text


def pad_batch(tokenizer: Any, sequences: Sequence[list[int]]) -> dict[str, Any]:
    """Right-pad id lists into input_ids and attention_mask tensors."""
    import torch  # lazy: see the module docstring

    width = max(len(ids) for ids in sequences)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in sequences], dtype=torch.long)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences],
                        dtype=torch.long)
    return {"input_ids": ids, "attention_mask": mask}


def encode_questions(tokenizer: Any, questions: Sequence[str]) -> dict[str, Any]:
    """The encoder batch of QUESTIONS (preprocessed, double BOS, at most 32 ids each)."""
    return pad_batch(tokenizer, [encode(tokenizer, bart_question(q), MAX_INPUT_LENGTH)
                                 for q in questions])


def encode_answers(tokenizer: Any, answers: Sequence[str]) -> Any:
    """Training labels of ANSWERS (lower-cased, double BOS, not truncated), pads as -100."""
    batch = pad_batch(tokenizer, [encode(tokenizer, bart_answer(a), None) for a in answers])
    labels = batch["input_ids"]
    labels[batch["attention_mask"] == 0] = -100
    return labels


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
        # file names only: the folders are this machine's (the fingerprints hash the files)
        return {"model": path_name(self.model), "config": path_name(self.config),
                "tokenizer": path_name(self.tokenizer), "state_dict": self.is_state_dict,
                "preprocessing": PREPROCESSING}


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


@dataclass(frozen=True)
class KeyReport:
    """How a raw state dict matched the model: keys left initialised, keys ignored."""

    missing: tuple[str, ...]
    unexpected: tuple[str, ...]

    @property
    def untied_missing(self) -> tuple[str, ...]:
        """Missing keys that tying to model.shared does not fill (their values are random)."""
        return tuple(k for k in self.missing if k not in TIED_KEYS)

    def message(self, source: Path) -> str:
        """One readable line for the log."""
        parts = []
        if self.untied_missing:
            parts.append(f"{len(self.untied_missing)} missing keys left at their random "
                         f"initial values: {', '.join(self.untied_missing)}")
        tied = [k for k in self.missing if k in TIED_KEYS]
        if tied:
            parts.append(f"{len(tied)} tied keys filled from model.shared: {', '.join(tied)}")
        if self.unexpected:
            parts.append(f"{len(self.unexpected)} unexpected keys ignored: "
                         f"{', '.join(self.unexpected)}")
        return f"state dict {source}: " + ("; ".join(parts) or "every key matched")


def load_state(model: Any, state: dict[str, Any], source: Path) -> KeyReport:
    """Apply STATE with strict=False, re-tie shared weights and log what did not match."""
    result = model.load_state_dict(state, strict=False)
    report = KeyReport(tuple(result.missing_keys), tuple(result.unexpected_keys))
    model.tie_weights()
    if report.untied_missing or report.unexpected:
        log.warning("%s", report.message(source))
    else:
        log.info("%s", report.message(source))
    return report


def load_bart(source: BartSource, placement: Placement | None = None) -> tuple[Any, Any]:
    """Load (model, tokenizer) on PLACEMENT (default CPU); a state dict reports its keys."""
    import torch  # lazy: see the module docstring
    from transformers import AutoTokenizer, BartConfig, BartForConditionalGeneration

    where = placement or cpu()
    tokenizer = AutoTokenizer.from_pretrained(str(source.tokenizer))
    if not source.is_state_dict:
        model = BartForConditionalGeneration.from_pretrained(str(source.model))
        return where.model(model), tokenizer
    cfg_path = source.config
    config = (BartConfig.from_pretrained(str(cfg_path)) if cfg_path and
              cfg_path.is_dir() else BartConfig.from_json_file(str(cfg_path)))
    model = BartForConditionalGeneration(config)
    state = clean_state_dict(torch.load(str(source.model), map_location="cpu", weights_only=True))
    load_state(model, state, source.model)
    return where.model(model), tokenizer


def generate(model: Any, tokenizer: Any, questions: Sequence[str],
             placement: Placement | None = None) -> list[str]:
    """Beam-search answers (4 beams, at most 20 tokens, early stopping), lower-cased."""
    import torch  # lazy: see the module docstring

    where = placement or cpu()
    model.eval()
    enc = where.tensors(encode_questions(tokenizer, questions))
    with torch.no_grad(), where.autocast():
        out = model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                             num_beams=NUM_BEAMS, max_length=MAX_OUTPUT_LENGTH,
                             early_stopping=True)
    texts = tokenizer.batch_decode(out, skip_special_tokens=True,
                                   clean_up_tokenization_spaces=False)
    return [clean_up(text).strip().lower() for text in texts]


class BartPredictor:
    """Answers QA items with a closed-book BART model."""

    def __init__(self, model: Any, tokenizer: Any, placement: Placement | None = None) -> None:
        """Wrap a loaded model and tokenizer (already on PLACEMENT)."""
        self.model, self.tokenizer = model, tokenizer
        self.placement = placement or cpu()

    @classmethod
    def load(cls, source: BartSource, placement: Placement | None = None) -> BartPredictor:
        """Load the model and tokenizer from SOURCE onto PLACEMENT."""
        where = placement or cpu()
        return cls(*load_bart(source, where), where)

    def predict(self, batch: list[QAItem]) -> list[str]:
        """Generated answers for a batch of items."""
        return generate(self.model, self.tokenizer, [item.query for item in batch],
                        self.placement)
