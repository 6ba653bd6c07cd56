#!/usr/bin/env python
"""Run the quick baseline runners and write their outputs to submissions/reference/.

The files are committed gzip-compressed, each with its runner's .meta.json sidecar, so that
`flask --app app baselines regenerate --quick` loads them without rerunning.
Usage: SITUATEDQA_DATA=/path/to/situatedqa python scripts/make_reference_submissions.py
       [--runner nn-train ...] (default: every quick runner: id-random, id-tfidf, nn-train)
Run it from a clean checkout (it refuses uncommitted changes): the sidecars name the commit.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

import click

from baselines.output import code_version
from situatedqa_server.services.baselines import (
    QUICK_RUNNERS,
    REFERENCE_DIR,
    default_plan,
    run_runner,
)


@click.command()
@click.option("--data", type=click.Path(file_okay=False, path_type=Path),
              envvar="SITUATEDQA_DATA", required=True, help="The release folder.")
@click.option("--seed", default=0, show_default=True, help="Runner seed.")
@click.option("--runner", "runners", multiple=True, type=click.Choice(QUICK_RUNNERS),
              help="Only these runners (repeatable; default: all quick runners).")
@click.option("--threads", default=1, show_default=True, type=click.IntRange(min=1),
              help="CPU threads per runner.")
@click.option("--allow-dirty", is_flag=True,
              help="Run from a tree with uncommitted changes (for a trial; such sidecars say "
                   "-dirty, which the committed reference files must not).")
def main(data: Path, seed: int, runners: tuple[str, ...], threads: int,
         allow_dirty: bool) -> None:
    """Write the quick runners' outputs for every track they answer, dev and test.

    From a clean checkout: each sidecar records the commit that made it (`git describe`),
    which a committed reference file must name.
    """
    version = code_version()
    if version.endswith("-dirty") and not allow_dirty:
        raise click.ClickException(f"the checkout has uncommitted changes ({version}): commit "
                                   "them, or run from a clean clone (git clone . ../clean)")
    # Every run first, then every write: a file written into the tree would make the next
    # run's `git describe` say -dirty.
    with tempfile.TemporaryDirectory(prefix="sqa-reference-") as work:
        files = [run_runner(key, data, Path(work), seed=seed, threads=threads)
                 for key in default_plan(runners)]
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    for file in files:
        target = REFERENCE_DIR / f"{file.key.filename}.gz"
        # mtime=0: the same output gives the same bytes, so the file is committed once.
        target.write_bytes(gzip.compress(file.data, mtime=0))
        target.with_name(target.name + ".meta.json").write_text(
            json.dumps(file.meta, indent=2, sort_keys=True) + "\n")
        click.echo(f"{target.relative_to(REFERENCE_DIR.parent.parent)}  "
                   f"{os.path.getsize(target)} bytes")


if __name__ == "__main__":
    sys.exit(main())
