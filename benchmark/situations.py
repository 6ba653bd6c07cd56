"""The situated error taxonomy's gold side: each example's other answers, by class.

A wrong prediction of a QA example is told apart by which *other* answer of its question it
equals, after answer normalization: one of an earlier or later context (temp), of another
location (geo), or the previous or current answer (present, curprev). These pure functions
read the gold examples alone (no model, no prediction) and give, per example, the map from
each normalized other answer to its class; at upload the class of a wrong prediction is a
lookup of its normalized text in that map (benchmark/error_classes.py).

Every rule below is declared with its track in the registry (benchmark/tracks.py,
TrackInfo.errors); nothing here branches on a track's name. The tie rules, which decide
whenever the gold cannot tell two classes apart (never a guess):

* An answer of the example itself is never an other answer (a prediction equal to it is
  right), and neither is an answer that normalizes to the empty string (an empty prediction,
  as for an example a file lacks, is unrelated).
* temp, geo: an answer that some context of the question lists beside one of the example's
  own answers is an *alias* of its answer ("1999" listed with "November 28, 1999"): it is
  **other-context**, whatever other contexts carry it, since the gold gives it for this
  answer's own period or place too.
* temp: a context is *earlier* (*later*) when its whole date span ends before (starts after)
  the example's: a year is the span of that year, a full date one day. Spans that overlap (the
  same date; a year and a date inside it) or a date that cannot be read cannot be ordered.
  An answer matched by an earlier context (or the timeline's previous answer) and by no later
  one is **outdated**; by a later one and no earlier one **premature**; by both earlier and
  later contexts (an answer that came back), or only by contexts that cannot be ordered, or
  only by `any_answer` (no context of the question carries it) **other-context**. A context
  that cannot be ordered does not block outdated or premature.
* temp, the timeline's previous answer: the previous answers of the question (the companion
  track's `previous` example, i.e. raw_data's `prev_answers`) are earlier for an example whose
  answers meet the question's current answers and none of its previous ones; an answer listed
  as both current and previous is not used.
* geo: an answer carried by another location is **wrong place**; **US default** when every
  other location carrying it is a US location (the rule of the US partition); when a US and
  a non-US location both carry it, it is wrong place, not US default. An answer also carried
  by another record of the *same* location (locations compared after answer normalization:
  "India" and "india"), or only by `any_answer`, is **other-context**: the gold gives it for
  this very place too, or for no place, so no location can be blamed.
* present / curprev: the other answers are `any_answer` minus the answers (the previous
  answers of a current answer, the current answers of a previous one); the track declares
  their class.

Beside the classes a track may declare a *mark* (tracks.ErrorRule.mark): a set of other
answers per example, counted apart from the classes, over examples of its own. geo's is the
**US answer**: for an example whose location is not the United States, written any of the
ways the release writes it (tracks.US_ANSWER_LOCATIONS: "USA" and "US" too), the answers of
the records of its question whose location is; an example at a US location is outside it
(None). A wrong prediction equal to one of them is marked whatever its class (US default,
wrong place when a non-US location shares the answer, other-context when it is an alias): the
paper's sense of a model assuming the US, which US default, kept to the US partition's rule
and to answers no other location gives, counts only in part. A mark only ever marks other
answers of the example (build_error_tables checks it).

A temp example also records its *earlier* answers: the other answers an earlier context or
the timeline's previous answer carries. The alias and came-back rules class some of them
other-context, so the outdated figures count at most the rest (error_classes.earlier_counts).

A temp example also gets the year its answer took effect (`since`), for the knowledge
horizon: the year of the earliest context of its run, i.e. of the contexts carrying one of
its answers or their aliases that start after the last earlier context with none of them,
and not after it; None when no earlier context has a different answer (nothing for a model
to be stale about).
"""

from __future__ import annotations

import calendar
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final

from .example import Example
from .normalize import normalize_many

#: Every class an example may get, its code the position (one byte per example, stored like
#: the outcome codes). `correct` is EM-right; each QA track reports the classes it declares.
ERROR_CLASSES: Final = (
    "correct", "outdated", "premature", "other_context", "wrong_place", "us_default",
    "unrelated",
)
CORRECT_CLASS, OUTDATED, PREMATURE, OTHER_CONTEXT, WRONG_PLACE, US_DEFAULT, UNRELATED = range(7)
#: A reported class also counts its sub-classes: US default is a kind of wrong place.
SUBCLASSES: Final[Mapping[str, tuple[str, ...]]] = {"wrong_place": ("us_default",)}

#: Which way a context lies from the example's: before, after, or not comparable.
EARLIER, LATER, UNORDERED = "earlier", "later", "unordered"

_YEAR = re.compile(r"\d{4}")
_DAY = re.compile(r"([A-Za-z]+) (\d{1,2}), (\d{4})")
_MONTHS: Final = {name: number for number, name in enumerate(calendar.month_name) if name}


@dataclass(frozen=True)
class Situated:
    """One example's other answers: normalized answer -> class code; for a dated track also
    `since` (the year its answer took effect), `year` (the year its context starts in) and
    `earlier` (the other answers an earlier context or the timeline carries, whatever the
    tie rules class them)."""

    others: Mapping[str, int]
    since: int | None = None
    year: int | None = None
    earlier: frozenset[str] = frozenset()


#: A track's rule: (its examples, the companion track's examples) -> one Situated each.
OtherAnswersRule = Callable[[Sequence[Example], Sequence[Example]], list[Situated]]
#: A mark's rule: a track's examples -> per example the normalized other answers it marks,
#: or None for an example outside the mark's examples.
MarkRule = Callable[[Sequence[Example]], list["frozenset[str] | None"]]


def date_span(text: str) -> tuple[int, int] | None:
    """The first and last day (proleptic ordinals) a temp date covers; None if unreadable.

    The release writes "2019" (the whole year) or "March 04, 2018" (one day).
    """
    text = text.strip()
    try:
        if _YEAR.fullmatch(text):
            year = int(text)
            return date(year, 1, 1).toordinal(), date(year, 12, 31).toordinal()
        match = _DAY.fullmatch(text)
        if match and match.group(1).capitalize() in _MONTHS:
            day = date(int(match.group(3)), _MONTHS[match.group(1).capitalize()],
                       int(match.group(2))).toordinal()
            return day, day
    except ValueError:  # year 0, February 30, ...
        return None
    return None


def direction(other: tuple[int, int] | None, this: tuple[int, int] | None) -> str:
    """Where the span `other` lies from `this`: EARLIER, LATER or UNORDERED."""
    if other is None or this is None:
        return UNORDERED
    if other[1] < this[0]:
        return EARLIER
    if other[0] > this[1]:
        return LATER
    return UNORDERED


def temporal_class(directions: Iterable[str]) -> int:
    """The class of an answer from where the contexts carrying it lie (see the tie rules)."""
    found = set(directions)
    if EARLIER in found and LATER in found:
        return OTHER_CONTEXT
    if EARLIER in found:
        return OUTDATED
    if LATER in found:
        return PREMATURE
    return OTHER_CONTEXT


def _normalized_sets(answer_lists: Sequence[Sequence[str]]) -> list[frozenset[str]]:
    """The normalized answers of every list, each distinct text normalized once."""
    flat = normalize_many([a for answers in answer_lists for a in answers])
    sets, start = [], 0
    for answers in answer_lists:
        sets.append(frozenset(flat[start:start + len(answers)]))
        start += len(answers)
    return sets


def _questions(examples: Sequence[Example]) -> dict[int, list[int]]:
    """The positions of each question's examples (its contexts), by NQ id."""
    groups: dict[int, list[int]] = defaultdict(list)
    for position, example in enumerate(examples):
        groups[example.id].append(position)
    return groups


def _aliases(position: int, group: Sequence[int], answers: Sequence[frozenset[str]]
             ) -> frozenset[str]:
    """The example's answers and every answer a context of its question lists beside them."""
    own = answers[position]
    found = set(own)
    for other in group:
        if not answers[other].isdisjoint(own):
            found |= answers[other]
    return frozenset(found)


def _timelines(companion: Sequence[Example], which_field: str, sides: tuple[str, str]
               ) -> dict[int, tuple[frozenset[str], frozenset[str]]]:
    """(current, previous) normalized answers per NQ id, from the companion's examples whose
    `which_field` is sides[0] (current) or sides[1] (previous)."""
    normalized = _normalized_sets([e.answers for e in companion])
    timelines: dict[int, dict[str, frozenset[str]]] = defaultdict(dict)
    for example, answers in zip(companion, normalized, strict=True):
        timelines[example.id][example.context.get(which_field, "")] = answers
    empty: frozenset[str] = frozenset()
    return {nq_id: (found.get(sides[0], empty), found.get(sides[1], empty))
            for nq_id, found in timelines.items()}


def dated_other_answers(examples: Sequence[Example], companion: Sequence[Example], *,
                        date_field: str, which_field: str, timeline_sides: tuple[str, str]
                        ) -> list[Situated]:
    """temp: other answers by where their contexts lie in time (context `date_field`), plus
    the timeline's previous answers: the companion's examples (curprev, same split) whose
    `which_field` is timeline_sides[1], for an example whose answers meet those of
    timeline_sides[0] (see the tie rules); `since` per example."""
    answers = _normalized_sets([e.answers for e in examples])
    anys = _normalized_sets([e.any_answers for e in examples])
    carried = [a - {""} for a in answers]  # an empty answer carries nothing (tie rules)
    spans = [date_span(e.context.get(date_field, "")) for e in examples]
    timelines = _timelines(companion, which_field, timeline_sides)
    situated: list[Situated | None] = [None] * len(examples)
    for nq_id, group in _questions(examples).items():
        current, previous = timelines.get(nq_id, (frozenset(), frozenset()))
        for position in group:
            own, span = answers[position], spans[position]
            aliases = _aliases(position, group, answers)
            found: dict[str, set[str]] = defaultdict(set)
            for other in group:
                if other != position:
                    way = direction(spans[other], span)
                    for answer in answers[other] - own:
                        found[answer].add(way)
            if own & current and not own & previous:
                for answer in previous - current - own:
                    found[answer].add(EARLIER)
            others = {answer: OTHER_CONTEXT if answer in aliases else temporal_class(ways)
                      for answer, ways in found.items()}
            for answer in anys[position] - own - found.keys():
                others[answer] = OTHER_CONTEXT  # in any_answer, carried by no context
            others.pop("", None)
            earlier = frozenset(answer for answer, ways in found.items()
                                if EARLIER in ways and answer in others)
            situated[position] = Situated(
                others, _since(position, group, carried, spans, aliases - {""}),
                None if span is None else date.fromordinal(span[0]).year, earlier)
    return [s if s is not None else Situated({}) for s in situated]


def _since(position: int, group: Sequence[int], answers: Sequence[frozenset[str]],
           spans: Sequence[tuple[int, int] | None], aliases: frozenset[str]) -> int | None:
    """The year the example's answer took effect (see the module docstring), or None.

    `answers`: each context's normalized answers without the empty one."""
    span = spans[position]
    if span is None or not aliases:
        return None
    before = [spans[o] for o in group if answers[o]
              and direction(spans[o], span) == EARLIER and answers[o].isdisjoint(aliases)]
    if not before:
        return None
    last = max(s[1] for s in before if s is not None)
    starts = [s[0] for o in group if (s := spans[o]) is not None
              and last < s[0] <= span[1] and not answers[o].isdisjoint(aliases)]
    return date.fromordinal(min(starts)).year if starts else None


def located_other_answers(examples: Sequence[Example], companion: Sequence[Example], *,
                          is_us: Callable[[str], bool], location_field: str
                          ) -> list[Situated]:
    """geo: other answers by the locations that carry them (US default, wrong place)."""
    answers = _normalized_sets([e.answers for e in examples])
    anys = _normalized_sets([e.any_answers for e in examples])
    locations = [e.context.get(location_field, "") for e in examples]
    places = normalize_many(locations)
    us = [is_us(location) for location in locations]
    situated: list[Situated | None] = [None] * len(examples)
    for group in _questions(examples).values():
        for position in group:
            own = answers[position]
            aliases = _aliases(position, group, answers)
            carriers: dict[str, list[int]] = defaultdict(list)
            for other in group:
                if other != position:
                    for answer in answers[other] - own:
                        carriers[answer].append(other)
            others = {}
            for answer, where in carriers.items():
                if answer in aliases or any(places[o] == places[position] for o in where):
                    others[answer] = OTHER_CONTEXT
                elif all(us[o] for o in where):
                    others[answer] = US_DEFAULT
                else:
                    others[answer] = WRONG_PLACE
            for answer in anys[position] - own - carriers.keys():
                others[answer] = OTHER_CONTEXT  # in any_answer, carried by no location
            others.pop("", None)
            situated[position] = Situated(others)
    return [s if s is not None else Situated({}) for s in situated]


def located_answers(examples: Sequence[Example], *, marked: Callable[[str], bool],
                    location_field: str) -> list[frozenset[str] | None]:
    """geo's US-answer mark: for an example whose location is not `marked`, the normalized
    answers of the records of its question whose location is, less its own answers and the
    empty one; None for an example at a `marked` location."""
    answers = _normalized_sets([e.answers for e in examples])
    inside = [marked(e.context.get(location_field, "")) for e in examples]
    found: list[frozenset[str] | None] = [None] * len(examples)
    for group in _questions(examples).values():
        given = frozenset().union(*(answers[o] for o in group if inside[o]))
        for position in group:
            if not inside[position]:
                found[position] = given - answers[position] - {""}
    return found


def listed_other_answers(examples: Sequence[Example], companion: Sequence[Example], *,
                         class_of: Callable[[Example], int]) -> list[Situated]:
    """present, curprev: any_answer minus the answers, all of the class the track declares."""
    answers = _normalized_sets([e.answers for e in examples])
    anys = _normalized_sets([e.any_answers for e in examples])
    situated = []
    for example, own, every in zip(examples, answers, anys, strict=True):
        code = class_of(example)
        situated.append(Situated({answer: code for answer in every - own if answer}))
    return situated
