"""Integrations with evaluation harnesses: the scorer's fingerprint and conformance vectors.

This package imports no harness. The lm-evaluation-harness task folder (`lm_eval_tasks/`),
the Inspect tasks (`inspect_tasks.py`) and the `evaluate` metric (`evaluate_metric/`) import
their harness themselves; the parsers of the harnesses' output files are in
`benchmark.harness_files`, which the server uses with no harness installed.
"""

from .conformance import (
    CONFORMANCE_PATH,
    ConformanceCase,
    conformance_cases,
    fingerprint,
    score_case,
    score_pairs,
)

__all__ = ["CONFORMANCE_PATH", "ConformanceCase", "conformance_cases", "fingerprint",
           "score_case", "score_pairs"]
