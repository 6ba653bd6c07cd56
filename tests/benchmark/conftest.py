"""Fixtures of the benchmark-core tests (tiny gold splits); see bm_helpers.py."""

from bm_helpers import (  # noqa: F401  (pytest finds fixtures by name)
    tiny_curprev,
    tiny_geo,
    tiny_geo_id,
    tiny_golds,
    tiny_id,
    tiny_present,
    tiny_temp,
)
