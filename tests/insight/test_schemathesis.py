"""Schemathesis, with every check and negative data, finds no failure in /api/v1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmark import GoldSet

from .conftest import LiveServer, api_upload, make_app, new_token, prediction_file, register

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
MAX_EXAMPLES = 25
#: Per-operation settings. A schema-valid upload still carries random bytes, which the
#: scorer rejects with 400 invalid_file: the file's content is beyond what a schema says.
CONFIG = """
[generation]
allow-x00 = true

[[operations]]
include-operation-id = "createSubmission"
checks.positive_data_acceptance.expected-statuses = ["201", "400", "401", "413", "429"]

# A schema-valid dispute names a random key (404 unknown_example), a second time 409, and
# past the per-account limit 429; the form's own bounds (at most 10 answers) are 400.
[[operations]]
include-operation-id = "createDispute"
checks.positive_data_acceptance.expected-statuses = ["201", "400", "404", "409", "429"]
"""


def _seeded_server(database: dict[str, Any], gold_dir: Path, tmp_path: Path,
                   release_gold: GoldSet) -> tuple[Any, str]:
    """An app with a user, a token and public uploads on geo (dev, test) and temp-id (dev)."""
    if not SCHEMATHESIS.exists():
        pytest.skip("schemathesis is not installed")
    app = make_app(database, gold_dir, tmp_path)
    client = app.test_client()
    register(client, "fuzzer")
    token = new_token(client)
    for track, split in (("geo", "dev"), ("geo", "test"), ("temp-id", "dev")):
        gold = release_gold.get(track, split)
        response = api_upload(client, token, gold, prediction_file(gold, len(gold) // 2),
                              public="true")
        assert response.status_code == 201
    return app, token


def _run(app: Any, token: str, tmp_path: Path, max_examples: int, *options: str) -> None:
    """Schemathesis with every check against the app served over HTTP; its report clean."""
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    report = tmp_path / "report.json"
    with LiveServer(app) as server:
        result = subprocess.run(
            [str(SCHEMATHESIS), "--config-file", str(config), "run",
             f"{server.url}/api/v1/openapi.json", "--checks", "all",
             "--header", f"Authorization: Bearer {token}", "--max-examples", str(max_examples),
             "--phases", "examples,coverage,fuzzing", "--seed", "20211107", "--workers", "1",
             "--generation-database", "none", "--no-color", "--report", "json",
             "--report-json-path", str(report), *options],
            capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    (tmp_path / "schemathesis.out").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # The run's own JSON report: it finished, tested every operation, generated cases and
    # found neither a failure nor an error (the exit code alone would pass a run that
    # tested nothing).
    document = json.loads(report.read_text())
    assert document["complete"] is True
    assert document["operations"]["tested"] == document["operations"]["selected"] > 0
    assert document["test_cases"]["generated"] > 0
    assert document["test_cases"]["with_failures"] == 0
    assert document["failures"] == [] and document["errors"] == []


@pytest.mark.slow
def test_schemathesis_finds_no_failure(database: dict[str, Any], gold_dir: Path,
                                       tmp_path: Path, release_gold: GoldSet) -> None:
    app, token = _seeded_server(database, gold_dir, tmp_path, release_gold)
    _run(app, token, tmp_path, MAX_EXAMPLES)


@pytest.mark.slow
def test_schemathesis_on_the_boards_sort_columns(database: dict[str, Any], gold_dir: Path,
                                                 tmp_path: Path, release_gold: GoldSet) -> None:
    """More cases on the leaderboards, whose sort columns differ by split (identification's
    per-source F1): every value the schema allows must be answered 200 (positive data
    acceptance), every one it refuses 400. The upload's metadata rules are checked with
    valid files in tests/server/test_rules.py (here every file is random bytes: 400)."""
    app, token = _seeded_server(database, gold_dir, tmp_path, release_gold)
    _run(app, token, tmp_path, 4 * MAX_EXAMPLES, "--include-path-regex", "^/api/v1/leaderboards/")
