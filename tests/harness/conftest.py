"""Fixtures of the harness tests; see harness_helpers.py (its folder is put on sys.path, as
tests/benchmark does, so that test modules can `from harness_helpers import ...`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
