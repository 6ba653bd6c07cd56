"""The ``finetune`` subcommand: one model per context type, best dev-EM epoch saved."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from baselines import devices
from baselines.bart import load_bart, resolve_source
from baselines.commands import default_threads, require_data, seed_everything, set_threads
from baselines.dpr import DPRPipeline
from baselines.dpr_cli import config_from_options, dpr_options
from baselines.finetune import FinetuneConfig, finetune_bart, finetune_reader
from baselines.output import fingerprint
from baselines.release import DATA_ENV, FINETUNE_CONTEXTS, ReleaseError, context_items


@click.command()
@click.argument("model_kind", type=click.Choice(("bart", "dpr-reader")))
@click.option("--context", required=True, type=click.Choice(FINETUNE_CONTEXTS),
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
@click.option("--threads", default=default_threads, type=click.IntRange(min=1),
              help="CPU threads of every pool: torch's, BLAS's and OpenMP's (default: half "
                   "the CPUs this process may use, at least one).")
@click.option("--limit-train", type=click.IntRange(min=1), help="Only the first N train items.")
@click.option("--limit-dev", type=click.IntRange(min=1), help="Only the first N dev items.")
@click.option("--model", type=click.Path(path_type=Path), help="bart: folder or .pt state dict.")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="bart: config for a .pt state dict.")
@click.option("--tokenizer", type=click.Path(path_type=Path), help="bart: tokenizer folder.")
@dpr_options
@click.option("--negatives", default=3, show_default=True, type=click.IntRange(min=0),
              help="dpr-reader: retrieved passages without an answer per question.")
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
        run_cfg = config_from_options({**options, "device": device, "precision": precision},
                                      batch_size, "dpr-reader")
        pipeline = DPRPipeline.build(run_cfg)
        base = {"reader": fingerprint(run_cfg.reader), **run_cfg.describe(),
                **placement.describe()}
        try:
            # the reader trains where the pipeline put it (the same --device/--precision)
            info = finetune_reader(pipeline, train, dev, cfg, output_dir, base,
                                   pipeline.placement)
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    summary = {"best_epoch": info["best_epoch"], "dev_em": round(info["dev_em"], 2),
               "start_dev_em": round(info["start_dev_em"], 2),
               "wall_time_seconds": round(time.time() - started, 1), "output_dir": str(output_dir)}
    click.echo(json.dumps(summary))
