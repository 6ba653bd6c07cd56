#!/usr/bin/env python
"""Run the quick baseline runners and write their outputs to submissions/reference/.

The files are committed gzip-compressed, each with its runner's .meta.json sidecar, so that
`flask --app app baselines regenerate --quick` loads them without rerunning.
Usage: SITUATEDQA_DATA=/path/to/situatedqa python scripts/make_reference_submissions.py
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

import click

from situatedqa_server.services.baselines import REFERENCE_DIR, default_plan, run_runner


@click.command()
@click.option("--data", type=click.Path(file_okay=False, path_type=Path),
              envvar="SITUATEDQA_DATA", required=True, help="The release folder.")
@click.option("--seed", default=0, show_default=True, help="Runner seed.")
def main(data: Path, seed: int) -> None:
    """Write id-random and id-tfidf outputs for temp-id and geo-id, dev and test."""
    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sqa-reference-") as work:
        for key in default_plan():
            file = run_runner(key, data, Path(work), seed=seed)
            target = REFERENCE_DIR / f"{key.filename}.gz"
            # mtime=0: the same output gives the same bytes, so the file is committed once.
            target.write_bytes(gzip.compress(file.data, mtime=0))
            target.with_name(target.name + ".meta.json").write_text(
                json.dumps(file.meta, indent=2, sort_keys=True) + "\n")
            click.echo(f"{target.relative_to(REFERENCE_DIR.parent.parent)}  "
                       f"{os.path.getsize(target)} bytes")


if __name__ == "__main__":
    sys.exit(main())
