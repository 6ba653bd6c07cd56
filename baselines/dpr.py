"""Retrieval-based baseline: DPR retriever (question/context encoders + faiss) and DPR reader.

The corpus is streamed (:mod:`baselines.corpus`), passage embeddings go batch by batch to disk
and into an incrementally built index (:mod:`baselines.passage_index`): peak memory is one
batch plus the index, at Wikipedia scale too. Models and batches live on the device of a
:class:`~baselines.devices.Placement` (the same code on CPU and CUDA).

torch and transformers are imported lazily so the package imports without them.
"""

from __future__ import annotations

import glob
import json
import logging
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
from tqdm import tqdm

from baselines import devices
from baselines.corpus import CorpusTable, Passage, PassageStore, iter_passages, iter_rows
from baselines.output import fingerprint, sha256_file
from baselines.passage_index import (
    INDEX_KINDS,
    EmbeddingFile,
    IndexParams,
    Matrix,
    PassageIndex,
    iter_batches,
    load_dpr_shards,
    numpy_top_k,
)
from baselines.release import QAItem
from baselines.spans import best_span, extend_to_words, passage_bounds

log = logging.getLogger(__name__)

__all__ = ["INDEX_KINDS", "DPRPipeline", "DPRRunConfig", "IndexParams", "Passage",
           "PassageIndex", "build_index", "decode_answer", "encode_passages",
           "encode_questions", "iter_passages", "numpy_top_k", "reader_inputs",
           "require_corpus"]

PASSAGE_MAX_LENGTH = 256
STATE = "index.json"
EMBEDDINGS = "embeddings.f32"
PassageEncoder = Callable[[Sequence[Passage]], Matrix]


@dataclass(frozen=True)
class DPRRunConfig:
    """Everything the DPR pipeline needs."""

    question_encoder: Path
    ctx_encoder: Path | None
    reader: Path
    corpus: Path
    index_kind: str = "flat"
    index_path: Path | None = None
    top_k: int = 100
    read_k: int = 50
    max_span_length: int = 10
    reader_max_length: int = 350
    batch_size: int = 16
    encode_batch_size: int = 64
    reader_batch_size: int = 50
    device: str = "auto"
    precision: str = "auto"
    passage_embeddings: tuple[Path, ...] = ()
    hnsw_m: int = 32
    ef_search: int = 128
    nlist: int = 0
    nprobe: int = 64

    def index_params(self) -> IndexParams:
        """The index kind and knobs."""
        return IndexParams(kind=self.index_kind, hnsw_m=self.hnsw_m, ef_search=self.ef_search,
                           nlist=self.nlist, nprobe=self.nprobe)

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings for the metadata sidecar."""
        def plain(value: Any) -> Any:
            if isinstance(value, Path):  # its name: the folders are this machine's
                return value.name
            if isinstance(value, tuple):
                return [plain(v) for v in value]
            return value

        return {k: plain(v) for k, v in asdict(self).items()}


def require_corpus(path: Path | None) -> Path:
    """Return the corpus path or fail with a message naming it."""
    if path is None:
        raise click.BadParameter("the dpr runner needs --corpus FILE (psgs_w100.tsv format)",
                                 param_hint="--corpus")
    if not path.is_file():
        raise click.BadParameter(f"corpus file not found: {path}", param_hint="--corpus")
    return path


def expand_shards(patterns: Sequence[str | Path]) -> tuple[Path, ...]:
    """DPR shard files named by PATTERNS (paths or globs), sorted per pattern."""
    found: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(pattern)))
        if not matches:
            raise click.BadParameter(f"no embedding shard matches {pattern}",
                                     param_hint="--passage-embeddings")
        found.extend(Path(m) for m in matches)
    return tuple(dict.fromkeys(found))


def encode_passages(model: Any, tokenizer: Any, passages: Sequence[Passage],
                    placement: devices.Placement | None = None) -> Matrix:
    """Encode one batch of (title, text) pairs with the context encoder; (n, d) float32."""
    import torch  # lazy: see the module docstring

    where = placement or devices.cpu()
    enc = tokenizer([p.title for p in passages], [p.text for p in passages], truncation=True,
                    max_length=PASSAGE_MAX_LENGTH, padding=True, return_tensors="pt")
    with torch.no_grad(), where.autocast():
        out = model(**where.tensors(enc)).pooler_output
    return np.asarray(out.float().cpu().numpy(), dtype=np.float32)


def encode_questions(model: Any, tokenizer: Any, questions: Sequence[str],
                     placement: devices.Placement | None = None) -> Matrix:
    """Encode a batch of questions with the question encoder; (n, d) float32."""
    import torch  # lazy: see the module docstring

    where = placement or devices.cpu()
    enc = tokenizer(list(questions), truncation=True, max_length=PASSAGE_MAX_LENGTH,
                    padding=True, return_tensors="pt")
    with torch.no_grad(), where.autocast():
        out = model(**where.tensors(enc)).pooler_output
    return np.asarray(out.float().cpu().numpy(), dtype=np.float32)


def _saved_state(folder: Path, info: dict[str, Any]) -> dict[str, Any] | None:
    """The state of FOLDER's index if it was built for INFO; a different build is refused."""
    path = folder / STATE
    if not path.is_file():
        return None
    saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if {k: saved.get(k) for k in info} != info:
        raise click.ClickException(
            f"the index in {folder} was built for another corpus, encoder or index kind "
            f"({ {k: saved.get(k) for k in info} }); remove it or pass another --index-path")
    return saved


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    """Write FOLDER's index.json."""
    (folder / STATE).write_text(json.dumps(state, indent=2), encoding="utf-8")


def build_index(corpus: Path, folder: Path, params: IndexParams, info: dict[str, Any],
                encoder: Callable[[], PassageEncoder] | None = None,
                shards: Sequence[Path] = (), batch_size: int = 64,
                ) -> tuple[PassageIndex, CorpusTable]:
    """Load FOLDER's index, or build it from CORPUS (resuming an interrupted encoding).

    Passages are encoded in batches by the encoder ENCODER() returns (made only when
    something is left to encode), or read from DPR embedding SHARDS.
    """
    build_info = {**info, "kind": params.kind, "hnsw_m": params.hnsw_m,
                  "ef_construction": params.ef_construction, "nlist": params.nlist}
    saved = _saved_state(folder, build_info)
    embeddings = EmbeddingFile(folder / EMBEDDINGS)
    if saved is not None and saved.get("complete"):
        log.info("loaded the %s index from %s", params.kind, folder)
        return PassageIndex.load(folder, params, embeddings), CorpusTable.load(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_state(folder, {**build_info, "complete": False})
    table = CorpusTable.build(corpus, folder)
    rows_path = folder / PassageIndex.ROWS
    if shards:
        load_dpr_shards(shards, table, embeddings, rows_path)
    else:
        if encoder is None:
            raise click.ClickException("a context encoder or --passage-embeddings is needed "
                                       f"to build the index in {folder}")
        rows_path.unlink(missing_ok=True)
        done = embeddings.rows()
        if done > len(table):
            embeddings.reset()
            done = 0
        if done < len(table):
            if done:
                log.info("resuming the passage encoding at row %d of %d", done, len(table))
            encode = encoder()
            stream = (p for _, p in iter_rows(corpus, int(table.offsets[done]) if done else 0,
                                              done))
            with tqdm(total=len(table), initial=done, desc="encode passages",
                      unit="passage") as progress:
                for batch in iter_batches(stream, batch_size):
                    embeddings.append(encode(batch))
                    progress.update(len(batch))
    rows = np.memmap(rows_path, dtype=np.int64, mode="r") if shards else None
    index = PassageIndex.build(params, embeddings.matrix(), rows,
                               embeddings.chunks(params.add_chunk))
    index.save(folder)
    _write_state(folder, {**build_info, "complete": True, "passages": len(table),
                          "vectors": index.ntotal, "dim": embeddings.dim})
    return index, table


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


def _index_info(cfg: DPRRunConfig) -> dict[str, Any]:
    """What a saved index depends on: the corpus and the encoder (or embedding shards)."""
    info: dict[str, Any] = {"corpus_sha256": sha256_file(cfg.corpus)}
    if cfg.passage_embeddings:
        # hashing ~65 GB of shards would take minutes; names and sizes identify a release
        info["passage_embeddings"] = [[p.name, p.stat().st_size]
                                      for p in cfg.passage_embeddings]
    else:
        info["ctx_encoder_sha256"] = _folder_digest(cfg.ctx_encoder) if cfg.ctx_encoder else ""
    return info


class DPRPipeline:
    """Retrieve with the DPR encoders and index, then read the best span."""

    def __init__(self, cfg: DPRRunConfig, passages: PassageStore, index: PassageIndex,
                 q_model: Any, q_tok: Any, reader: Any, reader_tok: Any,
                 placement: devices.Placement | None = None,
                 workdir: tempfile.TemporaryDirectory[str] | None = None) -> None:
        """Assemble a pipeline from loaded parts (use build()); models move to the device."""
        self.placement = placement or devices.cpu()
        self.cfg, self.passages, self.index = cfg, passages, index
        self.q_model, self.q_tok = self.placement.model(q_model), q_tok
        self.reader, self.reader_tok = self.placement.model(reader), reader_tok
        # an index built without --index-path lives in a temporary folder as long as we do
        self.workdir = workdir

    @classmethod
    def build(cls, cfg: DPRRunConfig, reader_override: Any = None) -> DPRPipeline:
        """Load encoders, reader and corpus table; load the saved index or build (and save) it."""
        from transformers import (
            DPRContextEncoder,
            DPRContextEncoderTokenizer,
            DPRQuestionEncoder,
            DPRQuestionEncoderTokenizer,
            DPRReader,
            DPRReaderTokenizer,
        )

        placement = devices.resolve(cfg.device, cfg.precision)
        log.info("DPR on %s", placement.describe())

        def passage_encoder() -> PassageEncoder:
            if cfg.ctx_encoder is None:
                raise click.BadParameter("the dpr runner needs --ctx-encoder DIR or "
                                         "--passage-embeddings", param_hint="--ctx-encoder")
            model: Any = placement.model(DPRContextEncoder.from_pretrained(str(cfg.ctx_encoder)))
            model.eval()
            tok = DPRContextEncoderTokenizer.from_pretrained(str(cfg.ctx_encoder))
            return lambda batch: encode_passages(model, tok, batch, placement)

        workdir = None if cfg.index_path else tempfile.TemporaryDirectory(prefix="dpr-index-")
        folder = cfg.index_path or Path(workdir.name if workdir else ".")
        index, table = build_index(cfg.corpus, folder, cfg.index_params(), _index_info(cfg),
                                   passage_encoder, cfg.passage_embeddings,
                                   cfg.encode_batch_size)
        q_model = DPRQuestionEncoder.from_pretrained(str(cfg.question_encoder))
        q_tok = DPRQuestionEncoderTokenizer.from_pretrained(str(cfg.question_encoder))
        reader = reader_override or DPRReader.from_pretrained(str(cfg.reader))
        reader_tok = DPRReaderTokenizer.from_pretrained(str(cfg.reader))
        return cls(cfg, PassageStore(cfg.corpus, table), index, q_model, q_tok, reader,
                   reader_tok, placement, workdir)

    def retrieve(self, queries: Sequence[str]) -> list[list[int]]:
        """Corpus rows of the top-k passages for each query, best first."""
        self.q_model.eval()
        embeddings = encode_questions(self.q_model, self.q_tok, queries, self.placement)
        _, rows = self.index.search(embeddings, self.cfg.top_k)
        return [[int(i) for i in row if i >= 0] for row in rows]

    def _reader_logits(self, query: str, chosen: Sequence[Passage],
                       ) -> Iterator[tuple[list[int], list[float], list[float], float]]:
        """(input ids, start logits, end logits, relevance) per passage, in reader batches."""
        import torch  # lazy: see the module docstring

        for batch in iter_batches(iter(chosen), self.cfg.reader_batch_size):
            enc = reader_inputs(self.reader_tok, query, batch, self.cfg.reader_max_length)
            with torch.no_grad(), self.placement.autocast():
                out = self.reader(**self.placement.tensors(enc))
            relevance = out.relevance_logits.view(-1).float().cpu().tolist()
            starts = out.start_logits.float().cpu().tolist()
            ends = out.end_logits.float().cpu().tolist()
            # each passage is scored on its own, so batches of passages compare directly
            yield from zip(enc["input_ids"].tolist(), starts, ends, relevance, strict=True)

    def read(self, query: str, candidates: Sequence[int]) -> str:
        """Answer from the most relevant of the first read_k passages (DPR's prediction)."""
        chosen = [self.passages[i] for i in candidates[:self.cfg.read_k]]
        if not chosen:
            return ""
        self.reader.eval()
        scored = list(self._reader_logits(query, chosen))
        # most relevant passage first (ties: retrieval order); next one if a passage is empty
        for p in sorted(range(len(scored)), key=lambda i: -scored[i][3]):
            ids, starts, ends, _ = scored[p]
            decoded = decode_answer(self.reader_tok, ids, starts, ends, self.cfg.max_span_length)
            if decoded is not None:
                return decoded[0]
        return ""

    def predict(self, batch: list[QAItem]) -> list[str]:
        """Answers for a batch of items (retrieval batched, reading per question)."""
        retrieved = self.retrieve([item.query for item in batch])
        return [self.read(item.query, hits) for item, hits in zip(batch, retrieved, strict=True)]


def _folder_digest(folder: Path) -> str:
    """sha256 over the files of a checkpoint folder (ties a saved index to its encoder)."""
    found = fingerprint(folder)
    return found["sha256"] if found else ""
