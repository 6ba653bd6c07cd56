#!/usr/bin/env python
"""Benchmark: index a synthetic psgs_w100.tsv of N passages with the streaming DPR code.

Writes a corpus of N passages (100 random words each, DPR's id<TAB>text<TAB>title layout),
builds a tiny random DPR context encoder from a config (no weights are downloaded), and times
``baselines.dpr.build_index``: the corpus scan (row -> offset table), batch encoding into the
on-disk embedding file, and the faiss index filled chunk by chunk. Prints passages/s per
stage, peak RSS (the whole process) and the size on disk of the index folder, then the same
figures extrapolated linearly to 21M passages at DPR's 768 dimensions. ``--compare`` also
builds HNSW / IVF indexes over the same embeddings and reports their recall@100 against flat;
with ``--embeddings DIR`` it measures only that, on the real embeddings of an index folder
built by the dpr runner (``--query-vectors`` takes an .npy of encoded questions).

The tiny encoder (2 layers, 32 wide) makes encoding far faster than DPR's BERT-base: the
encoding rate here measures the pipeline around the model, not a real encoder.

Usage: python scripts/bench_dpr_index.py --passages 1000000 [--compare hnsw,ivf]
       python scripts/bench_dpr_index.py --embeddings index/wiki2021 --compare hnsw,ivf
"""

from __future__ import annotations

import json
import platform
import random
import resource
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import click
import faiss
import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from baselines import devices  # noqa: E402  (after the sys.path line: run as a script)
from baselines.corpus import Passage  # noqa: E402
from baselines.dpr import EMBEDDINGS, build_index, encode_passages  # noqa: E402
from baselines.passage_index import EmbeddingFile, IndexParams, PassageIndex  # noqa: E402

WIKIPEDIA = 21_015_324  # passages of DPR's psgs_w100.tsv
DPR_DIM = 768
PASSAGE_POSITIONS = 512


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_bytes(folder: Path) -> dict[str, int]:
    """Size of each file of FOLDER."""
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}


def write_corpus(path: Path, n: int, words: int, vocab: list[str], seed: int) -> None:
    """N passages of WORDS random vocabulary words, in psgs_w100.tsv layout."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id\ttext\ttitle\n")
        for i in range(1, n + 1):
            text = " ".join(rng.choices(vocab, k=words))
            handle.write(f"{i}\t{text}\t{' '.join(rng.choices(vocab, k=2))}\n")


def tiny_encoder(folder: Path, vocab: list[str], dim: int) -> tuple[Any, Any]:
    """A random DPR context encoder of width DIM and its tokenizer over VOCAB."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *vocab]) + "\n",
        encoding="utf-8")
    tokenizer_class: Any = transformers.DPRContextEncoderTokenizer  # untyped in transformers
    tok = tokenizer_class(str(folder / "vocab.txt"))
    torch.manual_seed(0)
    cfg = transformers.DPRConfig(vocab_size=len(tok), hidden_size=dim, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=2 * dim,
                                 max_position_embeddings=PASSAGE_POSITIONS)
    model: Any = transformers.DPRContextEncoder(cfg)
    return model.eval(), tok


def hash_encoder(dim: int) -> Callable[[Sequence[Passage]], np.ndarray]:
    """A model-free encoder (byte histogram times a fixed projection): times the rest."""
    projection = np.random.default_rng(0).normal(size=(256, dim)).astype(np.float32)

    def encode(batch: Sequence[Passage]) -> np.ndarray:
        counts = np.stack([np.bincount(np.frombuffer(f"{p.title} {p.text}".encode(), np.uint8),
                                       minlength=256) for p in batch])
        return (counts.astype(np.float32) @ projection).astype(np.float32)

    return encode


def word_encoder(dim: int, vocab: list[str]) -> Callable[[Sequence[Passage]], np.ndarray]:
    """A model-free encoder: the sum of a fixed random vector per word (spread, no ties)."""
    vectors = np.random.default_rng(0).normal(size=(len(vocab) + 1, dim)).astype(np.float32)
    index = {word: i for i, word in enumerate(vocab)}

    def encode(batch: Sequence[Passage]) -> np.ndarray:
        return np.stack([vectors[[index.get(w, len(vocab)) for w in
                                  f"{p.title} {p.text}".split()]].sum(axis=0) for p in batch])

    return encode


def recall_at(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of the exact top-k found."""
    return float(np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact,
                                                                         strict=True)]))


def compare_kinds(embeddings: EmbeddingFile, q: np.ndarray, exact: np.ndarray, kinds: str,
                  ef_search: int, nprobe: int) -> dict[str, float]:
    """Build each of KINDS (comma-separated) over EMBEDDINGS: build seconds, recall@100."""
    found: dict[str, float] = {}
    for other in filter(None, kinds.split(",")):
        started = time.perf_counter()
        params = IndexParams(other, ef_search=ef_search, nprobe=nprobe)
        built = PassageIndex.build(params, embeddings.matrix(), None, embeddings.chunks(65536))
        found[f"{other}_build_s"] = round(time.perf_counter() - started, 1)
        found[f"{other}_recall_at_100_vs_flat"] = round(
            recall_at(built.search(q, 100)[1], exact), 4)
    return found


def recall_on(folder: Path, query_vectors: Path | None, queries: int, kinds: str,
              ef_search: int, nprobe: int) -> dict[str, Any]:
    """Recall@100 of KINDS against exact search on an index folder's embedding file."""
    embeddings = EmbeddingFile(folder / EMBEDDINGS)
    if not embeddings.rows():
        raise click.BadParameter(f"{folder} has no {EMBEDDINGS}", param_hint="--embeddings")
    if query_vectors is not None:
        q = np.load(query_vectors).astype(np.float32)
    else:
        # no questions given: stored passage vectors stand in for them (an easier task)
        picks = np.random.default_rng(0).choice(embeddings.rows(), queries, replace=False)
        q = np.asarray(embeddings.matrix()[np.sort(picks)], dtype=np.float32)
    flat = PassageIndex.build(IndexParams("flat"), embeddings.matrix(), None,
                              embeddings.chunks(65536))
    exact = flat.search(q, 100)[1]
    return {"embeddings": str(folder), "vectors": embeddings.rows(), "dim": embeddings.dim,
            "queries": len(q), "ef_search": ef_search, "nprobe": nprobe,
            **compare_kinds(embeddings, q, exact, kinds, ef_search, nprobe)}


@click.command()
@click.option("--passages", "n", default=100_000, show_default=True, type=click.IntRange(min=1))
@click.option("--words", default=100, show_default=True, type=click.IntRange(min=1))
@click.option("--dim", default=32, show_default=True, type=click.IntRange(min=8),
              help="Width of the tiny encoder (= embedding dimension).")
@click.option("--encoder", default="tiny-dpr", show_default=True,
              type=click.Choice(("tiny-dpr", "hash", "words")),
              help="tiny-dpr: a random 2-layer DPR encoder (its vectors nearly tie: not for "
                   "recall); hash: byte histograms, words: sums of random word vectors (no "
                   "model: they time the pipeline; words suits --compare).")
@click.option("--batch-size", default=256, show_default=True, type=click.IntRange(min=1))
@click.option("--index", "kind", default="flat", show_default=True,
              type=click.Choice(("flat", "hnsw", "ivf")))
@click.option("--compare", default="", help="Also build these kinds (hnsw,ivf): recall@100.")
@click.option("--queries", default=200, show_default=True, type=click.IntRange(min=1))
@click.option("--ef-search", default=128, show_default=True, type=click.IntRange(min=1),
              help="HNSW efSearch of --compare.")
@click.option("--nprobe", default=64, show_default=True, type=click.IntRange(min=1),
              help="IVF nprobe of --compare.")
@click.option("--embeddings", "embeddings_dir",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Only measure --compare recall on this index folder's real embeddings.")
@click.option("--query-vectors", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="With --embeddings: an .npy of question vectors (default: passage vectors).")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="torch and faiss threads (the machine is shared).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the corpus and index here (default: a temporary folder).")
def main(n: int, words: int, dim: int, encoder: str, batch_size: int, kind: str, compare: str,
         queries: int, ef_search: int, nprobe: int, embeddings_dir: Path | None,
         query_vectors: Path | None, threads: int, workdir: Path | None) -> None:
    """Index N synthetic passages and report passages/s, peak RSS and index size."""
    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)
    if embeddings_dir is not None:
        click.echo(json.dumps(recall_on(embeddings_dir, query_vectors, queries,
                                        compare or "hnsw,ivf", ef_search, nprobe), indent=2))
        return
    rng = random.Random(0)
    vocab = sorted({"".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9)))
                    for _ in range(5000)})
    with tempfile.TemporaryDirectory(prefix="bench-dpr-") as scratch:
        root = workdir or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        corpus = root / "psgs.tsv"
        started = time.perf_counter()
        write_corpus(corpus, n, words, vocab, seed=1)
        written = time.perf_counter() - started
        model, tok = tiny_encoder(root / "encoder", vocab, dim)
        placement = devices.resolve("auto")
        model = placement.model(model)
        rss_before = peak_rss_mb()
        folder = root / f"index-{kind}"
        started, cpu_started = time.perf_counter(), time.process_time()
        def tiny_dpr(batch: Sequence[Passage]) -> np.ndarray:
            return encode_passages(model, tok, batch, placement)

        encode = {"hash": hash_encoder(dim), "words": word_encoder(dim, vocab),
                  "tiny-dpr": tiny_dpr}[encoder]
        index, table = build_index(corpus, folder, IndexParams(kind), {"bench": n},
                                   lambda: encode, batch_size=batch_size)
        total = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        sizes = folder_bytes(folder)
        # queries: encoded synthetic passages of 12 words
        q_rng = random.Random(2)
        probe = [Passage("q", " ".join(q_rng.choices(vocab, k=12)), "") for _ in range(queries)]
        q = encode(probe)
        started = time.perf_counter()
        exact = index.search(q, 100)[1]
        search = (time.perf_counter() - started) / queries
        report: dict[str, Any] = {
            "machine": f"{platform.node()} {platform.machine()}, {threads} thread(s)",
            "date": date.today().isoformat(), "passages": len(table), "dim": dim,
            "encoder": encoder, "index": kind, "device": str(placement.device), "corpus_mb": round(
                corpus.stat().st_size / 2**20, 1), "corpus_write_s": round(written, 1),
            "build_s": round(total, 1), "passages_per_s": round(len(table) / total, 1),
            # CPU seconds of this process: less sensitive to other jobs on a shared machine
            "build_cpu_s": round(cpu, 1), "passages_per_cpu_s": round(len(table) / cpu, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1), "rss_before_build_mb": round(rss_before, 1),
            "index_folder_mb": {k: round(v / 2**20, 2) for k, v in sizes.items()},
            "search_ms_per_query_top100": round(1000 * search, 2),
        }
        report.update(compare_kinds(EmbeddingFile(folder / EMBEDDINGS), q, exact, compare,
                                    ef_search, nprobe))
        per_passage = sizes.get("index.faiss", 0) / len(table)
        scale = WIKIPEDIA / len(table)
        report["extrapolated_21M"] = {
            "build_hours_at_this_rate": round(total * scale / 3600, 1),
            "build_cpu_hours": round(cpu * scale / 3600, 1),
            "index_gb_at_dim_768": round(per_passage * DPR_DIM / dim * WIKIPEDIA / 2**30, 1),
            "table_gb": round((sizes.get("corpus.offsets.i64", 0) + sizes.get(
                "corpus.keys.i64", 0)) * scale / 2**30, 2),
        }
        click.echo(json.dumps(report, indent=2))


if __name__ == "__main__":
    from bench_report import recording

    with recording(__file__):
        main()
