"""Plots drawn on the server with Matplotlib (Agg), cached on disk until their data change.

Every plot is a PlotSpec: its data, read from the database, and a cache key that hashes
exactly those rows (score ids and scoring times included). A new submission, a publish,
a hide or a rescore changes the rows behind a plot and so its key; every worker computes
the key from the database on each request, so none can serve a stale image. The files
live in the instance folder, shared by the workers of a host.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from flask import current_app
from sqlalchemy import func, select

from benchmark import TRACK_INFO, GoldSplit
from benchmark.equivalence import lenient_family
from benchmark.intervals import codes_value
from benchmark.metrics import accuracy_from_binary, metric_from_codes
from benchmark.scoring import CORRECT
from benchmark.situations import date_span
from benchmark.tracks import GAP, RELEASED, UNRELEASED

from ..extensions import db
from ..models import Score, Submission
from . import board, ranking
from .board import BoardFilter

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Bump when the drawing code changes, so cached images are redrawn.
STYLE_VERSION = 4
FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
#: Every bin of context years has at least this many examples, on every split: fewer make
#: a point swing between 0 and 100, and on the hidden test split they would reveal how a
#: handful of test examples were answered.
MIN_TEST_BUCKET = 30
#: Before this year the context years are binned by decade, from it on by single year.
DECADES_BEFORE = 1990
COLOR = "#3b5b92"
#: Figure size in inches at 100 dpi (so 700 x 380 pixels).
SIZE = (7.0, 3.8)
MAX_TOP = 10
MAX_CACHED = 2000
#: A board with no filter: every visible entry.
NO_FILTER = BoardFilter()
#: Location groups of the geo track, in the order of paper Table 7.
GEO_GROUPS = ("em_us", "em_india", "em_other_common", "em_rare")


@dataclass
class Bar:
    """One bar: a label, a value in percent (None: undefined), its 95% CI and its n."""

    label: str
    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None


@dataclass
class PlotSpec:
    """What to draw, a sentence and a table describing it in words, and its cache key.

    `note` set means the data are too thin for a chart: pages show that sentence instead.
    """

    kind: str
    title: str
    alt: str
    signature: Any
    draw: Callable[[Axes], None] = field(repr=False)
    table: list[list[str]] = field(default_factory=list)
    note: str | None = None
    size: tuple[float, float] = SIZE

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


def table_rows(bars: list[Bar], series: str | None = None) -> list[list[str]]:
    """Rows of the "data in words" table: [series,] label, value, 95% CI, n."""
    rows = []
    for bar in bars:
        value = "n/a" if bar.value is None else f"{bar.value:.1f}"
        interval = f"{bar.ci[0]:.1f}\u2013{bar.ci[1]:.1f}" if bar.ci else ""
        cells = [bar.label, value, interval, "" if bar.n is None else str(bar.n)]
        rows.append(([series] if series is not None else []) + cells)
    return rows


TABLE_HEADER = ["", "value (%)", "95% CI", "n"]


def percent_axis(ax: Axes, label: str) -> None:
    """A 0–100 y axis with headroom, so bars and whiskers at 100 stay clear of the frame."""
    ax.set_ylabel(label)
    ax.set_ylim(0, 108)
    ax.set_yticks(range(0, 101, 20))
    ax.spines[["top", "right"]].set_visible(False)


def draw_bars(bars: list[Bar], ylabel: str) -> Callable[[Axes], None]:
    """A drawing function: one bar per item with CI whiskers."""
    def draw(ax: Axes) -> None:
        x = np.arange(len(bars))
        values = [b.value or 0.0 for b in bars]
        low = [max(0.0, (b.value or 0.0) - b.ci[0]) if b.ci else 0.0 for b in bars]
        high = [max(0.0, b.ci[1] - (b.value or 0.0)) if b.ci else 0.0 for b in bars]
        ax.bar(x, values, yerr=[low, high], capsize=4, color=COLOR, ecolor="#222222")
        ax.set_xticks(x, [b.label for b in bars], rotation=30 if len(bars) > 6 else 0,
                      ha="right" if len(bars) > 6 else "center")
        percent_axis(ax, ylabel)
        for position, bar in enumerate(bars):
            if bar.value is None:
                ax.text(position, 2, "n/a", ha="center", fontsize=8)
    return draw


def score_bars(score: Score, names: list[str] | None = None) -> list[Bar]:
    """Bars of a stored score's metrics (all of them, or the named ones)."""
    names = names if names is not None else list(score.metrics)
    label = TRACK_INFO[score.track].label
    return [Bar(label(n), score.metrics.get(n),
                (score.ci[n][0], score.ci[n][1]) if score.ci.get(n) else None,
                (score.counts or {}).get(n))
            for n in names if n in score.metrics]


def submission_plot(submission: Submission, score: Score) -> PlotSpec:
    """Per submission: a bar per metric and partition, with CI whiskers (grouped for ID)."""
    if TRACK_INFO[submission.track].identification:
        return identification_plot(submission, score)
    groups = [(name, score_bars(score, names))
              for name, names in metric_groups(submission.track, score.metrics) if names]
    bars = [bar for _, found in groups for bar in found]
    return PlotSpec(
        "submission", f"{submission.method_name}: {submission.track} / {submission.split}",
        f"Bar chart of every metric of {submission.method_name} with 95% CIs, in groups ("
        + ", ".join(name for name, _ in groups) + "): " + describe(bars),
        [score.id, score.scored_at, submission.method_name],
        draw_bar_groups(groups, "percent"),
        table=[["group", "metric", *TABLE_HEADER[1:]],
               *[row for name, found in groups for row in table_rows(found, name)]])


#: The groups of a QA submission's chart, the paper's first.
PAPER_GROUP = "the paper's metrics"
LENIENT_GROUPS = {"em_equiv": "EM equiv (not in the paper)",
                  "f1": "token F1 (not in the paper)"}
GROUP_COLORS = (COLOR, "#8c6d1f", "#5f8f5a", "#777777")


PROVENANCE_GROUP = "unreleased / released (not in the paper)"


def metric_groups(track: str, names: Any) -> list[tuple[str, list[str]]]:
    """A QA score's metrics in groups: the paper's (in its order), then each lenient family
    (on the same partitions, in the same order), then anything else stored but the error
    figures and the horizon (the submission page draws those apart)."""
    info = TRACK_INFO[track]
    paper = [n for n in info.metrics if n in names]
    groups = [(PAPER_GROUP, paper)]
    for family, title in LENIENT_GROUPS.items():
        groups.append((title, [n for n in info.lenient_metrics
                               if n in names and lenient_family(n) == family]))
    # The provenance figures, when the board has them (the gap is a difference of points,
    # not a share: it is left out of the bars, the table gives it).
    groups.append((PROVENANCE_GROUP, [n for n in (UNRELEASED, RELEASED) if n in names]))
    grouped = {n for _, members in groups for n in members}
    apart = {*info.error_metrics, *info.horizon_metrics, GAP}
    groups.append(("other", [n for n in names if n not in grouped and n not in apart]))
    return groups


def draw_bar_groups(groups: list[tuple[str, list[Bar]]],
                    ylabel: str) -> Callable[[Axes], None]:
    """Bars with CI whiskers in groups side by side, a gap and a colour per group, and a
    legend naming the groups."""
    def draw(ax: Axes) -> None:
        position, ticks, labels = 0.0, [], []
        for index, (name, bars) in enumerate(groups):
            x = position + np.arange(len(bars))
            values = [b.value or 0.0 for b in bars]
            low = [max(0.0, (b.value or 0.0) - b.ci[0]) if b.ci else 0.0 for b in bars]
            high = [max(0.0, b.ci[1] - (b.value or 0.0)) if b.ci else 0.0 for b in bars]
            ax.bar(x, values, yerr=[low, high], capsize=3, ecolor="#222222", label=name,
                   color=GROUP_COLORS[index % len(GROUP_COLORS)])
            for offset, bar in enumerate(bars):
                if bar.value is None:
                    ax.text(position + offset, 2, "n/a", ha="center", fontsize=7)
            ticks += list(x)
            labels += [b.label for b in bars]
            position += len(bars) + 1  # a gap between groups
        many = len(labels) > 6
        ax.set_xticks(ticks, labels, rotation=45 if many else 0, ha="right" if many else "center",
                      fontsize=7 if many else None)
        percent_axis(ax, ylabel)
        if len(groups) > 1:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return draw


def identification_plot(submission: Submission, score: Score) -> PlotSpec:
    """Identification: one group per statistic, one bar for all examples and per source."""
    info = TRACK_INFO[submission.track]
    statistics = list(info.metrics)
    sources = sorted({n.split("_", 1)[1] for n in score.metrics
                      if "_" in n and n.split("_", 1)[0] in statistics})
    series = [("all", score_bars(score, statistics))]
    for source in sources:
        names = [f"{s}_{source}" for s in statistics]
        series.append((info.source_label(source), [Bar(info.label(s), *bar_values(score, n))
                                                    for s, n in zip(statistics, names,
                                                                    strict=True)]))
    rows = [row for name, bars in series for row in table_rows(bars, name)]
    if "auc" in score.metrics:
        rows += table_rows(score_bars(score, ["auc"]), "all")
    return PlotSpec(
        "identification", f"{submission.method_name}: {submission.track} / {submission.split}",
        f"Grouped bar chart of {', '.join(info.label(s) for s in statistics)} of "
        f"{submission.method_name}, for all examples and per source dataset, with 95% CIs.",
        [score.id, score.scored_at, submission.method_name],
        draw_grouped([info.label(s) for s in statistics], series),
        table=[["examples", "metric", *TABLE_HEADER[1:]], *rows])


def bar_values(score: Score, name: str) -> tuple[float | None, tuple[float, float] | None,
                                                 int | None]:
    """A stored metric's value, CI and n."""
    ci = score.ci.get(name)
    return (score.metrics.get(name), (ci[0], ci[1]) if ci else None,
            (score.counts or {}).get(name))


def groups_plot(submission: Submission, score: Score) -> PlotSpec:
    """EM per group of the track's groups plot (geo: location groups, paper Table 7), with
    CI whiskers."""
    groups = TRACK_INFO[submission.track].groups
    if groups is None:
        raise ValueError(f"track {submission.track!r} has no groups plot")
    bars = score_bars(score, list(groups.metrics))
    return PlotSpec(
        "groups", f"{submission.method_name}: EM per {groups.noun}",
        f"Bar chart of EM per {groups.noun}: " + describe(bars),
        [score.id, score.scored_at, submission.method_name], draw_bars(bars, "EM (%)"),
        table=[[groups.noun, *TABLE_HEADER[1:]], *table_rows(bars)])


@dataclass
class YearBin:
    """Consecutive context years pooled into one point: first and last year, examples."""

    first: int
    last: int
    mask: np.ndarray
    center: float

    @property
    def label(self) -> str:
        """'1998', '1990–1993'."""
        return str(self.first) if self.first == self.last else f"{self.first}\u2013{self.last}"


def context_years(gold: GoldSplit) -> np.ndarray:
    """The year each example's context date starts in, read as the error classes read it
    (benchmark.situations.date_span: "2019", "March 30, 2021"); -1 where it has none or
    cannot be read."""
    spans = (date_span(e.context.get("date", "")) for e in gold.examples)
    return np.array([date.fromordinal(span[0]).year if span else -1 for span in spans],
                    dtype=np.int64)


def year_buckets(gold: GoldSplit, min_size: int = MIN_TEST_BUCKET) -> list[YearBin]:
    """Decades before 1990, single years after, pooled in order until each has min_size."""
    years = context_years(gold)
    units = sorted({y // 10 * 10 if y < DECADES_BEFORE else y for y in years.tolist()} - {-10})
    spans: list[list[int]] = []  # [first year, last year, examples]
    for unit in units:
        last = unit + 9 if unit < DECADES_BEFORE else unit
        count = int(((years >= unit) & (years <= last)).sum())
        if spans and spans[-1][2] < min_size:
            spans[-1][1:] = [last, spans[-1][2] + count]
        else:
            spans.append([unit, last, count])
    if len(spans) > 1 and spans[-1][2] < min_size:
        tail = spans.pop()
        spans[-1][1:] = [tail[1], spans[-1][2] + tail[2]]
    bins = []
    for first, last, _ in spans:
        mask = (years >= first) & (years <= last)
        # The point sits at the median year of its examples: a bin that pools sparse
        # centuries is drawn where its examples are, not in the middle of the centuries.
        bins.append(YearBin(int(years[mask].min()), int(years[mask].max()), mask,
                            float(np.median(years[mask]))))
    return bins


def years_plot(submission: Submission, score: Score, gold: GoldSplit) -> PlotSpec:
    """EM by the year of the context date (how a model decays far from its training data)."""
    outcomes = np.frombuffer(score.outcomes, dtype=np.uint8).astype(np.int64) & CORRECT
    bins = year_buckets(gold, MIN_TEST_BUCKET)
    bars = []
    for b in bins:
        codes = outcomes[b.mask]
        value = codes_value(metric_from_codes(codes, 2, accuracy_from_binary,
                                              name=f"year:{b.label}", seed=20211107,
                                              resamples=500), codes, 2, accuracy_from_binary)
        bars.append(Bar(b.label, value.value, value.ci, int(b.mask.sum())))
    undated = int((context_years(gold) < 0).sum())
    return PlotSpec(
        "years", f"{submission.method_name}: EM by year of the context",
        f"Line chart of EM by the year of the question's date, in {len(bars)} bins of at "
        f"least {MIN_TEST_BUCKET} examples (decades before {DECADES_BEFORE})"
        + (f"; {undated} examples whose date cannot be read are left out." if undated
           else "; every example of the split is counted."),
        [score.id, score.scored_at, submission.method_name, MIN_TEST_BUCKET, DECADES_BEFORE],
        draw_years(bars, [b.center for b in bins]),
        table=[["years of the context", "EM (%)", "95% CI", "n"], *table_rows(bars)])


def draw_years(bars: list[Bar], centers: list[float]) -> Callable[[Axes], None]:
    """EM over a numeric axis of context years, with the 95% CI as a shaded band."""
    def draw(ax: Axes) -> None:
        x = np.array(centers)
        values = np.array([np.nan if b.value is None else b.value for b in bars])
        low = np.array([b.ci[0] if b.ci else np.nan for b in bars])
        high = np.array([b.ci[1] if b.ci else np.nan for b in bars])
        ax.fill_between(x, low, high, alpha=0.2, color=COLOR, linewidth=0,
                        label="95% CI")
        ax.plot(x, values, marker="o", markersize=3, color=COLOR, label="EM")
        ax.set_xlabel("year of the context (bins of at least "
                      f"{MIN_TEST_BUCKET} examples)")
        percent_axis(ax, "EM (%)")
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        ax.legend(fontsize=8, loc="lower left", frameon=False)
    return draw


def visible_scores(track: str, split: str, version_id: int,
                   filters: BoardFilter = NO_FILTER) -> Any:
    """A query of the published, unhidden, live entries of a board that the filters keep,
    and their scores."""
    return (select(Submission, Score).join(Score, Score.submission_id == Submission.id)
            .where(*board.entries_where(track, split, version_id),
                   *filters.submission_where()))


#: The sentence of a board chart whose filters hide every entry.
FILTERED_OUT = "No entries match these filters: the charts follow the table's filters."


def top_plot(track: str, split: str, version_id: int, top: int,
             filters: BoardFilter = NO_FILTER) -> PlotSpec:
    """Per leaderboard: the top N entries across partitions (grouped bars with whiskers), of
    the entries the board's filters keep."""
    return _top_plot(ranking.board_generation(track, split, version_id), top, filters)


@functools.lru_cache(maxsize=64)
def _top_plot(generation: tuple[Any, ...], top: int, filters: BoardFilter) -> PlotSpec:
    """The top-N plot of one board generation (read once per worker, as _sota_plot)."""
    _, track, split, version_id = generation[:4]
    order = (board.ranking_order(), Submission.id)
    # The top ids first, sorted as narrow rows; then only their objects are read (a sort of
    # whole rows carries every entry's columns through it).
    top_ids = (visible_scores(track, split, version_id, filters)
               .with_only_columns(Submission.id).order_by(*order).limit(top).subquery())
    rows = db.session.execute(visible_scores(track, split, version_id, filters)
                              .join(top_ids, top_ids.c.id == Submission.id)
                              .order_by(*order)).all()
    names = list(TRACK_INFO[track].metrics)
    series = [(s.method_name, score_bars(score, names)) for s, score in rows]
    alt = (f"Grouped bar chart of the top {len(series)} {track} {split} entries per metric, "
           "with 95% CIs." if series else f"No published {track} {split} entries yet.")
    return PlotSpec("top", f"Top {len(series)}: {track} / {split}", alt,
                    [track, split, version_id, top, filters.query_args(),
                     [(s.id, score.id, score.scored_at, s.method_name) for s, score in rows]],
                    draw_grouped([TRACK_INFO[track].label(n) for n in names], series),
                    table=[["entry", "metric", *TABLE_HEADER[1:]],
                           *[row for name, bars in series for row in table_rows(bars, name)]],
                    note=None if series else FILTERED_OUT if filters.active else (
                        "No published submissions on this board yet: its plots appear with the "
                        "first one."))


def draw_grouped(groups: list[str], series: list[tuple[str, list[Bar]]]) -> Callable[[Axes], None]:
    """Grouped bars: one group per metric, one bar per entry; the legend outside the axes."""
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
                   label=shorten(name), error_kw={"elinewidth": 0.8})
        ax.set_xticks(x, groups, rotation=30 if len(groups) > 5 else 0,
                      ha="right" if len(groups) > 5 else "center")
        percent_axis(ax, "percent")
        if series:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        else:
            ax.text(0.5, 0.5, "no published entries yet", ha="center", transform=ax.transAxes)
    return draw


def shorten(name: str, limit: int = 28) -> str:
    """A legend label of at most `limit` characters."""
    return name if len(name) <= limit else name[:limit - 1] + "\u2026"


def sota_plot(track: str, split: str, version_id: int,
              filters: BoardFilter = NO_FILTER) -> PlotSpec:
    """State of the art over time: the best primary metric among entries published so far
    (of those the board's filters keep)."""
    return _sota_plot(ranking.board_generation(track, split, version_id), filters)


@functools.lru_cache(maxsize=64)
def _sota_plot(generation: tuple[Any, ...], filters: BoardFilter) -> PlotSpec:
    """The state-of-the-art plot of one board generation (read once per worker)."""
    _, track, split, version_id = generation[:4]
    order = (Submission.created_at, Submission.id)
    # Only the entries that beat every earlier one can be a step: the database keeps those
    # (a running max over the earlier rows), so Python reads a few rows, not the board.
    published = (
        select(Submission.created_at, Submission.id, Score.primary_metric.label("value"),
               func.max(Score.primary_metric).over(order_by=order, rows=(None, -1))
               .label("best_before"))
        .join(Score, Score.submission_id == Submission.id)
        .where(*board.entries_where(track, split, version_id),
               Score.primary_metric.is_not(None), *filters.submission_where())
        .subquery())
    rows = db.session.execute(
        select(published.c.created_at, published.c.value)
        .where(published.c.best_before.is_(None) | (published.c.value > published.c.best_before))
        .order_by(published.c.created_at, published.c.id)).all()
    steps = best_by_day(rows)
    primary = TRACK_INFO[track].label(TRACK_INFO[track].primary)
    alt = (f"Step chart of the best {primary} on {track} {split} by day, from "
           f"{steps[0][0]:%Y-%m-%d} to {steps[-1][0]:%Y-%m-%d}." if steps
           else f"No published {track} {split} entries yet.")
    note = None
    if len(steps) < 2:
        note = (f"The state of the art over time appears once entries were published on two "
                f"different days; so far the best {primary} is {steps[0][1]:.1f} "
                f"({steps[0][0]:%Y-%m-%d})." if steps else None)
    return PlotSpec("sota", f"State of the art: {track} / {split}", alt,
                    [generation[1:], filters.query_args(), steps],
                    draw_steps(steps, primary, note or alt),
                    table=[["day", f"best {primary} so far (%)"],
                           *[[f"{day:%Y-%m-%d}", f"{value:.1f}"] for day, value in steps]],
                    note=note)


def best_by_day(rows: Any) -> list[tuple[date, float]]:
    """The best value so far, one point per day on which it improved."""
    steps: list[tuple[date, float]] = []
    for created, value in rows:
        if value is None or (steps and value <= steps[-1][1]):
            continue
        day = created.date()
        if steps and steps[-1][0] == day:
            steps[-1] = (day, float(value))
        else:
            steps.append((day, float(value)))
    return steps


def draw_steps(steps: list[tuple[date, float]], primary: str,
               note: str) -> Callable[[Axes], None]:
    """A step line of the best score so far on a date axis (days, never times of day)."""
    def draw(ax: Axes) -> None:
        if len(steps) < 2:
            import textwrap

            ax.text(0.5, 0.5, textwrap.fill(note, 70), ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_axis_off()
            return
        import matplotlib.dates

        dates: Any = matplotlib.dates  # untyped module
        days = [d for d, _ in steps]
        x = dates.date2num(days)
        ax.step(x, [v for _, v in steps], where="post", marker="o", markersize=4,
                color=COLOR)
        if (days[-1] - days[0]).days < 8:
            locator: Any = dates.DayLocator()
            ax.xaxis.set_major_formatter(dates.DateFormatter("%Y-%m-%d"))
        else:
            locator = dates.AutoDateLocator(minticks=3, maxticks=7)
            ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))
        ax.xaxis.set_major_locator(locator)
        ax.set_xlim(x[0] - 1, x[-1] + 1)
        percent_axis(ax, f"best {primary} (%)")
    return draw


def cache_dir() -> Path:
    """The folder of cached images (a cache: deleting it at any moment is safe)."""
    return Path(current_app.config["CACHE_DIR"]) / "plots"


def render(spec: PlotSpec, fmt: str) -> bytes:
    """The plot as PNG or SVG bytes, drawn once per cache key."""
    path = cache_dir() / f"{spec.kind}-{spec.key}.{fmt}"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    data = draw(spec, fmt)
    # The cache folder may be deleted meanwhile: serve the image, cache it next time.
    with contextlib.suppress(FileNotFoundError):
        store_cached(path, data)
    return data


def store_cached(path: Path, data: bytes) -> None:
    """Write then rename, so a worker reading at the same time sees no half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)
    prune(path.parent)


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
    figure = Figure(figsize=spec.size, dpi=100, layout="constrained")
    ax = figure.add_subplot()
    ax.set_title(shorten(spec.title, 90), fontsize=10, loc="left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    spec.draw(ax)
    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Title": spec.title, "Description": spec.alt}
    if fmt == "svg":
        metadata["Date"] = None
    else:
        metadata["Software"] = None
    figure.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()
