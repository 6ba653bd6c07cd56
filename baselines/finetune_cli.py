"""The ``finetune`` subcommand: one model per context type, best dev-EM epoch saved."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from baselines import devices
from baselines.bart import load_bart, resolve_source
from baselines.commands import require_data, require_dir, seed_everything, set_threads
from baselines.dpr import DPRPipeline, DPRRunConfig, require_corpus
from baselines.finetune import CONTEXTS, FinetuneConfig, finetune_bart, finetune_reader
from baselines.output import fingerprint
from baselines.release import DATA_ENV, ReleaseError, context_items


@click.command()
@click.argument("model_kind", type=click.Choice(("bart", "dpr-reader")))
@click.option("--context", required=True, type=click.Choice(CONTEXTS),
              help="Context type: one fine-tuned model each.")
@click.option("--data", type=click.Path(path_type=Path), envvar=DATA_ENV,
              help=f"Release folder (default ${DATA_ENV}).")
@click.option("--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where the best checkpoint is saved.")
@click.option("--epochs", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--batch-size", default=8, show_default=True, type=click.IntRange(min=1),
              help="Training batch size.")
@click.option("--predict-batch-size", default=32, show_default=True,
              type=click.IntRange(min=1), help="Batch size of the dev evaluation.")
@devices.device_option
@devices.precision_option
@click.option("--lr", default=1e-5, show_default=True, type=float, help="AdamW learning rate.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--limit-train", type=click.IntRange(min=1), help="Only the first N train items.")
@click.option("--limit-dev", type=click.IntRange(min=1), help="Only the first N dev items.")
@click.option("--model", type=click.Path(path_type=Path), help="bart: folder or .pt state dict.")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="bart: config for a .pt state dict.")
@click.option("--tokenizer", type=click.Path(path_type=Path), help="bart: tokenizer folder.")
@click.option("--question-encoder", type=click.Path(path_type=Path))
@click.option("--ctx-encoder", type=click.Path(path_type=Path))
@click.option("--reader", type=click.Path(path_type=Path), help="dpr-reader: starting reader.")
@click.option("--corpus", type=click.Path(path_type=Path))
@click.option("--index", "index_kind", default="flat", show_default=True,
              type=click.Choice(("flat", "hnsw", "numpy")))
@click.option("--index-path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--top-k", default=100, show_default=True, type=click.IntRange(min=1))
@click.option("--read-k", default=50, show_default=True, type=click.IntRange(min=1))
@click.option("--negatives", default=3, show_default=True, type=click.IntRange(min=0),
              help="dpr-reader: retrieved passages without an answer per question.")
@click.option("--max-span-length", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--reader-max-length", default=350, show_default=True, type=click.IntRange(min=8))
def finetune(model_kind: str, context: str, data: Path | None, output_dir: Path, epochs: int,
             batch_size: int, predict_batch_size: int, device: str, precision: str, lr: float,
             seed: int, threads: int, limit_train: int | None, limit_dev: int | None,
             **options: Any) -> None:
    """Continue training BART or the DPR reader on SituatedQA train (query-modified)."""
    data_dir = require_data(data)
    seed_everything(seed)
    set_threads(threads)
    placement = devices.resolve(device, precision)
    cfg = FinetuneConfig(context, epochs, batch_size, lr, seed, options["negatives"],
                         predict_batch_size)
    try:
        train = context_items(data_dir, context, "train")[:limit_train]
        dev = context_items(data_dir, context, "dev")[:limit_dev]
    except ReleaseError as error:
        raise click.ClickException(str(error)) from None
    started = time.time()
    if model_kind == "bart":
        source = resolve_source(options["model"], options["config_path"], options["tokenizer"])
        model, tokenizer = load_bart(source, placement)
        base = {"model": fingerprint(source.model), **source.describe(), **placement.describe()}
        info = finetune_bart(model, tokenizer, train, dev, cfg, output_dir, base, placement)
    else:
        run_cfg = DPRRunConfig(
            question_encoder=require_dir(options["question_encoder"], "--question-encoder",
                                         "dpr-reader"),
            ctx_encoder=require_dir(options["ctx_encoder"], "--ctx-encoder", "dpr-reader"),
            reader=require_dir(options["reader"], "--reader", "dpr-reader"),
            corpus=require_corpus(options["corpus"]), index_kind=options["index_kind"],
            index_path=options["index_path"], top_k=options["top_k"], read_k=options["read_k"],
            max_span_length=options["max_span_length"],
            reader_max_length=options["reader_max_length"], batch_size=batch_size)
        pipeline = DPRPipeline.build(run_cfg)
        base = {"reader": fingerprint(run_cfg.reader), **run_cfg.describe(),
                **placement.describe()}
        try:
            info = finetune_reader(pipeline, train, dev, cfg, output_dir, base, placement)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    summary = {"best_epoch": info["best_epoch"], "dev_em": round(info["dev_em"], 2),
               "start_dev_em": round(info["start_dev_em"], 2),
               "wall_time_seconds": round(time.time() - started, 1), "output_dir": str(output_dir)}
    click.echo(json.dumps(summary))
