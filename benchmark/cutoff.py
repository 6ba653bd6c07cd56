"""A score after a model's knowledge cutoff: the examples whose answer took effect later.

Not in the paper. A submission may declare the date its model's knowledge stops (its
training data's cutoff). Every example whose answer took effect on a known date is then on
one side of it:

* after the cutoff: the answer did not exist when the training data was collected, so no
  contamination can have taught it. A closed-book model can only be outdated there (it
  answers with what held at its cutoff); a retrieval system's score there shows whether it
  reads the present;
* by the cutoff: the answer was already in effect (and may be in the training data).

An example's effective date (`effective_dates`) is, in this order:

1. its gold's `answer_since` (Example.answer_since): an answer a gold version took from an
   annotation campaign, dated by the annotator, else by the campaign's as-of date;
2. on a dated track (temp), January 1 of the year its answer took effect: the start of the
   run of contexts carrying it after an earlier, different answer (situations.py's `since`,
   the year the knowledge horizon bins by: error_classes.ErrorTables.since);
3. none. An answer that replaced no earlier one may have held since long before any model's
   data: nothing says when it took effect, so it is on neither side; geo's answers carry no
   date at all. Put on either side it would blur what the side says (a post-cutoff answer
   no model could have read), so such examples are in neither figure.

The figures, over the examples the submission was given (`given`; a later version's fresh
examples only when it answered their input release):

* ``em_post_cutoff``: the track's per-example correctness (provenance.correct_of: EM on a
  QA track) on the examples whose answer took effect after the cutoff (strictly: a date
  equal to the cutoff is by it), with its count;
* ``outdated_rate_post_cutoff``: the share of those examples answered with an outdated
  answer (class OUTDATED of situations.py), given class codes, on a track that has the
  class (temp; not geo, whose wrong answers are never outdated);
* ``em_pre_cutoff``, ``outdated_rate_pre_cutoff``: the same on the other given examples
  that have an effective date.

Every interval is the Wilson score interval (intervals.py), at every count: the sets are
small, and a percentile bootstrap of few examples understates what they can tell. A side
with no example has no value (None, count 0). The figures never rank a board. Everything is
a pure function of the split, its tables, the codes and the date, so every scoring path
gives the same.
"""

from __future__ import annotations

from datetime import date

import numpy as np

from .error_classes import ErrorTables
from .gold import GoldSplit
from .intervals import wilson_interval
from .metrics import BoolArray, IntArray, MetricValue
from .provenance import correct_of
from .situations import OUTDATED
from .tracks import (
    CUTOFF_LABELS,
    CUTOFF_METRICS,
    EM_POST_CUTOFF,
    EM_PRE_CUTOFF,
    OUTDATED_POST_CUTOFF,
    OUTDATED_PRE_CUTOFF,
    track_info,
)

__all__ = ["CUTOFF_LABELS", "CUTOFF_METRICS", "EM_POST_CUTOFF", "EM_PRE_CUTOFF",
           "NO_DATE", "OUTDATED_POST_CUTOFF", "OUTDATED_PRE_CUTOFF", "cutoff_values",
           "effective_dates", "share"]

#: The effective date of an example that has none (effective_dates).
NO_DATE = -1


def effective_dates(split: GoldSplit, tables: ErrorTables | None) -> IntArray:
    """Per example of the split, in its order, the proleptic ordinal of the day its answer
    took effect (see the module: answer_since, else January 1 of the tables' `since` year),
    NO_DATE when it has none. `tables`: the split's error tables (None: no dated contexts)."""
    n = len(split)
    days = np.full(n, NO_DATE, dtype=np.int64)
    if tables is not None:
        if (tables.track, tables.split, len(tables)) != (split.track, split.split, n):
            raise ValueError(f"tables of {tables.track}/{tables.split} for {split.track}/"
                             f"{split.split}")
        for position in np.flatnonzero(tables.since >= 0).tolist():
            days[position] = date(int(tables.since[position]), 1, 1).toordinal()
    for position, example in enumerate(split.examples):
        if example.answer_since is not None:
            days[position] = date.fromisoformat(example.answer_since).toordinal()
    return days


def share(k: int, n: int) -> MetricValue:
    """k of n as a percentage with its Wilson interval; no value over no example."""
    if n == 0:
        return MetricValue(None, None, 0)
    low, high = wilson_interval(k, n)
    return MetricValue(100.0 * k / n, (100.0 * low, 100.0 * high), n)


def cutoff_values(split: GoldSplit, tables: ErrorTables | None, outcomes: IntArray,
                  classes: IntArray | None, cutoff: date, given: BoolArray | None = None
                  ) -> dict[str, MetricValue]:
    """The figures after and by a declared cutoff (see the module), in CUTOFF_METRICS'
    order; the outdated rates only with class codes of a track with the class. {} when no
    given example has an effective date (nothing is on either side: an identification
    track, geo's release)."""
    n = len(split)
    if np.shape(outcomes) != (n,) or (classes is not None and np.shape(classes) != (n,)) or (
            given is not None and given.shape != (n,)):
        raise ValueError("the codes and the mask must cover every example of the split")
    days = effective_dates(split, tables)
    dated = days != NO_DATE
    if given is not None:
        dated &= given
    if not dated.any():
        return {}
    after = dated & (days > cutoff.toordinal())
    by = dated & ~after
    correct = correct_of(split, outcomes)
    rule = track_info(split.track).errors
    # A track without the outdated class (geo) has no outdated rate, not one of 0%.
    stale = (None if classes is None or rule is None or "outdated" not in rule.classes
             else np.asarray(classes, dtype=np.int64) == OUTDATED)
    values: dict[str, MetricValue] = {}
    for em_name, outdated_name, part in ((EM_POST_CUTOFF, OUTDATED_POST_CUTOFF, after),
                                         (EM_PRE_CUTOFF, OUTDATED_PRE_CUTOFF, by)):
        size = int(part.sum())
        values[em_name] = share(int(correct[part].sum()), size)
        if stale is not None:
            values[outdated_name] = share(int(stale[part].sum()), size)
    return {name: values[name] for name in CUTOFF_METRICS if name in values}
