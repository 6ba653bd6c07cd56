"""The dpr runner's command-line options and their conversion into a :class:`DPRRunConfig`.

``baselines.cli`` (``run``) and ``baselines.finetune_cli`` (``finetune dpr-reader``) share them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from baselines import devices
from baselines.commands import require_dir
from baselines.dpr import DPRRunConfig, expand_shards, require_corpus
from baselines.output import fingerprint
from baselines.passage_index import INDEX_KINDS

T = TypeVar("T")

_OPTIONS = [
    click.option("--question-encoder", type=click.Path(path_type=Path),
                 help="DPR question encoder folder."),
    click.option("--ctx-encoder", type=click.Path(path_type=Path),
                 help="DPR context encoder folder (not needed with --passage-embeddings)."),
    click.option("--reader", type=click.Path(path_type=Path), help="DPR reader folder."),
    click.option("--corpus", type=click.Path(path_type=Path),
                 help="Passages TSV (id, text, title), read as a stream."),
    click.option("--passage-embeddings", multiple=True,
                 help="DPR's precomputed passage embedding shards (pickled (id, vector) "
                      "lists); a path or a quoted glob, repeatable. Replaces encoding."),
    click.option("--index", "index_kind", default="flat", show_default=True,
                 type=click.Choice(INDEX_KINDS),
                 help="flat = exact faiss inner product; hnsw / ivf approximate; numpy exact."),
    click.option("--index-path", type=click.Path(file_okay=False, path_type=Path),
                 help="Folder to build (and resume) the index in, or load it from."),
    click.option("--hnsw-m", default=32, show_default=True, type=click.IntRange(min=4),
                 help="HNSW graph degree."),
    click.option("--ef-search", default=128, show_default=True, type=click.IntRange(min=1),
                 help="HNSW search beam (at least --top-k is used)."),
    click.option("--nlist", default=0, show_default=True, type=click.IntRange(min=0),
                 help="IVF lists (0: 4 * sqrt(passages))."),
    click.option("--nprobe", default=64, show_default=True, type=click.IntRange(min=1),
                 help="IVF lists searched per query."),
    click.option("--encode-batch-size", default=64, show_default=True,
                 type=click.IntRange(min=1), help="Passages per context-encoder batch."),
    click.option("--reader-batch-size", default=50, show_default=True,
                 type=click.IntRange(min=1), help="Passages per reader forward pass."),
    click.option("--top-k", default=100, show_default=True, type=click.IntRange(min=1)),
    click.option("--read-k", default=50, show_default=True, type=click.IntRange(min=1)),
    click.option("--max-span-length", default=10, show_default=True,
                 type=click.IntRange(min=1)),
    click.option("--reader-max-length", default=350, show_default=True,
                 type=click.IntRange(min=8)),
]


def dpr_options(func: Callable[..., T]) -> Callable[..., T]:
    """Add the dpr options (models, corpus, index, batch sizes) to a click command."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


def config_from_options(options: dict[str, Any], batch_size: int, runner: str = "dpr",
                        ) -> DPRRunConfig:
    """A checked DPRRunConfig from the parsed options (--device/--precision if present)."""
    shards = expand_shards(options.get("passage_embeddings") or ())
    device, precision = options.get("device", "auto"), options.get("precision", "auto")
    # fail on an unusable --device before any output is written (the models load later)
    devices.resolve(device, precision)
    ctx = options.get("ctx_encoder")
    return DPRRunConfig(
        question_encoder=require_dir(options["question_encoder"], "--question-encoder", runner),
        ctx_encoder=None if shards and ctx is None else require_dir(ctx, "--ctx-encoder",
                                                                   runner),
        reader=require_dir(options["reader"], "--reader", runner),
        corpus=require_corpus(options["corpus"]),
        index_kind=options["index_kind"], index_path=options["index_path"],
        top_k=options["top_k"], read_k=options["read_k"],
        max_span_length=options["max_span_length"],
        reader_max_length=options["reader_max_length"], batch_size=batch_size,
        encode_batch_size=options["encode_batch_size"],
        reader_batch_size=options["reader_batch_size"],
        device=device, precision=precision,
        passage_embeddings=shards, hnsw_m=options["hnsw_m"], ef_search=options["ef_search"],
        nlist=options["nlist"], nprobe=options["nprobe"])


def run_fingerprints(cfg: DPRRunConfig) -> dict[str, Any]:
    """Fingerprints of the models and corpus (shards by name and size: they are huge)."""
    found: dict[str, Any] = {name: fingerprint(getattr(cfg, name)) for name in
                             ("question_encoder", "ctx_encoder", "reader", "corpus")}
    if cfg.passage_embeddings:
        found["passage_embeddings"] = [{"name": p.name, "bytes": p.stat().st_size}
                                       for p in cfg.passage_embeddings]
    return found
