"""Fine-tuning on SituatedQA train with query-modified questions (paper Section 4).

One model per context type (temp, geo, current, previous: the tracks' declarations say which
are fine-tuned, see baselines.release.FINETUNE_CONTEXTS); a plain torch loop; exact match
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

from tqdm import tqdm

from baselines.bart import PREPROCESSING, encode_answers, encode_questions, generate
from baselines.devices import Placement, cpu
from baselines.dpr import reader_inputs
from baselines.metrics import contains_answer, em_score
from baselines.release import QAItem
from baselines.spans import passage_bounds

log = logging.getLogger(__name__)

MARKER = "finetune.json"
#: bart-closed-book-qa cli.py --max_grad_norm.
MAX_GRAD_NORM = 1.0


@dataclass(frozen=True)
class FinetuneConfig:
    """Options shared by the fine-tuning loops."""

    context: str
    epochs: int = 3
    batch_size: int = 8
    lr: float = 1e-5
    seed: int = 0
    negatives: int = 3
    predict_batch_size: int = 32

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
    """Run epochs of STEP over shuffled batches; evaluate dev EM; save on improvement.

    Dev EM is also measured before the first epoch (``start_dev_em``), so a run shows
    whether training helped at all.
    """
    history: list[dict[str, float]] = []
    start_em = evaluate()
    log.info("before training: dev EM %.2f", start_em)
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
            save({"best_epoch": best_epoch, "dev_em": best_em, "start_dev_em": start_em,
                  "history": history})
    return {"best_epoch": best_epoch, "dev_em": best_em, "start_dev_em": start_em,
            "history": history}


def write_marker(folder: Path, cfg: FinetuneConfig, model_kind: str, info: dict[str, Any],
                 base: dict[str, Any]) -> None:
    """Record how a checkpoint was fine-tuned next to its weights."""
    (folder / MARKER).write_text(json.dumps(
        {"model": model_kind, "config": cfg.describe(), "base": base, **info}, indent=2,
        default=str), encoding="utf-8")


def finetune_bart(model: Any, tokenizer: Any, train: Sequence[QAItem], dev: Sequence[QAItem],
                  cfg: FinetuneConfig, output_dir: Path, base: dict[str, Any],
                  placement: Placement | None = None) -> dict[str, Any]:
    """Continue training BART on query-modified questions -> first gold answer.

    As bart-closed-book-qa trains (run.py, bart.py): the same preprocessing as prediction
    (baselines.bart.encode_questions / encode_answers), the token losses summed over a batch,
    gradients clipped to norm 1.0, AdamW without weight decay (eps 1e-8).
    """
    import torch  # lazy: see the module docstring

    where = placement or cpu()
    torch.manual_seed(cfg.seed)
    train = [item for item in train if item.answers]
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, eps=1e-8, weight_decay=0.0)

    def step(batch: list[int]) -> float:
        model.train()
        enc = where.tensors(encode_questions(tokenizer, [train[i].query for i in batch]))
        labels = where.tensors({"labels": encode_answers(
            tokenizer, [train[i].answers[0] for i in batch])})["labels"]
        with where.autocast():
            out = model(**enc, labels=labels)
        # transformers averages over the label tokens; the original code sums them
        loss = out.loss * (labels != -100).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad()
        return float(out.loss.detach())

    def evaluate() -> float:
        preds: list[str] = []
        for batch in chunks(range(len(dev)), cfg.predict_batch_size):
            preds.extend(generate(model, tokenizer, [dev[i].query for i in batch], where))
        return em_score(preds, [item.answers for item in dev])

    def save(info: dict[str, Any]) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(output_dir))
        tokenizer.save_pretrained(str(output_dir))
        write_marker(output_dir, cfg, "bart", {**info, "preprocessing": PREPROCESSING}, base)

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
                    text_of: Callable[[int], str], negatives: int) -> list[ReaderExample]:
    """Pair each question with its best retrieved passage containing a gold answer.

    Containment is checked on SQuAD-normalized text; questions without such a passage
    are dropped, as in DPR's reader training. `text_of(row)` reads one passage, so only
    the retrieved ones are read (a 21M-passage corpus never sits in memory).
    """
    examples = []
    for item, hits in zip(items, retrieved, strict=True):
        positives = [p for p in hits if contains_answer(text_of(p), item.answers)]
        if not positives:
            continue
        others = [p for p in hits if p not in positives][:negatives]
        examples.append(ReaderExample(item.query, (positives[0], *others), item.answers))
    return examples


def finetune_reader(pipeline: Any, train: Sequence[QAItem], dev: Sequence[QAItem],
                    cfg: FinetuneConfig, output_dir: Path, base: dict[str, Any],
                    placement: Placement | None = None) -> dict[str, Any]:
    """Continue training the DPR reader on retrieved passages that contain a gold answer."""
    import torch  # lazy: see the module docstring

    where = placement or cpu()
    torch.manual_seed(cfg.seed)
    reader, tok = pipeline.reader, pipeline.reader_tok
    retrieved = [hits for batch in tqdm(chunks(range(len(train)), cfg.batch_size),
                                        desc="retrieve train")
                 for hits in pipeline.retrieve([train[i].query for i in batch])]
    examples = reader_examples(train, retrieved, lambda row: pipeline.passages[row].text,
                               cfg.negatives)
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
        with where.autocast():
            out = reader(**where.tensors(enc))
        targets = where.tensors({"relevance": torch.tensor([0]),
                                 "start": torch.tensor([span[0]]),
                                 "end": torch.tensor([span[1]])})
        relevance = cross_entropy(out.relevance_logits.view(1, -1).float(),
                                  targets["relevance"])
        start = cross_entropy(out.start_logits[0:1].float(), targets["start"])
        end = cross_entropy(out.end_logits[0:1].float(), targets["end"])
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
        preds = [pipeline.read(item.query, hits) for item, hits in zip(dev, dev_hits, strict=True)]
        return em_score(preds, [item.answers for item in dev])

    def save(info: dict[str, Any]) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        reader.save_pretrained(str(output_dir))
        tok.save_pretrained(str(output_dir))
        write_marker(output_dir, cfg, "dpr-reader", {**info, "train_examples": len(examples)},
                     base)

    return train_epochs(cfg, len(examples), step, evaluate, save)
