"""Fixtures of the benchmark-core tests (tiny gold splits); see bm_helpers.py.

bm_helpers sits next to this file; its folder is put on sys.path so that the test modules can
`from bm_helpers import ...` under either pytest import mode (prepend or importlib).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bm_helpers import (  # noqa: F401  (pytest finds fixtures by name)
    tiny_curprev,
    tiny_geo,
    tiny_geo_id,
    tiny_golds,
    tiny_id,
    tiny_present,
    tiny_temp,
)
