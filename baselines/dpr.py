"""Retrieval-based baseline: DPR retriever (question/context encoders + faiss) and DPR reader.

torch, transformers and faiss are imported lazily so the package imports without them.
"""

from __future__ import annotations

import csv
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from baselines.output import sha256_file
from baselines.release import QAItem
from baselines.spans import best_span, extend_to_words, passage_bounds

log = logging.getLogger(__name__)

INDEX_KINDS = ("flat", "hnsw", "numpy")
PASSAGE_MAX_LENGTH = 256


@dataclass(frozen=True)
class Passage:
    """One corpus passage (DPR psgs_w100.tsv row)."""

    id: str
    text: str
    title: str


@dataclass(frozen=True)
class DPRRunConfig:
    """Everything the DPR pipeline needs."""

    question_encoder: Path
    ctx_encoder: Path
    reader: Path
    corpus: Path
    index_kind: str = "flat"
    index_path: Path | None = None
    top_k: int = 100
    read_k: int = 50
    max_span_length: int = 10
    reader_max_length: int = 350
    batch_size: int = 16

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings for the metadata sidecar."""
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


def require_corpus(path: Path | None) -> Path:
    """Return the corpus path or fail with a message naming it."""
    if path is None:
        raise click.BadParameter("the dpr runner needs --corpus FILE (psgs_w100.tsv format)",
                                 param_hint="--corpus")
    if not path.is_file():
        raise click.BadParameter(f"corpus file not found: {path}", param_hint="--corpus")
    return path


def read_corpus(path: Path) -> list[Passage]:
    """Read a DPR passages TSV (header id, text, title)."""
    csv.field_size_limit(sys.maxsize)
    passages = []
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:3]] != ["id", "text", "title"]:
            raise click.ClickException(
                f"{path}: expected a header 'id<TAB>text<TAB>title', got {header!r}")
        for number, row in enumerate(rows, 2):
            if len(row) < 3:
                raise click.ClickException(f"{path}:{number}: expected 3 columns, got {len(row)}")
            passages.append(Passage(row[0], row[1], row[2]))
    if not passages:
        raise click.ClickException(f"{path}: the corpus has no passages")
    return passages


def numpy_top_k(queries: Any, passages: Any, k: int) -> tuple[Any, Any]:
    """Exact inner-product top-k with argpartition; returns (scores, indices) sorted desc."""
    import numpy as np

    scores = queries @ passages.T
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, axis=1)
    # stable sort on (-score, index) so ties break by corpus order, like faiss flat
    order = np.lexsort((part, -part_scores), axis=1)
    return (np.take_along_axis(part_scores, order, axis=1),
            np.take_along_axis(part, order, axis=1))


class PassageIndex:
    """Inner-product index over passage embeddings: faiss flat / HNSW, or numpy."""

    def __init__(self, kind: str, index: Any) -> None:
        """Wrap a faiss index, or a float32 matrix for the numpy kind."""
        self.kind = kind
        self.index = index

    @classmethod
    def build(cls, kind: str, embeddings: Any) -> PassageIndex:
        """Build an index of KIND over an (n, d) float32 matrix."""
        import numpy as np

        embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        if kind == "numpy":
            return cls(kind, embeddings)
        import faiss

        dim = embeddings.shape[1]
        index: Any
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 200
        else:
            index = faiss.IndexFlatIP(dim)
        index.add(embeddings)
        return cls(kind, index)

    def search(self, queries: Any, k: int) -> tuple[Any, Any]:
        """Top-k (scores, indices) for each query row."""
        import numpy as np

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self.kind == "numpy":
            return numpy_top_k(queries, self.index, k)
        if self.kind == "hnsw":
            self.index.hnsw.efSearch = max(128, k)
        scores, indices = self.index.search(queries, min(k, self.index.ntotal))
        return scores, indices

    def save(self, folder: Path, info: dict[str, Any]) -> None:
        """Save the index and a description (kind, fingerprints) to FOLDER."""
        import numpy as np

        folder.mkdir(parents=True, exist_ok=True)
        if self.kind == "numpy":
            np.save(folder / "embeddings.npy", self.index)
        else:
            import faiss

            faiss.write_index(self.index, str(folder / "index.faiss"))
        (folder / "index.json").write_text(json.dumps({**info, "kind": self.kind}, indent=2),
                                           encoding="utf-8")

    @classmethod
    def load(cls, folder: Path, info: dict[str, Any]) -> PassageIndex | None:
        """Load a saved index if it matches INFO (same kind, corpus, encoder), else None."""
        import numpy as np

        described = folder / "index.json"
        if not described.is_file():
            return None
        saved = json.loads(described.read_text(encoding="utf-8"))
        if saved != info:
            raise click.ClickException(
                f"the index in {folder} was built for another corpus, encoder or index kind "
                f"({saved}); remove it or pass another --index-path")
        if saved["kind"] == "numpy":
            return cls("numpy", np.load(folder / "embeddings.npy"))
        import faiss

        return cls(saved["kind"], faiss.read_index(str(folder / "index.faiss")))


def encode_passages(model: Any, tokenizer: Any, passages: Sequence[Passage], batch_size: int,
                    ) -> Any:
    """Encode (title, text) pairs with the context encoder; returns an (n, d) float32 array."""
    import numpy as np
    import torch
    from tqdm import tqdm

    model.eval()
    chunks = []
    with torch.no_grad():
        for start in tqdm(range(0, len(passages), batch_size), desc="encode passages",
                          unit="batch"):
            batch = passages[start:start + batch_size]
            enc = tokenizer([p.title for p in batch], [p.text for p in batch], truncation=True,
                            max_length=PASSAGE_MAX_LENGTH, padding=True, return_tensors="pt")
            chunks.append(model(**enc).pooler_output.float().numpy())
    return np.concatenate(chunks).astype(np.float32)


def encode_questions(model: Any, tokenizer: Any, questions: Sequence[str]) -> Any:
    """Encode a batch of questions with the question encoder; (n, d) float32."""
    import torch

    model.eval()
    with torch.no_grad():
        enc = tokenizer(list(questions), truncation=True, max_length=PASSAGE_MAX_LENGTH,
                        padding=True, return_tensors="pt")
        return model(**enc).pooler_output.float().numpy()


def reader_inputs(tokenizer: Any, question: str, passages: Sequence[Passage],
                  max_length: int) -> Any:
    """Tokenize [CLS] question [SEP] title [SEP] text for each passage (torch tensors)."""
    return tokenizer(questions=[question] * len(passages), titles=[p.title for p in passages],
                     texts=[p.text for p in passages], padding="longest", truncation=True,
                     max_length=max_length, return_tensors="pt")


def decode_answer(tokenizer: Any, input_ids: Sequence[int], start_logits: Sequence[float],
                  end_logits: Sequence[float], max_span_length: int) -> tuple[str, float] | None:
    """Best answer text and score inside the passage of one reader input, or None."""
    stop = frozenset(i for i in (tokenizer.pad_token_id, tokenizer.cls_token_id) if i is not None)
    bounds = passage_bounds(input_ids, tokenizer.sep_token_id, stop)
    if bounds is None:
        return None
    start, end, score = best_span(start_logits, end_logits, bounds, max_span_length)
    tokens = tokenizer.convert_ids_to_tokens(list(input_ids))
    start, end = extend_to_words(tokens, start, end, bounds)
    text = tokenizer.decode(list(input_ids[start:end + 1]), skip_special_tokens=True,
                            clean_up_tokenization_spaces=True)
    return text.strip(), score


class DPRPipeline:
    """Retrieve with the DPR encoders and index, then read the best span."""

    def __init__(self, cfg: DPRRunConfig, passages: list[Passage], index: PassageIndex,
                 q_model: Any, q_tok: Any, reader: Any, reader_tok: Any) -> None:
        """Assemble a pipeline from loaded parts (use build())."""
        self.cfg, self.passages, self.index = cfg, passages, index
        self.q_model, self.q_tok = q_model, q_tok
        self.reader, self.reader_tok = reader, reader_tok

    @classmethod
    def build(cls, cfg: DPRRunConfig, reader_override: Any = None) -> DPRPipeline:
        """Load encoders, reader and corpus; load the saved index or build (and save) it."""
        from transformers import (
            DPRContextEncoder,
            DPRContextEncoderTokenizer,
            DPRQuestionEncoder,
            DPRQuestionEncoderTokenizer,
            DPRReader,
            DPRReaderTokenizer,
        )

        passages = read_corpus(cfg.corpus)
        info = {"corpus_sha256": sha256_file(cfg.corpus), "passages": len(passages),
                "ctx_encoder_sha256": _folder_digest(cfg.ctx_encoder), "kind": cfg.index_kind}
        index = PassageIndex.load(cfg.index_path, info) if cfg.index_path else None
        if index is None:
            ctx_model = DPRContextEncoder.from_pretrained(str(cfg.ctx_encoder))
            ctx_tok = DPRContextEncoderTokenizer.from_pretrained(str(cfg.ctx_encoder))
            embeddings = encode_passages(ctx_model, ctx_tok, passages, cfg.batch_size)
            index = PassageIndex.build(cfg.index_kind, embeddings)
            if cfg.index_path:
                index.save(cfg.index_path, info)
        else:
            log.info("loaded the %s index from %s", index.kind, cfg.index_path)
        q_model = DPRQuestionEncoder.from_pretrained(str(cfg.question_encoder))
        q_tok = DPRQuestionEncoderTokenizer.from_pretrained(str(cfg.question_encoder))
        reader = reader_override or DPRReader.from_pretrained(str(cfg.reader))
        reader_tok = DPRReaderTokenizer.from_pretrained(str(cfg.reader))
        return cls(cfg, passages, index, q_model, q_tok, reader, reader_tok)

    def retrieve(self, queries: Sequence[str]) -> list[list[int]]:
        """Indices of the top-k passages for each query, best first."""
        embeddings = encode_questions(self.q_model, self.q_tok, queries)
        _, indices = self.index.search(embeddings, self.cfg.top_k)
        return [[int(i) for i in row if i >= 0] for row in indices]

    def read(self, query: str, candidates: Sequence[int]) -> str:
        """Answer from the most relevant of the first read_k passages (DPR's prediction)."""
        import torch

        chosen = [self.passages[i] for i in candidates[:self.cfg.read_k]]
        if not chosen:
            return ""
        self.reader.eval()
        with torch.no_grad():
            enc = reader_inputs(self.reader_tok, query, chosen, self.cfg.reader_max_length)
            out = self.reader(**enc)
        ids = enc["input_ids"].tolist()
        # most relevant passage first; fall back to the next one if a passage is empty
        for p in torch.argsort(out.relevance_logits.view(-1), descending=True, stable=True).tolist():
            decoded = decode_answer(self.reader_tok, ids[p], out.start_logits[p].tolist(),
                                    out.end_logits[p].tolist(), self.cfg.max_span_length)
            if decoded is not None:
                return decoded[0]
        return ""

    def predict(self, batch: list[QAItem]) -> list[str]:
        """Answers for a batch of items (retrieval batched, reading per question)."""
        retrieved = self.retrieve([item.query for item in batch])
        return [self.read(item.query, hits) for item, hits in zip(batch, retrieved)]


def _folder_digest(folder: Path) -> str:
    """sha256 over the files of a checkpoint folder (ties a saved index to its encoder)."""
    from baselines.output import fingerprint

    found = fingerprint(folder)
    return found["sha256"] if found else ""
