"""`python -m benchmark`: fetch and import the release, write blank inputs, score offline."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import click

from .equivalence import LENIENT_RULES
from .error_classes import (
    ErrorTables,
    compare_errors,
    earlier_counts,
    error_tables,
    possible_counts,
)
from .formats import DEFAULT_MAX_BYTES, ValidationError, wrong_split_hint
from .gold import GoldError, GoldSet, load_gold, read_gold_file
from .harness.conformance import fingerprint
from .harness.partial import partial_result
from .harness_files import parse_file
from .horizon import Horizon
from .metric_card import MARK_NOTES
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED
from .provenance import gap_counts
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
from .tracks import (
    DEFAULT_PRESENT_THRESHOLD,
    GAP,
    METRIC_LABELS,
    QA_TRACKS,
    SPLITS,
    TRACKS,
    track_info,
)

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


def _load_predictions(path: Path, gold_set: GoldSet, gold: Any, max_bytes: int,
                      harness_filter: str | None = None) -> Any:
    try:
        return parse_file(path.read_bytes(), gold, filename=str(path), max_bytes=max_bytes,
                          harness_filter=harness_filter)
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

    The lenient metrics and the error classes (not in the paper) follow under their own
    headings, with the rule of each lenient family, and the knowledge horizon last.
    """
    lines = [f"{result.track} / {result.split}: {result.n} examples", ""]
    header = f"{'metric':<44}{'value':>8}   {'95% CI':<17}{'n':>6}"
    info = track_info(result.track)
    declared = set(info.lenient_metrics)  # f1 is also an id-track metric
    errors = set(info.error_metrics)
    paper = [name for name in result.metrics if name not in declared | errors]
    lenient = [name for name in result.metrics if name in declared]
    lines += [header, *(_table_row(result, name) for name in paper)]
    if lenient:
        lines += ["", "Not in the paper (lenient answer equivalence; never ranks):"]
        lines += [f"  {family}: {rule}" for family, rule in LENIENT_RULES.items()]
        lines += ["", header, *(_table_row(result, name) for name in lenient)]
    if errors & set(result.metrics):
        lines += ["", "Not in the paper (situated error classes of the wrong answers; never "
                  "ranks; see the metric card):", "", *_error_rows(result)]
    if result.horizon is not None:
        lines += ["", format_horizon(result.horizon)]
    return "\n".join(lines)


def _error_rows(result: ScoreResult) -> list[str]:
    """One row per partition and class: % of examples and % of errors, with their CIs."""
    info = track_info(result.track)
    rule = info.errors
    rows = [f"{'partition':<14}{'class':<15}{'% of examples':>14}   {'95% CI':<17}"
            f"{'% of errors':>11}   {'95% CI':<17}{'errors':>6}"]
    if rule is None:
        return rows
    for suffix in info.error_partitions:
        partition = METRIC_LABELS["em" + suffix] if suffix else "All"
        for name in rule.figures:
            rate, share = f"{name}_rate{suffix}", f"{name}_share{suffix}"
            if rate not in result.metrics:
                continue
            label = rule.label(name) + ("*" if rule.mark and name == rule.mark.name else "")
            rows.append(f"{partition:<14}{label:<15}"
                        f"{_shown(result, rate):>14}   {_interval(result, rate):<17}"
                        f"{_shown(result, share):>11}   {_interval(result, share):<17}"
                        f"{result.counts.get(share, 0):>6}")
            partition = ""
    if rule.mark is not None and any(
            name.startswith(rule.mark.name + "_") for name in result.metrics):
        rows += ["", f"* {rule.label(rule.mark.name)}: {MARK_NOTES[rule.mark.name]}"]
    return rows


def format_horizon(horizon: Horizon) -> str:
    """The knowledge horizon in one line: year, CI and basis, or why it is not determined."""
    basis = f"{horizon.n} examples whose answer replaced an earlier one, right or outdated"
    if horizon.year is None:
        return f"Knowledge horizon (not in the paper): not determined: {horizon.reason} ({basis})"
    ci = f", 95% CI {horizon.ci[0]}-{horizon.ci[1]}" if horizon.ci else ""
    p = f", p = {horizon.p_value:.4f}" if horizon.p_value is not None else ""
    low, high = horizon.identified or (horizon.year, horizon.year)
    same = f"; the data cannot tell {low}-{high} apart" if high > low else ""
    return f"Knowledge horizon (not in the paper): {horizon.year}{ci}{p}{same} ({basis})"


def _shown(result: ScoreResult, name: str) -> str:
    value = result.metrics.get(name)
    return "n/a" if value is None else f"{value:.2f}"


def _interval(result: ScoreResult, name: str) -> str:
    ci = result.ci.get(name)
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""


def _table_row(result: ScoreResult, name: str) -> str:
    label = track_info(result.track).label(name)
    value = result.metrics[name]
    shown = "n/a" if value is None else f"{value:.2f}"
    ci = result.ci.get(name)
    interval = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    count = gap_counts(result.counts) if name == GAP else f"{result.counts.get(name, 0)}"
    return f"{label + ' (' + name + ')':<44}{shown:>8}   {interval:<17}{count:>6}"


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
              help="Only the paper's metrics: no em_equiv, token F1 or error classes (QA "
                   "tracks).")
@click.option("--gold", "gold_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Score against this gold file instead of the release: a published gold "
                   "version's non-test gold, as the server offers it at "
                   "/data/TRACK/SPLIT/gold.jsonl (the release is not read then).")
@click.option("--filter", "harness_filter", default=None,
              help="The filter to read of an lm-eval samples file whose task has several.")
@click.option("--partial", is_flag=True,
              help="A harness file of a partial run (--limit): score the examples it covers, "
                   "the result marked partial (an upload refuses such a file).")
def score_command(track: str, split: str, file: Path, data: Path | None, as_json: bool,
                  resamples: int, seed: int, max_bytes: int, paper_only: bool,
                  gold_file: Path | None, harness_filter: str | None, partial: bool) -> None:
    """Validate FILE and print every metric of the track with its 95% CI.

    QA tracks also get em_equiv and token F1, the situated error classes of the wrong
    answers and, on temp, the knowledge horizon (not in the paper; see the metric card).
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
    if partial:
        try:
            result, coverage = partial_result(file.read_bytes(), gold, filename=str(file),
                                              resamples=resamples, seed=seed,
                                              max_bytes=max_bytes, harness_filter=harness_filter)
        except ValidationError as exc:
            for problem in exc.problems:
                click.echo(str(problem), err=True)
            raise click.ClickException(f"{file}: rejected, nothing was scored") from None
        click.echo(json.dumps({**result.to_json(), "partial": True, "coverage": coverage,
                               "scorer": fingerprint()}, indent=2) if as_json else
                   f"PARTIAL: {coverage} examples of {track}/{split} (not comparable with a "
                   f"board's scores)\n\n{format_table(result)}\n\nscorer {fingerprint()}")
        return
    predictions = _load_predictions(file, gold_set, gold, max_bytes, harness_filter)
    tables = None if paper_only else _tables(gold_set, track, split,
                                             optional=gold_file is not None)
    result = score(gold, predictions, resamples=resamples, seed=seed, lenient=not paper_only,
                   errors=tables)
    click.echo(json.dumps({**result.to_json(), "scorer": fingerprint()}, indent=2) if as_json
               else format_table(result) + f"\n\nscorer {fingerprint()}")


def _tables(gold_set: GoldSet, track: str, split: str, *,
            optional: bool = False) -> ErrorTables | None:
    """The split's error tables (QA tracks), or None; a missing companion split is named
    (an error, or with `optional` a note on stderr: a single gold file has no companion)."""
    if track_info(track).errors is None:
        return None
    try:
        return error_tables(gold_set, track, split)
    except GoldError as exc:
        if optional:
            click.echo(f"note: {exc}; the error classes are not computed", err=True)
            return None
        raise click.ClickException(str(exc)) from None


@main.command("error-classes")
@click.option("--track", type=click.Choice(QA_TRACKS), required=True, help="QA track.")
@split_option
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--earlier", is_flag=True,
              help="Count the earlier answers instead (dated tracks): the other answers an "
                   "earlier context or the timeline carries, and those the alias and "
                   "came-back rules class other-context, not outdated.")
def error_classes_command(track: str, split: str, data: Path | None, as_json: bool,
                          earlier: bool) -> None:
    """Count, per partition, the examples where each error class is possible at all.

    A class is possible for an example when the gold gives it an other answer of that class
    (for outdated: an earlier context or the timeline's previous answer with a different
    answer); unrelated is always possible. "horizon" counts the temp examples whose answer
    replaced an earlier one (the knowledge horizon's basis). With --earlier: per partition
    the examples with an earlier answer, those answers (one per example and answer) and how
    many of them are other-context (outdated_rate counts at most the rest).
    """
    gold_set = open_gold(data)
    gold = _split(gold_set, track, split)
    tables = _tables(gold_set, track, split)
    if tables is None:  # the choice allows QA tracks only, which all declare error rules
        raise click.ClickException(f"track {track!r} has no error classes")
    rule = track_info(track).errors
    if earlier and not (rule is not None and rule.horizon):
        raise click.ClickException(f"track {track!r} has no dated contexts: --earlier "
                                   "counts those of a dated track (temp)")
    counts = earlier_counts(gold, tables) if earlier else possible_counts(gold, tables)
    if as_json:
        click.echo(json.dumps(counts, indent=2))
        return
    columns = list(next(iter(counts.values())))
    if earlier:
        click.echo(f"{track} / {split}: earlier answers, and those classed other-context")
        click.echo(f"{'partition':<14}" + "".join(f"{c:>20}" for c in columns)
                   + f"{'other-context %':>20}")
        for partition, row in counts.items():
            share = (f"{100 * row['other_context'] / row['earlier_answers']:.1f}"
                     if row["earlier_answers"] else "n/a")
            click.echo(f"{partition:<14}" + "".join(f"{row[c]:>20}" for c in columns)
                       + f"{share:>20}")
        return
    click.echo(f"{track} / {split}: examples where each error class is possible")
    click.echo(f"{'partition':<14}" + "".join(f"{c:>20}" for c in columns))
    for partition, row in counts.items():
        click.echo(f"{partition:<14}" + "".join(f"{row[c]:>20}" for c in columns))


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

    QA tracks also compare em_equiv and the error classes' figures (not in the paper);
    token F1 is not compared.
    """
    gold_set = open_gold(data)
    gold = _split(gold_set, track, split)
    tables = _tables(gold_set, track, split)
    result_a = score(gold, _load_predictions(file_a, gold_set, gold, DEFAULT_MAX_BYTES),
                     resamples=0, errors=tables)
    result_b = score(gold, _load_predictions(file_b, gold_set, gold, DEFAULT_MAX_BYTES),
                     resamples=0, errors=tables)
    diffs = compare(gold, result_a.outcomes, result_b.outcomes, resamples=resamples, seed=seed,
                    lenient=True)
    if result_a.error_classes is not None and result_b.error_classes is not None:
        diffs.update(compare_errors(gold, result_a.error_classes, result_b.error_classes,
                                    marks_a=result_a.error_marks, marks_b=result_b.error_marks,
                                    resamples=resamples, seed=seed))
    if as_json:
        click.echo(json.dumps({
            name: {"difference": d.difference, "ci": list(d.ci) if d.ci else None,
                   "p_value": d.p_value, "n": d.count}
            for name, d in diffs.items()}, indent=2))
        return
    width = max([24, *(len(name) + 2 for name in diffs)])
    click.echo(f"{'metric':<{width}}{'A':>8}{'B':>8}{'A-B':>8}   {'95% CI':<17}{'p':>7}")
    for name, d in diffs.items():
        a, b = result_a.metrics.get(name), result_b.metrics.get(name)
        if d.difference is None or a is None or b is None:
            continue
        ci = f"[{d.ci[0]:.2f}, {d.ci[1]:.2f}]" if d.ci else ""
        click.echo(f"{name:<{width}}{a:>8.2f}{b:>8.2f}{d.difference:>8.2f}   {ci:<17}"
                   f"{d.p_value or 0:>7.4f}")


def run() -> None:
    """Console entry point."""
    main(prog_name="python -m benchmark")


if __name__ == "__main__":
    run()
