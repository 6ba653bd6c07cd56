"""Fixtures of the harness tests: the server's (tests/server/conftest.py) and the helpers of
harness_helpers.py (its folder is put on sys.path, as tests/benchmark does)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.server.conftest import (  # noqa: E402, F401  (pytest finds fixtures by name)
    database,
    gold_dir,
    pg_config,
    sqlite_template,
)
