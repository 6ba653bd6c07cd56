"""Fine-tuning on SituatedQA train with query-modified questions (paper Section 4).

One model per context type (temp, geo, current, previous); a plain torch loop; exact match
on dev after each epoch, the best epoch is saved. torch/transformers imported lazily.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from baselines.metrics import contains_answer, em_score
from baselines.release import QAItem

log = logging.getLogger(__name__)

CONTEXTS = ("temp", "geo", "current", "previous")
MARKER = "finetune.json"


@dataclass(frozen=True)
class FinetuneConfig:
    """Options shared by the fine-tuning loops."""

    context: str
    epochs: int = 3
    batch_size: int = 8
    lr: float = 1e-5
    seed: int = 0
    negatives: int = 3

    def describe(self) -> dict[str, Any]:
        """JSON-ready options."""
        return asdict(self)


def shuffled(n: int, seed: int, epoch: int) -> list[int]:
    """A reproducible permutation of range(n) for an epoch."""
    order = list(range(n))
    random.Random(seed * 1000 + epoch).shuffle(order)
    return order


def chunks(order: Sequence[int], size: int) -> list[list[int]]:
    """Split ORDER into lists of SIZE."""
    return [list(order[i:i + size]) for i in range(0, len(order), size)]


def train_epochs(cfg: FinetuneConfig, n_train: int, step: Callable[[list[int]], float],
                 evaluate: Callable[[], float], save: Callable[[dict[str, Any]], None],
                 ) -> dict[str, Any]:
    """Run epochs of STEP over shuffled batches; evaluate dev EM; save on improvement."""
    from tqdm import tqdm

    history: list[dict[str, float]] = []
    best_em, best_epoch = -1.0, 0
    for epoch in range(1, cfg.epochs + 1):
        losses = [step(batch) for batch in tqdm(chunks(shuffled(n_train, cfg.seed, epoch),
                                                       cfg.batch_size),
                                                desc=f"epoch {epoch}", unit="batch")]
        dev_em = evaluate()
        history.append({"epoch": epoch, "loss": sum(losses) / max(1, len(losses)),
                        "dev_em": dev_em})
        log.info("epoch %d: loss %.4f dev EM %.2f", epoch, history[-1]["loss"], dev_em)
        if dev_em > best_em:
            best_em, best_epoch = dev_em, epoch
            save({"best_epoch": best_epoch, "dev_em": best_em, "history": history})
    return {"best_epoch": best_epoch, "dev_em": best_em, "history": history}


def write_marker(folder: Path, cfg: FinetuneConfig, model_kind: str, info: dict[str, Any],
                 base: dict[str, Any]) -> None:
    """Record how a checkpoint was fine-tuned next to its weights."""
    (folder / MARKER).write_text(json.dumps(
        {"model": model_kind, "config": cfg.describe(), "base": base, **info}, indent=2,
        default=str), encoding="utf-8")


def finetune_bart(model: Any, tokenizer: Any, train: Sequence[QAItem], dev: Sequence[QAItem],
                  cfg: FinetuneConfig, output_dir: Path, base: dict[str, Any]) -> dict[str, Any]:
    """Continue training BART (AdamW) on query-modified questions -> first gold answer."""
    import torch

    from baselines.bart import MAX_INPUT_LENGTH, MAX_LENGTH, bart_input, generate

    torch.manual_seed(cfg.seed)
    train = [item for item in train if item.answers]
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)

    def step(batch: list[int]) -> float:
        model.train()
        enc = tokenizer([bart_input(train[i].query) for i in batch], padding=True,
                        truncation=True, max_length=MAX_INPUT_LENGTH, return_tensors="pt")
        labels = tokenizer(text_target=[train[i].answers[0].lower() for i in batch],
                           padding=True, truncation=True, max_length=MAX_LENGTH,
                           return_tensors="pt")["input_ids"]
        labels[labels == tokenizer.pad_token_id] = -100
        loss = model(**enc, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())

    def evaluate() -> float:
        preds: list[str] = []
        for batch in chunks(range(len(dev)), cfg.batch_size):
            preds.extend(generate(model, tokenizer, [dev[i].query for i in batch]))
        return em_score(preds, [item.answers for item in dev])

    def save(info: dict[str, Any]) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(output_dir))
        tokenizer.save_pretrained(str(output_dir))
        write_marker(output_dir, cfg, "bart", info, base)

    return train_epochs(cfg, len(train), step, evaluate, save)


def find_sublist(haystack: Sequence[int], needle: Sequence[int], start: int, end: int,
                 ) -> tuple[int, int] | None:
    """First (first, last) positions of NEEDLE inside haystack[start:end+1], or None."""
    width = len(needle)
    for i in range(start, end - width + 2):
        if width and list(haystack[i:i + width]) == list(needle):
            return i, i + width - 1
    return None


@dataclass(frozen=True)
class ReaderExample:
    """A reader training example: the query, a gold passage first, then negatives."""

    query: str
    passages: tuple[int, ...]
    answers: tuple[str, ...]


def reader_examples(items: Sequence[QAItem], retrieved: Sequence[Sequence[int]],
                    texts: Sequence[str], negatives: int) -> list[ReaderExample]:
    """Pair each question with its best retrieved passage containing a gold answer.

    Containment is checked on SQuAD-normalized text; questions without such a passage
    are dropped, as in DPR's reader training.
    """
    examples = []
    for item, hits in zip(items, retrieved, strict=True):
        positives = [p for p in hits if contains_answer(texts[p], item.answers)]
        if not positives:
            continue
        others = [p for p in hits if p not in positives][:negatives]
        examples.append(ReaderExample(item.query, (positives[0], *others), item.answers))
    return examples


def finetune_reader(pipeline: Any, train: Sequence[QAItem], dev: Sequence[QAItem],
                    cfg: FinetuneConfig, output_dir: Path, base: dict[str, Any],
                    ) -> dict[str, Any]:
    """Continue training the DPR reader on retrieved passages that contain a gold answer."""
    import torch
    from tqdm import tqdm

    from baselines.dpr import reader_inputs
    from baselines.spans import passage_bounds

    torch.manual_seed(cfg.seed)
    reader, tok = pipeline.reader, pipeline.reader_tok
    texts = [p.text for p in pipeline.passages]
    retrieved = [hits for batch in tqdm(chunks(range(len(train)), cfg.batch_size),
                                        desc="retrieve train")
                 for hits in pipeline.retrieve([train[i].query for i in batch])]
    examples = reader_examples(train, retrieved, texts, cfg.negatives)
    log.info("%d of %d train questions have a retrieved passage with a gold answer",
             len(examples), len(train))
    if not examples:
        raise ValueError("no train question has a retrieved passage containing a gold answer")
    dev_hits = [hits for batch in chunks(range(len(dev)), cfg.batch_size)
                for hits in pipeline.retrieve([dev[i].query for i in batch])]
    optimizer = torch.optim.AdamW(reader.parameters(), lr=cfg.lr)
    stop = frozenset(i for i in (tok.pad_token_id, tok.cls_token_id) if i is not None)
    cross_entropy = torch.nn.functional.cross_entropy

    def example_loss(example: ReaderExample) -> Any:
        passages = [pipeline.passages[p] for p in example.passages]
        enc = reader_inputs(tok, example.query, passages, pipeline.cfg.reader_max_length)
        ids = enc["input_ids"][0].tolist()
        bounds = passage_bounds(ids, tok.sep_token_id, stop)
        span = None
        if bounds is not None:
            for answer in example.answers:
                answer_ids = tok(answer, add_special_tokens=False)["input_ids"]
                span = find_sublist(ids, answer_ids, *bounds)
                if span:
                    break
        if span is None:
            return None
        out = reader(**enc)
        relevance = cross_entropy(out.relevance_logits.view(1, -1), torch.tensor([0]))
        start = cross_entropy(out.start_logits[0:1], torch.tensor([span[0]]))
        end = cross_entropy(out.end_logits[0:1], torch.tensor([span[1]]))
        return relevance + start + end

    def step(batch: list[int]) -> float:
        reader.train()
        losses = [loss for loss in (example_loss(examples[i]) for i in batch) if loss is not None]
        if not losses:
            return 0.0
        loss = torch.stack(losses).mean()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        optimizer.zero_grad()
        return float(loss.detach())

    def evaluate() -> float:
        preds = [pipeline.read(item.query, hits) for item, hits in zip(dev, dev_hits)]
        return em_score(preds, [item.answers for item in dev])

    def save(info: dict[str, Any]) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        reader.save_pretrained(str(output_dir))
        tok.save_pretrained(str(output_dir))
        write_marker(output_dir, cfg, "dpr-reader", {**info, "train_examples": len(examples)},
                     base)

    return train_epochs(cfg, len(examples), step, evaluate, save)
