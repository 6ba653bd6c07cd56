"""The metrics pages: what each column means, per track, from the metric card's source."""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, render_template
from markupsafe import Markup, escape

from benchmark import SPLITS, TRACK_INFO, TRACKS, metric_card
from benchmark.equivalence import LENIENT_RULES
from benchmark.tracks import (
    CUTOFF_METRICS,
    ERROR_CLASS_LABELS,
    FRESH,
    PROVENANCE_METRICS,
    WINDOW_PREFIX,
)

from .services import evaluation, gold_store
from .services.errors import known_track
from .services.gold_store import GoldUnavailable

bp = Blueprint("metrics", __name__, url_prefix="/metrics")


@bp.app_template_global()
def column_label(name: str, track: str) -> str:
    """A metric's display name on a track, as the boards head it ("Static", not em_static):
    column headers everywhere (snapshots, rank changes) read the registry's label."""
    return TRACK_INFO[track].label(name)


@bp.app_template_global()
def definition(track: str, metric: str) -> str:
    """One column's definition (the leaderboard headers' tooltips)."""
    return metric_card.definition(track, metric)


@bp.app_template_filter("card_text")
def card_text(text: str) -> Markup:
    """A metric-card paragraph on a page: its `code` and **bold** spans as HTML, the rest
    escaped (the card is Markdown, the page HTML)."""
    html = str(escape(text))
    html = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html)
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", html))


@bp.get("/")
def index() -> str:
    """Every track's metrics page, and what they all share."""
    return render_template("metrics/index.html", tracks=[TRACK_INFO[t] for t in TRACKS],
                           card=metric_card)


@bp.get("/<track>")
def show(track: str) -> str:
    """A track's metrics: definitions, partition counts, the CI method, the paper's counts."""
    info = TRACK_INFO[known_track(track)]
    metrics = [{"name": name, "label": info.label(name),
                "definition": metric_card.definition(track, name),
                "lenient": name not in info.metrics}
               for name in (*info.metrics, *info.optional_metrics, *PROVENANCE_METRICS,
                            FRESH, f"{WINDOW_PREFIX}<release>", *CUTOFF_METRICS)]
    return render_template("metrics/show.html", info=info, metrics=metrics, card=metric_card,
                           counts=partition_counts(track), rules=LENIENT_RULES,
                           resamples=evaluation.settings().resamples,
                           partitions=info.partition_rules,
                           class_labels=ERROR_CLASS_LABELS)


def partition_counts(track: str) -> list[dict[str, Any]]:
    """Examples per partition on each split of the active gold version (the inputs
    participants answer), with the paper's count where it differs."""
    rows = []
    for split in SPLITS:
        try:
            gold = gold_store.get_split(track, split)
        except GoldUnavailable:
            continue
        rows.append({"split": split, "total": len(gold), "sizes": gold.partition_sizes(),
                     "paper": TRACK_INFO[track].paper_partition_sizes.get(split, {})})
    return rows
