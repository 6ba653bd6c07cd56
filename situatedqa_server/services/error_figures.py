"""A score's situated error figures laid out for the submission page: per partition, the
share of examples right and in each error class (a stacked bar), and each class's share of
the errors, with their CIs. Aggregates only: nothing here reads a per-example class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmark import TRACK_INFO, metric_card
from benchmark.situations import SUBCLASSES
from benchmark.tracks import ERROR_CLASS_LABELS

#: Bar colours by class (colour-blind safe, Okabe-Ito); the text beside the bar carries the
#: same figures, so colour is never the only cue.
COLOURS = {"correct": "#009E73", "outdated": "#E69F00", "premature": "#56B4E9",
           "other_context": "#CC79A7", "wrong_place": "#D55E00", "us_default": "#0072B2",
           "unrelated": "#999999"}


@dataclass(frozen=True)
class Segment:
    """One class's part of a partition's bar: its rate (percent of the examples)."""

    name: str
    label: str
    rate: float
    start: float
    colour: str


@dataclass(frozen=True)
class ClassFigures:
    """One reported class on one partition: rate and share with their CIs."""

    name: str
    label: str
    rate: float | None
    rate_ci: list[float] | None
    share: float | None
    share_ci: list[float] | None
    #: The class this one is a part of (US default of wrong place), else None: the table
    #: indents it, and the rows without a parent sum to the partition's errors.
    part_of: str | None = None
    #: False for a figure the row does not have (a mark, on a row stored before it): shown
    #: as "—", where n/a is a figure over no example.
    recorded: bool = True


#: Each sub-class's parent class (the inverse of SUBCLASSES).
PARENT_OF = {child: parent for parent, children in SUBCLASSES.items() for child in children}


@dataclass(frozen=True)
class PartitionErrors:
    """A partition's error figures: its examples, its bar, its classes' figures."""

    label: str
    n: int
    wrong: int
    segments: list[Segment]
    classes: list[ClassFigures]
    #: The track's mark beside the classes (geo: the US answer), in neither bar nor sum.
    marks: list[ClassFigures]
    #: What the mark counts, for the table's note (None without one).
    mark_note: str | None = None


def breakdown(track: str, metrics: dict[str, Any], ci: dict[str, Any],
              counts: dict[str, Any]) -> list[PartitionErrors]:
    """The error figures of a score's metrics, per partition (empty when it has none: an
    identification track, or a row stored before the error classes were recorded)."""
    info = TRACK_INFO[track]
    if info.errors is None or not info.error_metrics or info.error_metrics[0] not in metrics:
        return []
    rows = []
    for suffix in info.error_partitions:
        n = int(counts.get(f"em{suffix}") or 0)
        em = metrics.get(f"em{suffix}")
        classes = [ClassFigures(name, ERROR_CLASS_LABELS[name],
                                metrics.get(f"{name}_rate{suffix}"),
                                ci.get(f"{name}_rate{suffix}"),
                                metrics.get(f"{name}_share{suffix}"),
                                ci.get(f"{name}_share{suffix}"), PARENT_OF.get(name))
                   for name in info.errors.classes]
        wrong = int(counts.get(f"{info.errors.classes[0]}_share{suffix}") or 0)
        mark = info.errors.mark
        marks = [] if mark is None else [ClassFigures(
            mark.name, mark.label, metrics.get(f"{mark.name}_rate{suffix}"),
            ci.get(f"{mark.name}_rate{suffix}"), metrics.get(f"{mark.name}_share{suffix}"),
            ci.get(f"{mark.name}_share{suffix}"),
            recorded=f"{mark.name}_rate{suffix}" in metrics)]
        rows.append(PartitionErrors(info.label(f"em{suffix}") if suffix else "All", n, wrong,
                                    _segments(em, classes), classes, marks,
                                    metric_card.MARK_NOTES.get(mark.name) if mark else None))
    return rows


def _segments(em: float | None, classes: list[ClassFigures]) -> list[Segment]:
    """The bar's exclusive parts, left to right: right, then each class without the
    sub-classes it counts (wrong place shows its US-default part apart)."""
    rates = {c.name: c.rate or 0.0 for c in classes}
    for parent, children in SUBCLASSES.items():
        if parent in rates:
            rates[parent] = max(0.0, rates[parent] - sum(rates.get(c, 0.0) for c in children))
    parts = [("correct", "Right", em or 0.0)] + [
        (c.name, ERROR_CLASS_LABELS[c.name] + (" (not US)" if c.name in SUBCLASSES else ""),
         rates[c.name]) for c in classes]
    segments, start = [], 0.0
    for name, label, rate in parts:
        segments.append(Segment(name, label, rate, start, COLOURS[name]))
        start += rate
    return segments

