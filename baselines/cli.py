"""Command line interface: ``python -m baselines run|finetune|score-id``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from baselines import bart, devices, dpr, nn_train
from baselines import identification as ident
from baselines.commands import (
    default_threads,
    finetune_record,
    require_data,
    seed_everything,
    set_threads,
)
from baselines.corpus import count_passages
from baselines.dpr_cli import config_from_options, dpr_options, run_fingerprints
from baselines.finetune_cli import finetune
from baselines.language_model import run_language_model
from baselines.loop import run_batches
from baselines.metrics import binary_metrics
from baselines.output import (
    OutputFormatError,
    ResumableWriter,
    RunMeta,
    fingerprint,
    model_shape,
    path_name,
)
from baselines.release import (
    DATA_ENV,
    ID_TRACKS,
    QA_TRACKS,
    SETTINGS,
    SPLITS,
    TRACKS,
    IDItem,
    QAItem,
    ReleaseError,
    data_fingerprint,
    load_id_items,
    load_qa_items,
    qa_key,
)
from baselines.runners import LANGUAGE_MODEL_RUNNERS, LANGUAGE_MODEL_TRACKS, QA_RUNNERS, RUNNERS

existing_dir = click.Path(exists=True, file_okay=False, path_type=Path)
existing_path = click.Path(exists=True, path_type=Path)


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def main(verbose: bool) -> None:
    """SituatedQA baselines: run DPR / BART / identification runners, fine-tune, score."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


@main.command()
@click.argument("runner", type=click.Choice(RUNNERS))
@click.option("--track", required=True, type=click.Choice(TRACKS), help="Benchmark track.")
@click.option("--split", default="test", show_default=True, type=click.Choice(SPLITS))
@click.option("--setting", default="unmodified", show_default=True, type=click.Choice(SETTINGS),
              help="Query setting (QA runners); finetuned = query-modified with a fine-tuned "
                   "checkpoint.")
@click.option("--data", type=click.Path(path_type=Path), envvar=DATA_ENV,
              help=f"Release folder (default ${DATA_ENV}).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Output JSONL; an existing file is resumed.")
@click.option("--batch-size", default=16, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--limit", type=click.IntRange(min=0), help="Only the first N items.")
@click.option("--threads", default=default_threads, type=click.IntRange(min=1),
              help="CPU threads of every pool: torch's, BLAS's and OpenMP's (default: half "
                   f"the CPUs this process may use, at least one: {default_threads()} here).")
@dpr_options
@click.option("--model", type=click.Path(path_type=Path),
              help="BART folder, or a raw state-dict .pt (then --config is needed).")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="BART config folder or config.json for a .pt state dict.")
@click.option("--tokenizer", type=click.Path(path_type=Path), help="BART tokenizer folder.")
@click.option("--epochs", default=10, show_default=True, type=click.IntRange(min=1),
              help="id-minilm training epochs.")
@click.option("--lr", default=5e-5, show_default=True, type=float, help="id-minilm learning rate.")
@click.option("--max-length", default=64, show_default=True, type=click.IntRange(min=8),
              help="id-minilm max tokens.")
@click.option("--init", "init_path", type=click.Path(path_type=Path),
              help="id-minilm initial weights (default: the packaged MiniLM-L6).")
@click.option("--model-dir", type=click.Path(file_okay=False, path_type=Path),
              help="id-minilm: save the trained classifier here (reused on resume).")
@click.option("--embedder", default="auto", show_default=True,
              type=click.Choice(nn_train.EMBEDDERS),
              help="nn-train: MiniLM sentence embeddings (--model: another folder) or TF-IDF; "
                   "auto = MiniLM where torch is installed.")
@devices.device_option
@devices.precision_option
def run(runner: str, track: str, split: str, setting: str, data: Path | None, output: Path,
        batch_size: int, seed: int, limit: int | None, threads: int, **options: Any) -> None:
    """Run a baseline on a track and split and write predictions to OUTPUT (resumable)."""
    data_dir = require_data(data)
    if runner in LANGUAGE_MODEL_RUNNERS:
        _run_language_model(runner, track, split, data_dir, output, batch_size, seed, limit,
                            threads)
        return
    if runner in QA_RUNNERS and track not in QA_TRACKS:
        raise click.BadParameter(f"{runner} answers questions; use a QA track "
                                 f"({', '.join(QA_TRACKS)})", param_hint="--track")
    if runner not in QA_RUNNERS and track not in ID_TRACKS:
        raise click.BadParameter(f"{runner} is an identification runner; use "
                                 f"{' or '.join(ID_TRACKS)}", param_hint="--track")
    if runner not in QA_RUNNERS and setting != "unmodified":
        raise click.BadParameter(f"{runner} classifies the question alone; --setting applies "
                                 f"to {', '.join(QA_RUNNERS)} only", param_hint="--setting")
    seed_everything(seed)
    set_threads(threads)
    try:
        if runner in QA_RUNNERS:
            _run_qa(runner, track, split, setting, data_dir, output, batch_size, seed, limit,
                    options)
        else:
            _run_id(runner, track, split, data_dir, output, batch_size, seed, limit, options)
    except (ReleaseError, OutputFormatError) as error:
        raise click.ClickException(str(error)) from None


def _run_language_model(runner: str, track: str, split: str, data_dir: Path, output: Path,
                        batch_size: int, seed: int, limit: int | None, threads: int) -> None:
    """A language model through lm-eval: its options are the task's, not --setting's."""
    context = click.get_current_context()
    if context.get_parameter_source("setting") is not click.core.ParameterSource.DEFAULT:
        raise click.BadParameter(f"{runner} asks the lm-eval task's prompt, which is "
                                 "query-modified; --setting does not apply", param_hint="--setting")
    if track not in LANGUAGE_MODEL_TRACKS:
        raise click.BadParameter(f"{runner} answers {' and '.join(LANGUAGE_MODEL_TRACKS)}",
                                 param_hint="--track")
    shots = RUNNERS[runner].shots or 0
    try:
        run_language_model(runner, shots, track, split, data_dir, output, batch_size, seed,
                           limit, threads, chat=RUNNERS[runner].chat)
    except ReleaseError as error:
        raise click.ClickException(str(error)) from None


def _run_qa(runner: str, track: str, split: str, setting: str, data_dir: Path, output: Path,
            batch_size: int, seed: int, limit: int | None, options: dict[str, Any]) -> None:
    """Load the items, build the predictor of RUNNER and run the resumable loop."""
    items = load_qa_items(data_dir, track, split, setting)
    meta = RunMeta(runner, track, split, {"setting": setting, "batch_size": batch_size,
                                          "limit": limit}, seed)
    load_predictor: Callable[[], Callable[[list[QAItem]], list[str]]]
    checkpoint: Path | None
    if runner == "dpr":
        cfg = config_from_options(options, batch_size)
        used = devices.resolve(cfg.device, cfg.precision).describe()
        meta.settings.update({
            **cfg.describe(), "device_used": used["device"], "precision_used": used["precision"],
            "corpus_passages": count_passages(cfg.corpus),
            "architectures": {"reader": model_shape(cfg.reader),
                              "question_encoder": model_shape(cfg.question_encoder)}})
        meta.fingerprints = run_fingerprints(cfg)
        checkpoint = cfg.reader

        def load_predictor() -> Callable[[list[QAItem]], list[str]]:
            return dpr.DPRPipeline.build(cfg).predict
    elif runner == "nn-train":
        nn_cfg = nn_train.make_config(data_dir, track, setting, options["embedder"],
                                      options["model"], options["device"], options["precision"],
                                      batch_size)
        meta.settings.update(nn_cfg.describe())
        meta.fingerprints = nn_cfg.fingerprints()
        checkpoint = None

        def load_predictor() -> Callable[[list[QAItem]], list[str]]:
            return nn_cfg.build().predict
    else:
        source = bart.resolve_source(options["model"], options["config_path"], options["tokenizer"])
        placement = devices.resolve(options["device"], options["precision"])
        meta.settings.update({**source.describe(), **placement.describe(), "architectures": {
            "model": model_shape(source.config or source.model)}})
        meta.fingerprints = {"model": fingerprint(source.model),
                             "config": fingerprint(source.config),
                             "tokenizer": fingerprint(source.tokenizer)}
        checkpoint = source.model

        def load_predictor() -> Callable[[list[QAItem]], list[str]]:
            return bart.BartPredictor.load(source, placement).predict

    finetuned = finetune_record(checkpoint) if checkpoint is not None else None
    if setting == "finetuned" and finetuned is None:
        logging.getLogger(__name__).warning(
            "--setting finetuned but %s has no finetune.json: is it a fine-tuned checkpoint?",
            checkpoint)

    # models load on the first pending batch: resuming a finished run loads nothing
    loaded: list[Callable[[list[QAItem]], list[str]]] = []

    def predict_records(batch: list[QAItem]) -> list[dict[str, Any]]:
        if not loaded:
            loaded.append(load_predictor())
        answers = loaded[0](batch)
        return [{**item.record, "pred_answer": answer} for item, answer in
                zip(batch, answers, strict=True)]

    meta.fingerprints["data"] = data_fingerprint(data_dir, track, split)
    with ResumableWriter(output, lambda record: qa_key(track, record)) as writer:
        written = run_batches(items, lambda item: item.key, predict_records, writer, batch_size,
                              limit, desc=f"{runner} {track}")
        meta.write(output, written, writer.resumed, {"items": len(items), "finetune": finetuned})
    click.echo(f"wrote {written} records to {output} ({writer.resumed} already there)")


def _run_id(runner: str, track: str, split: str, data_dir: Path, output: Path, batch_size: int,
            seed: int, limit: int | None, options: dict[str, Any]) -> None:
    """Train the identification baseline on train (tuned on dev) and label SPLIT."""
    test = load_id_items(data_dir, track, split)
    settings: dict[str, Any] = {"setting": "unmodified", "batch_size": batch_size, "limit": limit}
    meta = RunMeta(runner, track, split, settings, seed)
    extra: dict[str, Any] = {}
    with ResumableWriter(output, lambda record: (record["id"],)) as writer:
        if all(writer.is_done((item.id,)) for item in test[:limit]):
            preds: list[ident.IDPrediction] = []
        else:
            train = load_id_items(data_dir, track, "train")
            if runner == "id-random":
                preds = ident.predict_random(train, test, seed)
                extra["train_positive_rate"] = ident.positive_rate(train)
            elif runner == "id-tfidf":
                dev = load_id_items(data_dir, track, "dev")
                preds, extra = ident.predict_tfidf(train, dev, test, seed)
            else:
                dev = load_id_items(data_dir, track, "dev")
                init = options["init_path"] or ident.minilm_path()
                if not Path(init).is_dir():
                    raise click.BadParameter(f"initial weights folder not found: {init}",
                                             param_hint="--init")
                cfg = ident.ClassifierConfig(lr=options["lr"], epochs=options["epochs"],
                                             batch_size=batch_size,
                                             max_length=options["max_length"], seed=seed)
                settings.update({"lr": cfg.lr, "epochs": cfg.epochs,
                                 "max_length": cfg.max_length, "init": path_name(init)})
                meta.fingerprints = {"init": fingerprint(Path(init))}
                placement = devices.resolve(options["device"], options["precision"])
                settings.update(placement.describe())
                preds, extra = ident.predict_classifier(
                    Path(init), options["model_dir"], train, dev, test, cfg, placement)
        meta.fingerprints.update({f"data_{name}": data_fingerprint(data_dir, track, name)
                                  for name in dict.fromkeys(("train", "dev", split))})
        by_item = {item.id: pred for item, pred in zip(test, preds, strict=True)}

        def records(batch: list[IDItem]) -> list[dict[str, Any]]:
            return [{"id": item.id, "label": by_item[item.id].label,
                     "score": round(by_item[item.id].score, 6)} for item in batch]

        written = run_batches(test, lambda item: (item.id,), records, writer, batch_size, limit,
                              desc=runner)
        meta.write(output, written, writer.resumed, {"items": len(test), "training": extra})
    click.echo(f"wrote {written} records to {output} ({writer.resumed} already there)")


@main.command("score-id")
@click.argument("predictions", type=existing_path)
@click.option("--track", required=True, type=click.Choice(ID_TRACKS))
@click.option("--split", default="test", show_default=True, type=click.Choice(SPLITS))
@click.option("--data", type=click.Path(path_type=Path), envvar=DATA_ENV,
              help=f"Release folder (default ${DATA_ENV}).")
def score_id(predictions: Path, track: str, split: str, data: Path | None) -> None:
    """Score identification PREDICTIONS (accuracy/precision/recall/F1, positive = dependent)."""
    gold = {item.id: bool(item.label) for item in load_id_items(require_data(data), track, split)}
    pred: dict[int, bool] = {}
    for line in predictions.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            pred[record["id"]] = bool(record["label"])
    missing = set(gold) - set(pred)
    if missing:
        raise click.ClickException(f"{len(missing)} of {len(gold)} questions have no prediction")
    ids = sorted(gold)
    metrics = binary_metrics([gold[i] for i in ids], [pred[i] for i in ids])
    click.echo(json.dumps({k: round(v, 1) for k, v in metrics.items()}))


main.add_command(finetune)
