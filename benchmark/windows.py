"""The paper's examples and the fresh windows of a later gold version's test board.

A gold version may add test examples (new dates, new places, written by annotators) whose
inputs an *input release* publishes. Its test split then holds two kinds of examples: the
release's, with their current answers, and the fresh ones. They are read apart:

* The paper's metrics (Total, the partitions, EM Any, the error figures, the horizon, and so
  the rank) are computed over the release's examples alone. A ranking must compare entries
  on the examples all of them were given, and every entry was given the release's inputs;
  the fresh ones only by the entries that answered their release.
* Each input release a submission answered is a *window*, `fresh_<release>`: the track's
  per-example correctness (EM on a QA track) on its examples, with its count, and, named
  `<window>/<figure>`, the error figures on the whole window and, on a dated track, the
  knowledge horizon's year. So is `fresh`, every published release together, for a
  submission that answered all of them. A submission that did not answer a window has no
  value there (shown "—", never 0), and a window ranks only the entries that answered it.
* A window's interval is the Wilson score interval at every count (intervals.py): windows
  are small, and a percentile bootstrap of few examples understates what they can tell
  (at 0 of 3 it is a point).

Everything is a pure function of the version's split, the error tables, the masks and a
score's per-example codes, so an upload, an incremental and a full rescore agree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .error_classes import ErrorTables, error_metrics, restrict_tables
from .gold import GoldSplit
from .horizon import Horizon, knowledge_horizon
from .intervals import wilson_interval
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, BoolArray, IntArray, MetricValue
from .provenance import correct_of
from .scoring import ScoreResult, error_values, result_from_outcomes
from .tracks import (
    ERROR_FIGURES,
    FIGURE_SEPARATOR,
    FRESH,
    HORIZON,
    WINDOW_PREFIX,
    is_window,
    track_info,
)

__all__ = ["FIGURE_SEPARATOR", "FRESH", "Part", "Windows", "figure_name", "is_window",
           "make_windows", "window_error_values", "window_name", "windowed"]

def window_name(release: str) -> str:
    """The window of one input release: `fresh_<release>`."""
    return f"{WINDOW_PREFIX}{release}"


def figure_name(window: str, figure: str) -> str:
    """One of a window's figures other than its EM (`fresh_2031-contexts/outdated_rate`):
    release names never hold the separator (lower-case letters, digits and hyphens)."""
    return f"{window}{FIGURE_SEPARATOR}{figure}"


@dataclass(frozen=True, eq=False)
class Part:
    """Some examples of a version's split: a mask in its gold order, and the split and
    error tables of those examples alone (built once, read by every score)."""

    name: str
    mask: BoolArray
    split: GoldSplit
    tables: ErrorTables | None

    @property
    def size(self) -> int:
        """How many examples it holds."""
        return len(self.split)


def _part(name: str, gold: GoldSplit, tables: ErrorTables | None, mask: BoolArray) -> Part:
    mask = np.asarray(mask, dtype=np.bool_)
    mask.setflags(write=False)
    split = GoldSplit(gold.track, gold.split, [e for e, kept in zip(gold.examples, mask,
                                                                    strict=True) if kept])
    return Part(name, mask, split,
                restrict_tables(tables, mask) if tables is not None else None)


@dataclass(frozen=True, eq=False)
class Windows:
    """How one submission's score on a version's split is read: the paper's examples
    (None: every example of the split, as on a release board) and its windows, in order."""

    paper: Part | None
    windows: tuple[Part, ...] = ()

    @property
    def trivial(self) -> bool:
        """The score reads as it is: the paper's examples are the whole split, no window."""
        return self.paper is None and not self.windows

    def given(self, n: int) -> BoolArray:
        """The examples of the split (of n) the submission was given: the paper's and its
        windows'."""
        given = (np.ones(n, dtype=np.bool_) if self.paper is None
                 else np.array(self.paper.mask, dtype=np.bool_))
        for part in self.windows:
            given |= part.mask
        return given


def make_windows(gold: GoldSplit, tables: ErrorTables | None, paper_keys: Collection[str],
                 answered: Sequence[tuple[str, Collection[str]]], *,
                 every: bool) -> Windows:
    """The Windows of a version's split: the paper's examples are those whose key is in
    `paper_keys` (the release's), each (release name, its keys) in `answered` a window, and
    `fresh` their union when `every` (the submission answered every published release).
    A release none of whose examples the split holds any more makes no window."""
    keys = gold.keys
    in_paper = np.fromiter((k in paper_keys for k in keys), dtype=np.bool_, count=len(keys))
    paper = None if in_paper.all() else _part("paper", gold, tables, in_paper)
    windows: list[Part] = []
    union = np.zeros(len(keys), dtype=np.bool_)
    for release, release_keys in answered:
        wanted = set(release_keys)
        mask = np.fromiter((k in wanted for k in keys), dtype=np.bool_, count=len(keys))
        if mask.any():
            windows.append(_part(window_name(release), gold, tables, mask))
            union |= mask
    if every and windows:
        windows.insert(0, _part(FRESH, gold, tables, union))
    return Windows(paper, tuple(windows))


def _window_em(part: Part, outcomes: IntArray, resamples: int) -> MetricValue:
    """A window's EM (accuracy on an identification track), its count, and its Wilson CI
    (None when no CIs are asked for: resamples=0)."""
    correct = correct_of(part.split, outcomes[part.mask])
    n = int(correct.size)
    k = int(np.count_nonzero(correct))
    if n == 0:
        return MetricValue(None, None, 0)
    ci = None
    if resamples > 0:
        low, high = wilson_interval(k, n)
        ci = (100.0 * low, 100.0 * high)
    return MetricValue(100.0 * k / n, ci, n)


def _whole_figures(part: Part, codes: IntArray, marks: IntArray | None, *, seed: int,
                   resamples: int) -> dict[str, MetricValue]:
    """A window's error figures on all its examples (the partitions' left out: a window is
    too small to split), under its own names."""
    info = track_info(part.split.track)
    rule = info.errors
    if rule is None:
        return {}
    whole = {f"{cls}_{kind}" for kind in ERROR_FIGURES for cls in rule.figures}
    figures = error_metrics(part.split, codes[part.mask],
                            marks=None if marks is None else marks[part.mask],
                            seed=seed, resamples=resamples)
    return {figure_name(part.name, name): value for name, value in figures.items()
            if name in whole}


def _window_horizon(part: Part, codes: IntArray, *, seed: int,
                    resamples: int) -> MetricValue | None:
    """A window's knowledge horizon as a figure (its year, CI and count), on a dated track;
    None elsewhere or without its test (resamples=0)."""
    rule = track_info(part.split.track).errors
    if rule is None or not rule.horizon or part.tables is None or resamples <= 0:
        return None
    horizon = knowledge_horizon(part.tables, codes[part.mask], seed=seed,
                                resamples=resamples)
    ci = None if horizon.ci is None else (float(horizon.ci[0]), float(horizon.ci[1]))
    return MetricValue(None if horizon.year is None else float(horizon.year), ci, horizon.n)


def window_error_values(windows: Windows, gold: GoldSplit, tables: ErrorTables,
                        codes: IntArray, marks: IntArray | None = None, *,
                        seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                        ) -> tuple[dict[str, MetricValue], Horizon | None]:
    """The error figures and the horizon of a score's class codes as its board reads them:
    the paper's on its examples, then every window's (scoring.error_values otherwise)."""
    paper = windows.paper
    if paper is None or paper.tables is None:
        figures, horizon = error_values(gold, tables, codes, marks=marks, seed=seed,
                                        resamples=resamples)
    else:
        figures, horizon = error_values(
            paper.split, paper.tables, codes[paper.mask],
            marks=None if marks is None else marks[paper.mask], seed=seed,
            resamples=resamples)
    values = dict(figures)
    for part in windows.windows:
        values.update(_whole_figures(part, codes, marks, seed=seed, resamples=resamples))
        year = _window_horizon(part, codes, seed=seed, resamples=resamples)
        if year is not None:
            values[figure_name(part.name, HORIZON)] = year
    return values, horizon


def windowed(result: ScoreResult, windows: Windows, gold: GoldSplit, *,
             seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> ScoreResult:
    """A score of a version's whole split as its board reads it: the paper's metrics on the
    paper's examples, and the windows' figures (see the module). The per-example arrays stay
    the whole split's (in its gold order, as they are stored); so do `n` and the outcomes.

    Identification AUC needs the predictions' scores, which a result does not keep: on a
    split whose paper examples are not all of it, it is left out.
    """
    if windows.trivial:
        return result
    if result.outcomes.shape != (len(gold),):
        raise ValueError("the result must cover every example of the split")
    paper = windows.paper
    horizon = result.horizon
    if paper is None:
        metrics, ci, counts = dict(result.metrics), dict(result.ci), dict(result.counts)
    else:
        mask = paper.mask
        codes = result.error_classes
        tables = paper.tables if codes is not None else None
        part = result_from_outcomes(
            paper.split, result.outcomes[mask],
            None if result.f1 is None else result.f1[mask],
            None if result.f1_any is None else result.f1_any[mask],
            resamples=resamples, seed=seed, errors=tables,
            error_classes=None if codes is None or tables is None else codes[mask],
            error_marks=(None if result.error_marks is None or tables is None
                         else result.error_marks[mask]),
            error_intervals=result.error_intervals)
        metrics, ci, counts = dict(part.metrics), dict(part.ci), dict(part.counts)
        horizon = part.horizon
    for window in windows.windows:
        em = _window_em(window, result.outcomes, resamples)
        figures: dict[str, MetricValue] = {window.name: em}
        if result.error_classes is not None and track_info(gold.track).errors is not None:
            figures.update(_whole_figures(
                window, result.error_classes, result.error_marks, seed=seed,
                resamples=resamples if result.error_intervals else 0))
            year = _window_horizon(window, result.error_classes, seed=seed,
                                   resamples=resamples if result.error_intervals else 0)
            if year is not None:
                figures[figure_name(window.name, HORIZON)] = year
        for name, value in figures.items():
            metrics[name], ci[name], counts[name] = value.value, value.ci, value.count
    return replace(result, metrics=metrics, ci=ci, counts=counts, horizon=horizon)
