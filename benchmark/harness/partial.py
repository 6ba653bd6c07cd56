"""Offline scoring of a partial harness run (`python -m benchmark score --partial`).

An upload refuses a run that covers part of a split (`--limit`); offline, its covered
examples can be scored, and the result says so: `partial`, with the coverage, in the JSON
and on the table's first line. Such a number is never comparable with a board's.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..formats import ValidationError, decompress_limited
from ..gold import GoldSplit
from ..harness_files import covered_gold, harness_predictions, read_harness_file
from ..scoring import score
from .conformance import fingerprint


def score_partial(path: Path, gold: GoldSplit, *, as_json: bool, resamples: int, seed: int,
                  max_bytes: int, harness_filter: str | None) -> str:
    """The covered examples' scores as the CLI prints them (ClickException if unreadable)."""
    from ..cli import format_table

    try:
        data = decompress_limited(path.read_bytes(), str(path), max_bytes)
        read = read_harness_file(data, gold, filename=str(path), max_bytes=max_bytes,
                                 harness_filter=harness_filter, allow_partial=True)
    except ValidationError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        raise click.ClickException(f"{path}: rejected, nothing was scored") from None
    if read is None:
        raise click.ClickException(f"{path}: --partial reads an lm-eval samples file or an "
                                   "Inspect log; this is neither")
    covered = covered_gold(read, gold)
    result = score(covered, harness_predictions(read, covered), resamples=resamples, seed=seed)
    coverage = f"{len(covered)} of {len(gold)}"
    if as_json:
        return json.dumps({**result.to_json(), "partial": True, "coverage": coverage,
                           "scorer": fingerprint()}, indent=2)
    return (f"PARTIAL: {coverage} examples of {gold.track}/{gold.split} (not comparable with "
            f"a board's scores)\n\n{format_table(result)}\n\nscorer {fingerprint()}")
