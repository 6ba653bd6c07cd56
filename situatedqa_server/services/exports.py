"""Leaderboards as CSV and JSON; a submission as a Papers-with-Code row and a model-index."""

from __future__ import annotations

import csv
import io
from typing import Any

import yaml

from benchmark import TRACK_INFO
from benchmark.equivalence import lenient_family
from benchmark.tracks import (
    CUTOFF_METRICS,
    GAP,
    PROVENANCE_METRICS,
    RELEASED,
    UNRELEASED,
    is_window,
)

from ..models import Score, Submission
from .leaderboards import Board, iso

DATASET_NAME = "SituatedQA"
#: The Hugging Face metric id of each metric family (https://hf.co/metrics).
HF_METRIC_TYPES = {"em": "exact_match", "accuracy": "accuracy", "precision": "precision",
                   "recall": "recall", "f1": "f1", "auc": "roc_auc"}
#: The lenient families' types (not in the paper): never `exact_match`, which only the
#: paper's EM may claim, nor `f1`, the identification tracks' classification F1.
LENIENT_METRIC_TYPES = {"em_equiv": "situatedqa_em_equiv", "f1": "squad_token_f1"}
LENIENT_SUFFIX = " (lenient, not in the paper)"
#: The provenance figures' types (not in the paper; benchmark.provenance).
PROVENANCE_METRIC_TYPES = {UNRELEASED: "situatedqa_unreleased", RELEASED: "situatedqa_released",
                           GAP: "situatedqa_contamination_gap"}
#: The figures after and by a declared knowledge cutoff (not in the paper; benchmark.cutoff).
CUTOFF_METRIC_TYPES = {name: f"situatedqa_{name}" for name in CUTOFF_METRICS}
ENTRY_FIELDS = ("rank", "rank_group", "method_name", "team", "baseline", "reported",
                "source", "submitted_at", "paper_url", "code_url", "model_type", "fine_tuned",
                "knowledge_cutoff", "id")


def task_of(track: str) -> tuple[str, str]:
    """The (type, name) of a track's task, in Hugging Face's task vocabulary."""
    if TRACK_INFO[track].identification:
        return "text-classification", "Context-dependence identification"
    return "question-answering", "Open-domain question answering"


def board_payload(board: Board, groups: dict[int, str],
                  gold_version: str | None = None) -> dict[str, Any]:
    """A leaderboard page as a JSON document: every column, CI and rank group."""
    q = board.query
    # A submission's entry has every column (null where its row lacks one: a row whose
    # horizon follows its upload's response, or one stored before a column existed).
    entries = [{**entry, "rank_group": groups.get(entry["id"]) if entry["id"] else None,
                **({"metrics": {c: entry["metrics"].get(c) for c in board.columns},
                    "ci": {c: entry["ci"].get(c) for c in board.columns},
                    "counts": {c: entry["counts"][c] for c in board.columns
                               if c in (entry.get("counts") or {})}}
                   if entry["id"] else {})}
               for entry in board.entries]
    return {"track": q.track, "split": q.split, "title": TRACK_INFO[q.track].title,
            "gold_version": gold_version, "primary_metric": board.primary,
            "columns": board.columns, "total": board.total, "page": q.page,
            "per_page": q.per_page, "entries": entries}


def csv_text(value: Any) -> Any:
    """Text a spreadsheet will not run as a formula (CSV injection)."""
    if isinstance(value, str) and value and value[0] in "=+-@\t\r":
        return "'" + value
    return value


def payload_csv(payload: dict[str, Any]) -> str:
    """A board payload as CSV: one row per entry, every metric with its CI bounds."""
    out = io.StringIO()
    writer = csv.writer(out)
    columns = payload["columns"]
    # A fresh window's figure has its count beside it: the windows are small, and an entry
    # that did not answer one has none (benchmark.windows).
    writer.writerow([*ENTRY_FIELDS, *(f"{c}{s}" for c in columns
                                      for s in ("", "_lo", "_hi", *(("_n",) if is_window(c)
                                                                     else ())))])
    for entry in payload["entries"]:
        metrics: list[Any] = []
        for column in columns:
            ci = (entry.get("ci") or {}).get(column) or [None, None]
            metrics += [entry["metrics"].get(column), *ci]
            if is_window(column):
                metrics.append((entry.get("counts") or {}).get(column))
        writer.writerow([csv_text(entry.get(name)) for name in ENTRY_FIELDS] + metrics)
    return out.getvalue()


def rounded(value: float | None) -> float | None:
    """A metric rounded to two decimals, as leaderboards show it."""
    return None if value is None else round(float(value), 2)


def lenient_of(track: str, name: str) -> str | None:
    """The lenient family of a metric on a QA track (None for the paper's metrics)."""
    return None if TRACK_INFO[track].identification else lenient_family(name)


def metric_name(track: str, name: str) -> str:
    """A human name of a metric of a track, e.g. 'EM (Static)', 'F1 (MS MARCO)', 'EM equiv
    Any (lenient, not in the paper)'."""
    info = TRACK_INFO[track]
    label = info.label(name)
    if lenient_of(track, name):
        return label + LENIENT_SUFFIX
    if name in info.error_metrics or name in info.horizon_metrics:
        return label + " (not in the paper)"
    if name == GAP:
        return label + " (an indication, not a proof; not in the paper)"
    if name in PROVENANCE_METRICS:
        return f"{label} {'accuracy' if info.identification else 'EM'} (not in the paper)"
    if name in CUTOFF_METRICS:
        return f"{label} (knowledge cutoff; not in the paper)"
    if name.startswith("em_") and name.removeprefix("em_") in info.partition_labels:
        return f"EM ({label})"
    return label


def metric_type(track: str, name: str) -> str:
    """A metric's model-index type: the paper's EM is `exact_match`, the lenient families
    have types of their own."""
    family = lenient_of(track, name)
    if family is not None:
        return LENIENT_METRIC_TYPES[family]
    info = TRACK_INFO[track]
    if name in info.error_metrics:
        return "situatedqa_error_" + ("rate" if "_rate" in name else "share")
    if name in info.horizon_metrics:
        return "situatedqa_knowledge_horizon"
    if name in PROVENANCE_METRICS:
        return PROVENANCE_METRIC_TYPES[name]
    if name in CUTOFF_METRICS:
        return CUTOFF_METRIC_TYPES[name]
    return HF_METRIC_TYPES.get(name.split("_")[0], name)


def pwc_row(submission: Submission, score: Score, url: str) -> dict[str, Any]:
    """A Papers-with-Code results row: model, paper, code, dataset and metrics."""
    return {
        "task": task_of(submission.track)[1],
        "dataset": f"{DATASET_NAME} ({submission.track}, {submission.split} split)",
        "model_name": submission.method_name,
        "paper_url": submission.paper_url,
        "code_links": [submission.code_url] if submission.code_url else [],
        "metrics": {metric_name(submission.track, n): rounded(v)
                    for n, v in score.metrics.items()},
        "evaluated_on": (iso(submission.created_at) or "")[:10],
        "external_source_url": url,
    }


def model_index(submission: Submission, score: Score) -> str:
    """A Hugging Face model-card `model-index` YAML block for the submission's scores."""
    task_type, task_name = task_of(submission.track)
    metrics = [{"type": metric_type(submission.track, name),
                "value": rounded(value), "name": metric_name(submission.track, name)}
               for name, value in score.metrics.items() if value is not None]
    document = {"model-index": [{
        "name": submission.method_name,
        "results": [{
            "task": {"type": task_type, "name": task_name},
            "dataset": {"type": "situatedqa", "name": f"{DATASET_NAME} ({submission.track})",
                        "config": submission.track, "split": submission.split},
            "metrics": metrics,
        }],
    }]}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
