"""A submission's paper metrics where researchers publish results.

* The Hugging Face Hub's `.eval_results/*.yaml` (the Hub reads it from a model repository;
  `huggingface_hub` calls the README's `model-index` legacy, which exports.model_index
  still writes): one entry per paper metric, `dataset.revision` the gold version, `notes`
  the partition, n and the 95% CI.
* An Every Eval Ever record (schema 0.3.0, the cross-harness record): one result per paper
  metric, its CI in `score_details.uncertainty.confidence_interval`.

Only a score's aggregate figures go out: no answer, and no example of any kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from typing import Any

import yaml
from flask import current_app, url_for

from benchmark import TRACK_INFO
from benchmark.intervals import BOOTSTRAP, interval_method
from benchmark.metrics import CONFIDENCE

from ..extensions import db
from ..models import GoldVersion, Score, Submission, User
from . import released, scoring
from .exports import DATASET_NAME, metric_type, rounded
from .leaderboards import iso

#: The Every Eval Ever schema version the record follows (its `eval.schema.json`).
EVERY_EVAL_EVER_SCHEMA = "0.3.0"
SOURCE_NAME = "SituatedQA evaluation server"
#: Where the release's data come from (gold/manifest.json pins its commit).
RELEASE_URL = "https://github.com/mikejqzhang/SituatedQA"


@dataclass(frozen=True)
class ScoredRun:
    """What the exports say about one score: the submission, its gold version and links."""

    submission: Submission
    score: Score
    gold_version: str
    #: The submission's page and the server's root, as absolute URLs.
    url: str
    server_url: str
    dataset_id: str
    resamples: int


def run_for(submission_id: int, user: User | None) -> ScoredRun:
    """The export inputs of a submission whose score is released to the user."""
    submission, score = released.released_score(submission_id, user)
    return ScoredRun(
        submission, score, gold_version_name(score),
        url=url_for("submissions.detail", submission_id=submission.id, _external=True),
        server_url=url_for("index", _external=True),
        dataset_id=str(current_app.config["HF_DATASET_ID"]),
        resamples=int(current_app.config["BOOTSTRAP_RESAMPLES"]))


def gold_version_name(score: Score) -> str:
    """The name of the gold version a score was computed against."""
    version = db.session.get(GoldVersion, score.gold_version_id)
    return version.name if version is not None else str(score.gold_version_id)


def library_version() -> str:
    """This server's package version ('unknown' when run from a source tree)."""
    try:
        return metadata.version("situatedqa-server")
    except metadata.PackageNotFoundError:
        return "unknown"


def paper_metrics(score: Score) -> list[tuple[str, float]]:
    """The paper's metrics of a score's track that it has a value for, in paper order."""
    info = TRACK_INFO[score.track]
    return [(name, float(score.metrics[name])) for name in info.metrics
            if score.metrics.get(name) is not None]


def task_id(track: str, split: str, metric: str) -> str:
    """The Hub task id of one metric of a board, e.g. `temp_test_em_static`."""
    return f"{track}_{split}_{metric}".replace("-", "_")


def partition_text(track: str, metric: str) -> str:
    """Which examples a metric counts, as the metric card defines the partition."""
    info = TRACK_INFO[track]
    partition = metric.removeprefix("em_") if metric.startswith("em_") else None
    if partition and partition in info.partition_rules:
        return f"{info.partition_labels[partition]} partition: {info.partition_rules[partition]}"
    return "every example of the split"


def examples_of(score: Score, metric: str) -> int:
    """How many examples a metric's value is over: its partition's size (counts), the
    split's for a metric over every example."""
    counted = (score.counts or {}).get(metric)
    return int(counted) if isinstance(counted, int) else int(score.n or 0)


def ci_of(score: Score, metric: str) -> tuple[float, float] | None:
    """A metric's 95% CI bounds, when the score has them."""
    bounds = (score.ci or {}).get(metric)
    if not bounds or bounds[0] is None or bounds[1] is None:
        return None
    return float(bounds[0]), float(bounds[1])


def method_of(run: ScoredRun, metric: str) -> str:
    """How a metric's CI was computed, in words: the bootstrap with its resamples, or the
    Wilson score interval of a share at 0% or 100% (benchmark.intervals)."""
    method = interval_method((run.score.metrics or {}).get(metric), ci_of(run.score, metric))
    return f"{method}, {run.resamples:,} resamples" if method == BOOTSTRAP else method


def notes_of(run: ScoredRun, metric: str) -> str:
    """The partition, n and CI behind one value, for the Hub entry's `notes`."""
    score = run.score
    info = TRACK_INFO[score.track]
    ci = ci_of(score, metric)
    interval = f"95% CI {ci[0]:.2f}-{ci[1]:.2f} ({method_of(run, metric)})" if ci else "no CI"
    return (f"{info.label(metric)} on {DATASET_NAME} {score.track} {score.split}, "
            f"{partition_text(score.track, metric)}; n = {examples_of(score, metric):,}; "
            f"{interval}; "
            f"gold version {run.gold_version}")


def eval_results(run: ScoredRun) -> list[dict[str, Any]]:
    """The `.eval_results` entries of a score: one per paper metric."""
    score = run.score
    date = iso(run.submission.created_at)
    return [{"dataset": {"id": run.dataset_id,
                         "task_id": task_id(score.track, score.split, name),
                         "revision": run.gold_version},
             "value": rounded(value),
             **({"date": date} if date else {}),
             "source": {"url": run.url, "name": SOURCE_NAME},
             "notes": notes_of(run, name)}
            for name, value in paper_metrics(score)]


def eval_results_yaml(run: ScoredRun) -> str:
    """The `.eval_results/<name>.yaml` file of a score, committable as it is."""
    return yaml.safe_dump(eval_results(run), sort_keys=False, allow_unicode=True)


def uncertainty(run: ScoredRun, metric: str) -> dict[str, Any]:
    """Every Eval Ever's `uncertainty` of one metric: its CI, n and the resamples."""
    ci = ci_of(run.score, metric)
    method = interval_method((run.score.metrics or {}).get(metric), ci)
    interval: dict[str, Any] = {}
    if ci:
        interval["confidence_interval"] = {"lower": ci[0], "upper": ci[1],
                                           "confidence_level": CONFIDENCE, "method": method}
        if method == BOOTSTRAP:  # a score interval draws no resample
            interval["num_bootstrap_samples"] = run.resamples
    return {**interval, "num_samples": examples_of(run.score, metric)}


def every_eval_ever(run: ScoredRun, retrieved: datetime) -> dict[str, Any]:
    """An Every Eval Ever record of a score (schema 0.3.0)."""
    submission, score = run.submission, run.score
    info = TRACK_INFO[score.track]
    model = str((scoring.harness_shown(submission) or {}).get("model") or submission.method_name)
    retrieved_at = str(int(retrieved.timestamp()))
    board = f"situatedqa_{task_id(score.track, score.split, '')}".rstrip("_")
    results = [{
        "evaluation_result_id": task_id(score.track, score.split, name),
        "evaluation_name": f"{DATASET_NAME} {info.title} ({score.split}): {info.label(name)}",
        "source_data": {"dataset_name": DATASET_NAME, "source_type": "url",
                        "url": [RELEASE_URL],
                        "additional_details": {"track": score.track, "split": score.split,
                                               "gold_version": run.gold_version}},
        "metric_config": {"evaluation_description": notes_of(run, name),
                          "metric_id": f"situatedqa.{metric_type(score.track, name)}",
                          "lower_is_better": False, "score_type": "continuous",
                          "min_score": 0, "max_score": 100},
        "score_details": {"score": float(value), "uncertainty": uncertainty(run, name)},
    } for name, value in paper_metrics(score)]
    return {
        "schema_version": EVERY_EVAL_EVER_SCHEMA,
        "evaluation_id": f"{board}/{model}/{retrieved_at}",
        **({"evaluation_timestamp": iso(submission.created_at)}
           if submission.created_at else {}),
        "retrieved_timestamp": retrieved_at,
        "source_metadata": {"source_name": SOURCE_NAME, "source_type": "evaluation_run",
                            "source_organization_name": SOURCE_NAME,
                            "source_organization_url": run.server_url,
                            "evaluator_relationship": "third_party"},
        "eval_library": {"name": "situatedqa-server", "version": library_version()},
        "model_info": {"name": submission.method_name, "id": model,
                       "additional_details": {"deployment_type": "unknown",
                                              "model_availability": "unknown"}},
        "evaluation_results": results,
    }
