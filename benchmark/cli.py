"""`python -m benchmark`: fetch and import the release, write blank inputs, score offline."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import click

from .equivalence import LENIENT_RULES
from .formats import DEFAULT_MAX_BYTES, ValidationError, parse_predictions, wrong_split_hint
from .gold import GoldError, GoldSet, load_gold, read_gold_file
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED
from .release import (
    DATA_ENV,
    DEFAULT_DOWNLOAD_DIR,
    fetch_release,
    import_release,
    read_manifest,
    resolve_release_dir,
    verify_release,
)
from .scoring import ScoreResult, compare, score
from .tracks import DEFAULT_PRESENT_THRESHOLD, METRIC_LABELS, SPLITS, TRACKS, track_info

DEFAULT_GOLD_DIR = Path(__file__).resolve().parent.parent / "gold" / "data"

track_option = click.option("--track", type=click.Choice(TRACKS), required=True,
                            help="Benchmark track.")
split_option = click.option("--split", type=click.Choice(SPLITS), required=True,
                            help="Data split.")
data_option = click.option(
    "--from", "data", type=click.Path(file_okay=False, path_type=Path), envvar=DATA_ENV,
    help=f"Release folder (default: ${DATA_ENV}, else the canonical gold, else gold/release).")


def open_gold(data: Path | None, canonical: Path = DEFAULT_GOLD_DIR) -> GoldSet:
    """Canonical gold if imported and no release folder is named, else import in memory."""
    try:
        if data is None and (canonical / "meta.json").is_file():
            return load_gold(canonical)
        return import_release(resolve_release_dir(data))
    except GoldError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def main() -> None:
    """SituatedQA benchmark: exact scoring of the paper's tracks, offline."""


@main.command()
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path),
              default=DEFAULT_DOWNLOAD_DIR, show_default=True, help="Where to put the release.")
@data_option
def fetch(dest: Path, data: Path | None) -> None:
    """Download the release at the pinned commit (or copy a local one), checking SHA-256."""
    import requests

    manifest = read_manifest()
    try:
        if data is not None:
            verify_release(data, manifest)
            for name in manifest.files:
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(data / name, dest / name)
            click.echo(f"copied {len(manifest.files)} verified files from {data} to {dest}")
            return
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

        def progress(name: str, total: int) -> Callable[[int], None]:
            bar = tqdm(total=total or None, unit="B", unit_scale=True, desc=name, leave=False)

            def advance(n: int) -> None:
                bar.update(n)

            return advance

        with requests.Session() as session:
            fetched = fetch_release(
                dest, manifest, progress=progress,
                get=lambda url: session.get(url, stream=True, timeout=60))
    except requests.RequestException as exc:  # name the cause, not a traceback
        raise click.ClickException(f"download failed: {exc}") from None
    except (GoldError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{len(fetched)} files downloaded, all {len(manifest.files)} verified in {dest}")


@main.command("import")
@data_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              default=DEFAULT_GOLD_DIR, show_default=True, help="Canonical gold folder.")
@click.option("--present-threshold", type=int, default=DEFAULT_PRESENT_THRESHOLD,
              show_default=True, help="Year from which a present-day answer counts as Updated.")
def import_command(data: Path | None, out: Path, present_threshold: int) -> None:
    """Verify the release and write canonical gold for all six tracks."""
    try:
        gold = import_release(resolve_release_dir(data), present_threshold=present_threshold)
    except GoldError as exc:
        raise click.ClickException(str(exc)) from None
    gold.save(out)
    for track, split in gold.available():
        sizes = gold.get(track, split).partition_sizes()
        click.echo(f"{track:8} {split:5} {len(gold.get(track, split)):6}  "
                   + " ".join(f"{k}={v}" for k, v in sizes.items()))
    click.echo(f"canonical gold written to {out}")


@main.command()
@track_option
@split_option
@data_option
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-",
              help="Output JSONL file (default: standard output).")
def blank(track: str, split: str, data: Path | None, output: TextIO) -> None:
    """Write the blank input file (keys, questions, contexts; no answers) as JSONL."""
    gold = _split(open_gold(data), track, split)
    output.writelines(
        json.dumps(example.blank(), ensure_ascii=False) + "\n" for example in gold.examples)


def _split(gold: GoldSet, track: str, split: str) -> Any:
    try:
        return gold.get(track, split)
    except GoldError as exc:
        raise click.ClickException(str(exc)) from None


def _load_predictions(path: Path, gold_set: GoldSet, gold: Any, max_bytes: int) -> Any:
    try:
        return parse_predictions(path.read_bytes(), gold, filename=str(path), max_bytes=max_bytes)
    except ValidationError as exc:
        hint = wrong_split_hint(exc, gold_set, gold.track, gold.split)
        if hint:
            click.echo(f"{path}: {hint}", err=True)
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        if exc.truncated:
            click.echo(f"... and {exc.truncated} more problems", err=True)
        raise click.ClickException(f"{path}: rejected, nothing was scored") from None


def format_table(result: ScoreResult) -> str:
    """A readable table of metrics, CIs and counts (values rounded for display only).

    The lenient metrics (not in the paper) follow under their own heading, with the rule
    of each family.
    """
    lines = [f"{result.track} / {result.split}: {result.n} examples", ""]
    header = f"{'metric':<44}{'value':>8}   {'95% CI':<17}{'n':>6}"
    declared = set(track_info(result.track).lenient_metrics)  # f1 is also an id-track metric
    paper = [name for name in result.metrics if name not in declared]
    lenient = [name for name in result.metrics if name in declared]
    lines += [header, *(_table_row(result, name) for name in paper)]
    if lenient:
        lines += ["", "Not in the paper (lenient answer equivalence; never ranks):"]
        lines += [f"  {family}: {rule}" for family, rule in LENIENT_RULES.items()]
        lines += ["", header, *(_table_row(result, name) for name in lenient)]
    return "\n".join(lines)


def _table_row(result: ScoreResult, name: str) -> str:
    label = METRIC_LABELS.get(name, name)
    value = result.metrics[name]
    shown = "n/a" if value is None else f"{value:.2f}"
    ci = result.ci.get(name)
    interval = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return (f"{label + ' (' + name + ')':<44}{shown:>8}   {interval:<17}"
            f"{result.counts.get(name, 0):>6}")


@main.command("score")
@track_option
@split_option
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--resamples", type=click.IntRange(min=0), default=DEFAULT_RESAMPLES,
              show_default=True, help="Bootstrap resamples for the CIs (0: no CIs).")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="Bootstrap seed.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_BYTES,
              show_default=True, help="Largest accepted (decompressed) file size.")
@click.option("--paper-only", is_flag=True,
              help="Only the paper's metrics: no em_equiv or token F1 (QA tracks).")
@click.option("--gold", "gold_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Score against this gold file instead of the release: a published gold "
                   "version's non-test gold, as the server offers it at "
                   "/data/TRACK/SPLIT/gold.jsonl (the release is not read then).")
def score_command(track: str, split: str, file: Path, data: Path | None, as_json: bool,
                  resamples: int, seed: int, max_bytes: int, paper_only: bool,
                  gold_file: Path | None) -> None:
    """Validate FILE and print every metric of the track with its 95% CI.

    QA tracks also get em_equiv and token F1 (not in the paper; see the metric card).
    """
    if gold_file is not None:  # the release (--from, $SITUATEDQA_DATA) is not read then
        try:
            gold = read_gold_file(gold_file, track, split)
        except GoldError as exc:
            raise click.ClickException(str(exc)) from None
        gold_set = GoldSet([gold])
    else:
        gold_set = open_gold(data)
        gold = _split(gold_set, track, split)
    predictions = _load_predictions(file, gold_set, gold, max_bytes)
    result = score(gold, predictions, resamples=resamples, seed=seed, lenient=not paper_only)
    click.echo(json.dumps(result.to_json(), indent=2) if as_json else format_table(result))


@main.command("compare")
@track_option
@split_option
@click.argument("file_a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("file_b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--resamples", type=click.IntRange(min=1), default=DEFAULT_RESAMPLES,
              show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="Bootstrap seed.")
def compare_command(track: str, split: str, file_a: Path, file_b: Path, data: Path | None,
                    as_json: bool, resamples: int, seed: int) -> None:
    """Paired comparison A - B on the same examples: difference, 95% CI, p-value.

    QA tracks also compare em_equiv (not in the paper); token F1 is not compared.
    """
    gold_set = open_gold(data)
    gold = _split(gold_set, track, split)
    result_a = score(gold, _load_predictions(file_a, gold_set, gold, DEFAULT_MAX_BYTES),
                     resamples=0)
    result_b = score(gold, _load_predictions(file_b, gold_set, gold, DEFAULT_MAX_BYTES),
                     resamples=0)
    diffs = compare(gold, result_a.outcomes, result_b.outcomes, resamples=resamples, seed=seed,
                    lenient=True)
    if as_json:
        click.echo(json.dumps({
            name: {"difference": d.difference, "ci": list(d.ci) if d.ci else None,
                   "p_value": d.p_value, "n": d.count}
            for name, d in diffs.items()}, indent=2))
        return
    click.echo(f"{'metric':<24}{'A':>8}{'B':>8}{'A-B':>8}   {'95% CI':<17}{'p':>7}")
    for name, d in diffs.items():
        a, b = result_a.metrics.get(name), result_b.metrics.get(name)
        if d.difference is None or a is None or b is None:
            continue
        ci = f"[{d.ci[0]:.2f}, {d.ci[1]:.2f}]" if d.ci else ""
        click.echo(f"{name:<24}{a:>8.2f}{b:>8.2f}{d.difference:>8.2f}   {ci:<17}"
                   f"{d.p_value or 0:>7.4f}")


def run() -> None:
    """Console entry point."""
    main(prog_name="python -m benchmark")


if __name__ == "__main__":
    run()
