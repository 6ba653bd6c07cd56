"""pytest-benchmark timing of the scorer (skipped by default: addopts has --benchmark-skip).

Run with: .venv/bin/python -m pytest tests/benchmark/test_bm_speed.py --benchmark-enable
scripts/bench_scoring.py compares against the official logic and the floor, and reports memory.
"""

from __future__ import annotations

import json
from typing import Any

from benchmark import GoldSet, GoldSplit, parse_predictions, score


def test_score_temp_test_with_cis(benchmark: Any, release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "test")
    data = "\n".join(json.dumps({"key": e.key, "prediction": e.answers[0] if i % 3 else "x"})
                     for i, e in enumerate(gold.examples)).encode()

    def run() -> Any:
        fresh = GoldSplit("temp", "test", gold.examples)
        return score(fresh, parse_predictions(data, fresh), resamples=2000)

    result = benchmark(run)
    assert result.n == 2795
