"""Plots drawn on the server with Matplotlib (Agg), cached on disk until their data change.

Every plot is a PlotSpec: its data, read from the database, and a cache key that hashes
exactly those rows (score ids and scoring times included). A new submission, a publish,
a hide or a rescore changes the rows behind a plot and so its key; every worker computes
the key from the database on each request, so none can serve a stale image. The files
live in the instance folder, shared by the workers of a host.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from flask import current_app
from sqlalchemy import select

from benchmark import METRIC_LABELS, TRACK_INFO, GoldSplit
from benchmark.metrics import accuracy_from_binary, metric_from_codes
from benchmark.scoring import CORRECT

from ..extensions import db
from ..models import Score, Submission, Visibility
from . import ranking
from .leaderboards import column_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Bump when the drawing code changes, so cached images are redrawn.
STYLE_VERSION = 1
FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
#: On the hidden test split a bucket of context years has at least this many examples,
#: so that no bar reveals the correctness of a handful of test examples.
MIN_TEST_BUCKET = 30
MAX_TOP = 10
MAX_CACHED = 2000
#: Location groups of the geo track, in the order of paper Table 7.
GEO_GROUPS = ("em_us", "em_india", "em_other_common", "em_rare")
YEAR = re.compile(r"^(\d{4})")


@dataclass
class Bar:
    """One bar: a label, a value in percent (None: undefined) and its 95% CI."""

    label: str
    value: float | None
    ci: tuple[float, float] | None = None


@dataclass
class PlotSpec:
    """What to draw, a sentence describing it for screen readers, and its cache key."""

    kind: str
    title: str
    alt: str
    signature: Any
    draw: Callable[[Axes], None] = field(repr=False)

    @property
    def key(self) -> str:
        """A hash of the plot's kind, data rows and drawing style."""
        text = json.dumps([self.kind, STYLE_VERSION, self.signature], default=str,
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def describe(bars: list[Bar]) -> str:
    """Bars in words: 'EM 45.1 (95% CI 43.0–47.2); Static n/a'."""
    parts = []
    for bar in bars:
        value = "n/a" if bar.value is None else f"{bar.value:.1f}"
        interval = f" (95% CI {bar.ci[0]:.1f}\u2013{bar.ci[1]:.1f})" if bar.ci else ""
        parts.append(f"{bar.label} {value}{interval}")
    return "; ".join(parts)


def draw_bars(bars: list[Bar], ylabel: str) -> Callable[[Axes], None]:
    """A drawing function: one bar per item with CI whiskers."""
    def draw(ax: Axes) -> None:
        x = np.arange(len(bars))
        values = [b.value or 0.0 for b in bars]
        low = [max(0.0, (b.value or 0.0) - b.ci[0]) if b.ci else 0.0 for b in bars]
        high = [max(0.0, b.ci[1] - (b.value or 0.0)) if b.ci else 0.0 for b in bars]
        ax.bar(x, values, yerr=[low, high], capsize=4, color="#4C72B0", ecolor="#222222")
        ax.set_xticks(x, [b.label for b in bars], rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 100)
        for position, bar in enumerate(bars):
            if bar.value is None:
                ax.text(position, 2, "n/a", ha="center", fontsize=8)
    return draw


def score_bars(score: Score, names: list[str] | None = None) -> list[Bar]:
    """Bars of a stored score's metrics (all of them, or the named ones)."""
    names = names if names is not None else list(score.metrics)
    return [Bar(column_label(n), score.metrics.get(n),
                (score.ci[n][0], score.ci[n][1]) if score.ci.get(n) else None)
            for n in names if n in score.metrics]


def submission_plot(submission: Submission, score: Score) -> PlotSpec:
    """Per submission: a bar per metric and partition, with CI whiskers."""
    bars = score_bars(score)
    return PlotSpec(
        "submission", f"{submission.method_name}: {submission.track} / {submission.split}",
        f"Bar chart of every metric of {submission.method_name} with 95% CIs: "
        + describe(bars),
        [score.id, score.scored_at, submission.method_name], draw_bars(bars, "percent"))


def geo_plot(submission: Submission, score: Score) -> PlotSpec:
    """geo: EM per location group (paper Table 7), with CI whiskers."""
    bars = score_bars(score, list(GEO_GROUPS))
    return PlotSpec(
        "geo-groups", f"{submission.method_name}: EM per location group",
        "Bar chart of EM per location group: " + describe(bars),
        [score.id, score.scored_at, submission.method_name], draw_bars(bars, "EM (%)"))


def year_buckets(gold: GoldSplit, min_size: int) -> list[tuple[str, np.ndarray]]:
    """Consecutive context years merged until each bucket has at least min_size examples."""
    years = np.array([int(m.group(1)) if (m := YEAR.match(e.context.get("date", ""))) else -1
                      for e in gold.examples])
    spans: list[list[int]] = []  # [first year, last year, examples]
    for year in sorted(set(years.tolist()) - {-1}):
        count = int((years == year).sum())
        if spans and spans[-1][2] < min_size:
            spans[-1][1:] = [year, spans[-1][2] + count]
        else:
            spans.append([year, year, count])
    if len(spans) > 1 and spans[-1][2] < min_size:
        last = spans.pop()
        spans[-1][1:] = [last[1], spans[-1][2] + last[2]]
    return [(str(a) if a == b else f"{a}\u2013{b}", (years >= a) & (years <= b))
            for a, b, _ in spans]


def temp_plot(submission: Submission, score: Score, gold: GoldSplit) -> PlotSpec:
    """temp: EM by the year of the context (how a model decays far from its training data)."""
    outcomes = np.frombuffer(score.outcomes, dtype=np.uint8).astype(np.int64) & CORRECT
    min_size = MIN_TEST_BUCKET if submission.split == "test" else 1
    bars = []
    for label, mask in year_buckets(gold, min_size):
        value = metric_from_codes(outcomes[mask], 2, accuracy_from_binary, name=f"year:{label}",
                                  seed=20211107, resamples=500)
        bars.append(Bar(label, value.value, value.ci))
    return PlotSpec(
        "temp-years", f"{submission.method_name}: EM by year of the context",
        "Line chart of EM by the year of the question's date: " + describe(bars),
        [score.id, score.scored_at, submission.method_name, min_size], draw_years(bars))


def draw_years(bars: list[Bar]) -> Callable[[Axes], None]:
    """A line of EM over context years with a shaded 95% CI band."""
    def draw(ax: Axes) -> None:
        x = np.arange(len(bars))
        values = np.array([np.nan if b.value is None else b.value for b in bars])
        low = np.array([b.ci[0] if b.ci else np.nan for b in bars])
        high = np.array([b.ci[1] if b.ci else np.nan for b in bars])
        ax.plot(x, values, marker="o", color="#4C72B0")
        ax.fill_between(x, low, high, alpha=0.25, color="#4C72B0")
        step = max(1, len(bars) // 12)
        ax.set_xticks(x[::step], [b.label for b in bars][::step], rotation=30, ha="right")
        ax.set_xlabel("year of the context")
        ax.set_ylabel("EM (%)")
        ax.set_ylim(0, 100)
    return draw


def visible_scores(track: str, split: str, version_id: int) -> Any:
    """A query of the published, unhidden, live entries of a board and their scores."""
    return (select(Submission, Score).join(Score, Score.submission_id == Submission.id)
            .where(Score.gold_version_id == version_id, Score.track == track,
                   Score.split == split, Submission.visibility == Visibility.PUBLIC.value,
                   Submission.hidden.is_(False), Submission.deleted_at.is_(None)))


def top_plot(track: str, split: str, version_id: int, top: int) -> PlotSpec:
    """Per leaderboard: the top N entries across partitions (grouped bars with whiskers)."""
    rows = db.session.execute(visible_scores(track, split, version_id).order_by(
        Score.primary_metric.desc().nulls_last(), Submission.id).limit(top)).all()
    names = list(TRACK_INFO[track].metrics)
    series = [(s.method_name, score_bars(score, names)) for s, score in rows]
    alt = (f"Grouped bar chart of the top {len(series)} {track} {split} entries per metric: "
           + " | ".join(f"{name}: {describe(bars)}" for name, bars in series)) if series else (
        f"No published {track} {split} entries yet.")
    return PlotSpec("top", f"Top {len(series)}: {track} / {split}", alt,
                    [track, split, version_id, top,
                     [(s.id, score.id, score.scored_at, s.method_name) for s, score in rows]],
                    draw_grouped([column_label(n) for n in names], series))


def draw_grouped(groups: list[str], series: list[tuple[str, list[Bar]]]) -> Callable[[Axes], None]:
    """Grouped bars: one group per metric, one bar per entry."""
    def draw(ax: Axes) -> None:
        x = np.arange(len(groups))
        width = 0.8 / max(1, len(series))
        for index, (name, bars) in enumerate(series):
            by_label = {b.label: b for b in bars}
            chosen = [by_label.get(g, Bar(g, None)) for g in groups]
            values = [b.value or 0.0 for b in chosen]
            err = [[max(0.0, (b.value or 0.0) - b.ci[0]) if b.ci else 0.0 for b in chosen],
                   [max(0.0, b.ci[1] - (b.value or 0.0)) if b.ci else 0.0 for b in chosen]]
            ax.bar(x + index * width - 0.4 + width / 2, values, width, yerr=err, capsize=2,
                   label=name[:40])
        ax.set_xticks(x, groups, rotation=30, ha="right")
        ax.set_ylabel("percent")
        ax.set_ylim(0, 100)
        if series:
            ax.legend(fontsize=7, loc="upper right")
        else:
            ax.text(0.5, 0.5, "no published entries yet", ha="center", transform=ax.transAxes)
    return draw


def sota_plot(track: str, split: str, version_id: int) -> PlotSpec:
    """State of the art over time: the best primary metric among entries published so far."""
    return _sota_plot(ranking.board_generation(track, split, version_id))


@functools.lru_cache(maxsize=64)
def _sota_plot(generation: tuple[Any, ...]) -> PlotSpec:
    """The state-of-the-art plot of one board generation (read once per worker)."""
    _, track, split, version_id = generation[:4]
    rows = db.session.execute(
        select(Submission.created_at, Score.primary_metric)
        .join(Score, Score.submission_id == Submission.id)
        .where(*ranking.board_where(track, split, version_id),
               Submission.visibility == Visibility.PUBLIC.value,
               Submission.hidden.is_(False), Submission.deleted_at.is_(None),
               Score.primary_metric.is_not(None))
        .order_by(Submission.created_at, Submission.id)).all()
    steps: list[tuple[datetime, float]] = []
    for created, value in rows:
        if value is not None and (not steps or value > steps[-1][1]):
            steps.append((created, float(value)))
    primary = METRIC_LABELS[TRACK_INFO[track].primary]
    alt = (f"Step chart of the best {primary} on {track} {split} over time: "
           + "; ".join(f"{when:%Y-%m-%d} {value:.1f}" for when, value in steps)
           if steps else f"No published {track} {split} entries yet.")
    return PlotSpec("sota", f"State of the art: {track} / {split}", alt,
                    [generation[1:], steps], draw_steps(steps, primary))


def draw_steps(steps: list[tuple[datetime, float]], primary: str) -> Callable[[Axes], None]:
    """A step line of the best score so far."""
    def draw(ax: Axes) -> None:
        if not steps:
            ax.text(0.5, 0.5, "no published entries yet", ha="center", transform=ax.transAxes)
            return
        ax.step(np.array([d for d, _ in steps]), [v for _, v in steps], where="post", marker="o",
                color="#4C72B0")
        ax.set_ylabel(f"best {primary} (%)")
        ax.set_ylim(0, 100)
        ax.tick_params(axis="x", rotation=30)
    return draw


def cache_dir() -> Path:
    """The folder of cached images, in the instance folder (shared by a host's workers)."""
    return Path(current_app.instance_path) / "plot-cache"


def render(spec: PlotSpec, fmt: str) -> bytes:
    """The plot as PNG or SVG bytes, drawn once per cache key."""
    path = cache_dir() / f"{spec.kind}-{spec.key}.{fmt}"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    data = draw(spec, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename: a worker reading at the same time sees no half-written file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)
    prune(path.parent)
    return data


def prune(directory: Path, keep: int = MAX_CACHED) -> None:
    """Delete the least recently written images beyond `keep` (old keys are never read)."""
    files = sorted(directory.glob("*.*g"), key=lambda f: f.stat().st_mtime)
    for stale in files[:-keep] if len(files) > keep else []:
        stale.unlink(missing_ok=True)


def draw(spec: PlotSpec, fmt: str) -> bytes:
    """Draw a spec with Matplotlib's Agg/SVG backends (no pyplot: thread-safe)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    matplotlib.rcParams["svg.hashsalt"] = "situatedqa"  # stable SVG ids across redraws
    figure = Figure(figsize=(7, 3.8), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    ax.set_title(spec.title[:90], fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    spec.draw(ax)
    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Title": spec.title, "Description": spec.alt}
    if fmt == "svg":
        metadata["Date"] = None
    else:
        metadata["Software"] = None
    figure.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()
