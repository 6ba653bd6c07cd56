"""Input releases: the inputs of the test examples a gold version added, made public by date.

A gold version that adds test examples (a `contexts` or `locations` campaign, an update
file's `add` records) makes one input release when it becomes active: the keys of those
examples per track, their counts per partition, and the SHA-256 of each track's blank
file. It is published on the activation's date, or on the later date the organizer held
it back to (`gold activate N --release-inputs-on DATE`); until that date its examples are
unknown keys everywhere, as if the version had not added them.

What a release shows is what a blank file carries (key, id, question, context); never an
answer, and nothing of the release's own examples, whose inputs stay the release's. The
blank file of a test split is the release's inputs followed by every published input
release's, in the order they were published (`inputs`); a test upload answers the release's
inputs plus any number of whole input releases, and its submission records which
(SubmissionRelease), so that every stored file is read again against what it answered.

"Today" is the TODAY setting when set (SITUATEDQA_TODAY; tests move it), else the UTC date.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

from flask import current_app
from sqlalchemy import insert, select

from benchmark import HIDDEN_SPLIT, TRACK_INFO, Example, GoldSplit
from benchmark.metrics import BoolArray
from benchmark.windows import Windows, make_windows

from ..extensions import db
from ..models import GoldVersion, InputRelease, SubmissionRelease, utcnow
from . import gold_store
from .errors import InvalidRequest, NotFound

#: A release's name: what `?release=NAME` and the harness options take.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
#: How many missing keys a refusal of a partly answered release names.
MISSING_SHOWN = 5
#: Input splits (the release's and some releases') kept per process.
CACHE_SIZE = 16


class UnknownRelease(NotFound):
    """A request named an input release that does not exist or is not published yet."""

    code = "unknown_release"


class InvalidReleaseDate(InvalidRequest):
    """A hold-back date that cannot be read, or lies in the past."""

    code = "invalid_release_date"


# --- the clock ------------------------------------------------------------------------------


def today() -> date:
    """Today's date: the app's TODAY setting when set (demonstrations, tests), else the
    UTC date."""
    fixed: date | None = current_app.config.get("TODAY")
    return fixed if fixed is not None else utcnow().date()


def parse_release_date(text: str | date | None) -> date | None:
    """A hold-back date (YYYY-MM-DD, today or later), None when not given;
    InvalidReleaseDate naming the field otherwise."""
    if text is None or text == "":
        return None
    if isinstance(text, date):
        day = text
    else:
        try:
            day = date.fromisoformat(text.strip())
        except ValueError:
            raise InvalidReleaseDate(
                f"release_inputs_on: {text!r} is not a date; give it as YYYY-MM-DD",
                {"fields": {"release_inputs_on": "give a date as YYYY-MM-DD"}}) from None
    if day < today():
        raise InvalidReleaseDate(
            f"release_inputs_on: {day.isoformat()} is in the past (today is "
            f"{today().isoformat()}); give today or a later date",
            {"fields": {"release_inputs_on": "give today or a later date"}})
    return day


# --- the blank file ---------------------------------------------------------------------------


def jsonl_body(records: Iterable[dict[str, Any]]) -> str:
    """JSON Lines text as the downloads serve it (one record a line, UTF-8 kept)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def blank_sha256(examples: Iterable[Example]) -> str:
    """SHA-256 of the blank file of these examples, as `?release=NAME` serves it."""
    return hashlib.sha256(jsonl_body(e.blank() for e in examples).encode("utf-8")).hexdigest()


# --- making a release -------------------------------------------------------------------------


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:72].strip("-")
    return slug or "release"


def release_name(version_name: str) -> str:
    """A release name from its version's name, unique among the releases."""
    base = _slug(version_name)
    taken = set(db.session.scalars(select(InputRelease.name)))
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    return name


def _already_released(track: str) -> set[str]:
    """The keys of a track that an input release holds already (published or not)."""
    return {key for keys in db.session.scalars(select(InputRelease.keys))
            for key in (keys or {}).get(track, [])}


def added_examples(version: GoldVersion) -> dict[str, list[Example]]:
    """Track → the test examples of a version that neither the release nor any input
    release holds, in the version's gold order (empty tracks left out)."""
    gold = gold_store.gold_of(version)
    release = gold_store.get_gold()
    found: dict[str, list[Example]] = {}
    for (track, split), examples in gold.splits.items():
        if split != HIDDEN_SPLIT:
            continue
        base = release.splits.get((track, split))
        known = set(base.index) if base is not None else set()
        known |= _already_released(track)
        new = [e for e in examples.examples if e.key not in known]
        if new:
            found[track] = new
    return found


def counts_of(examples: Sequence[Example]) -> dict[str, int]:
    """{"total": n, partition: n, …} of a release's examples on one track."""
    partitions = Counter(p for e in examples for p in e.partitions)
    return {"total": len(examples), **dict(sorted(partitions.items()))}


def make_release(version: GoldVersion, release_on: date | None) -> InputRelease | None:
    """The input release of a version that becomes active (in the caller's transaction;
    None when it adds no test example that is not released already). Published on
    `release_on` when it is later than today, else today."""
    added = added_examples(version)
    if not added:
        return None
    day = max(release_on, today()) if release_on is not None else today()
    release = InputRelease(
        name=release_name(version.name), gold_version_id=version.id, release_on=day,
        keys={track: [e.key for e in examples] for track, examples in added.items()},
        counts={track: counts_of(examples) for track, examples in added.items()},
        blank_sha256={track: blank_sha256(examples) for track, examples in added.items()})
    db.session.add(release)
    db.session.flush()
    return release


# --- reading releases ------------------------------------------------------------------------


def published_filter() -> Any:
    """SQL condition: the release is public today."""
    return InputRelease.release_on <= today()


def published(track: str | None = None) -> list[InputRelease]:
    """The published releases in the order they were published (on a track: those with
    examples on it)."""
    rows = list(db.session.scalars(select(InputRelease).where(published_filter())
                                   .order_by(InputRelease.release_on, InputRelease.id)))
    return [r for r in rows if track is None or r.keys.get(track)]


def all_releases() -> list[InputRelease]:
    """Every release, held back or not, in publication order (organizers)."""
    return list(db.session.scalars(select(InputRelease).order_by(
        InputRelease.release_on, InputRelease.id)))


def published_named(name: str, track: str | None = None) -> InputRelease:
    """A published release by name (on a track: with examples there); UnknownRelease."""
    release = db.session.scalar(select(InputRelease).where(
        InputRelease.name == name, published_filter()))
    if release is None:
        known = ", ".join(r.name for r in published()) or "none is published yet"
        raise UnknownRelease(f"no published input release named {name!r} (published: "
                             f"{known}; see /data/releases)")
    if track is not None and not release.keys.get(track):
        raise UnknownRelease(f"input release {name!r} has no {track} test examples "
                             f"(it has {', '.join(sorted(release.keys))})")
    return release


def release_for(version: GoldVersion) -> InputRelease | None:
    """The input release a version made, if any (published or not)."""
    return db.session.scalar(select(InputRelease).where(
        InputRelease.gold_version_id == version.id))


_examples: OrderedDict[tuple[str, str, tuple[str, ...]], tuple[Example, ...]] = OrderedDict()
_inputs: OrderedDict[tuple[Any, ...], GoldSplit] = OrderedDict()
_lock = threading.Lock()


def examples_of(release: InputRelease, track: str) -> tuple[Example, ...]:
    """A release's test examples of a track as participants receive them: the inputs of
    its version's examples, with no answer."""
    version = release.gold_version
    keys = tuple(release.keys.get(track, ()))
    cache_key = (version.gold_sha256, track, keys)
    with _lock:
        known = _examples.get(cache_key)
    if known is not None:
        return known
    split = gold_store.gold_of(version).get(track, HIDDEN_SPLIT)
    found = tuple(_inputs_only(split.examples[split.index[key]]) for key in keys
                  if key in split.index)
    with _lock:
        _examples[cache_key] = found
        while len(_examples) > 4 * CACHE_SIZE:
            _examples.popitem(last=False)
    return found


def _inputs_only(example: Example) -> Example:
    """An example without its gold: what a participant may be shown of it."""
    return Example(key=example.key, id=example.id, question=example.question,
                   context=dict(example.context), partitions=example.partitions,
                   source=example.source)


def inputs(track: str, releases: Sequence[InputRelease]) -> GoldSplit:
    """The test inputs that answer the release's inputs plus these input releases (in the
    order given), as one split to parse a file against; the release's own split when none
    is given. The releases' examples carry no answer: a file is scored only against a gold
    version's split (evaluation realigns it)."""
    first = gold_store.first_version()
    base = gold_store.gold_of(first).get(track, HIDDEN_SPLIT)
    if not releases:
        return base
    cache_key = (first.gold_sha256, track,
                 tuple((r.id, r.gold_version.gold_sha256) for r in releases))
    with _lock:
        known = _inputs.get(cache_key)
        if known is not None:
            _inputs.move_to_end(cache_key)
            return known
    split = GoldSplit(track, HIDDEN_SPLIT, [*base.examples, *(
        e for release in releases for e in examples_of(release, track))])
    with _lock:
        _inputs[cache_key] = split
        while len(_inputs) > CACHE_SIZE:
            _inputs.popitem(last=False)
    return split


def public_inputs(track: str, split: str) -> GoldSplit:
    """What participants answer on a board: on the test split, the release's inputs and
    every published input release's; elsewhere the active version's split."""
    if split != HIDDEN_SPLIT:
        return gold_store.get_split(track, split)
    return inputs(track, published(track))


# --- what a submission answered ---------------------------------------------------------------


def record(submission_id: int, releases: Iterable[InputRelease]) -> None:
    """Record the releases a submission answered (in the caller's transaction)."""
    rows = [{"submission_id": submission_id, "input_release_id": r.id} for r in releases]
    if rows:
        db.session.execute(insert(SubmissionRelease), rows)


def answered_by(submission_ids: Iterable[int]) -> dict[int, list[InputRelease]]:
    """Submission id → the input releases it answered, in publication order (only those
    that answered any)."""
    ids = list(submission_ids)
    if not ids:
        return {}
    found: dict[int, list[InputRelease]] = {}
    for submission_id, release in db.session.execute(
            select(SubmissionRelease.submission_id, InputRelease)
            .join(InputRelease, InputRelease.id == SubmissionRelease.input_release_id)
            .where(SubmissionRelease.submission_id.in_(ids))
            .order_by(InputRelease.release_on, InputRelease.id)):
        found.setdefault(submission_id, []).append(release)
    return found


def names_answered(submission_id: int) -> list[str]:
    """The names of the input releases a submission answered, in publication order."""
    return [r.name for r in answered_by([submission_id]).get(submission_id, [])]


def partly_answered(track: str, named: Iterable[str],
                    releases: Sequence[InputRelease]) -> tuple[list[InputRelease],
                                                               list[tuple[InputRelease,
                                                                          list[str]]]]:
    """Of the published releases, those a file's keys answer whole, and those it answers
    in part with their missing keys (in the release's order)."""
    keys = set(named)
    whole: list[InputRelease] = []
    partial: list[tuple[InputRelease, list[str]]] = []
    for release in releases:
        own = release.keys.get(track, [])
        missing = [key for key in own if key not in keys]
        if not missing:
            whole.append(release)
        elif len(missing) < len(own):
            partial.append((release, missing))
    return whole, partial


def partial_message(track: str, release: InputRelease, missing: Sequence[str]) -> str:
    """Why a file that answers part of a release is refused, naming the first missing keys."""
    total = len(release.keys.get(track, []))
    shown = ", ".join(repr(k) for k in missing[:MISSING_SHOWN])
    more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
    return (f"the file answers {total - len(missing)} of the {total} {track}/{HIDDEN_SPLIT} "
            f"examples of input release {release.name!r}: answer every example of a release "
            f"or none of them; {len(missing)} have no prediction: {shown}{more}")


# --- how a board reads a score -----------------------------------------------------------------


_windows: OrderedDict[tuple[Any, ...], Windows] = OrderedDict()


def windows_for(view: gold_store.VersionGold, split: GoldSplit,
                answered: Sequence[InputRelease]) -> Windows:
    """How a score of one of a version's splits reads (benchmark.windows): on a later
    version's test split, the paper's metrics on the release's examples and a window per
    input release the submission answered, `fresh` when that is every release published
    today; trivial elsewhere. Cached per (version, release gold, track, releases)."""
    if split.split != HIDDEN_SPLIT or view.version.parent_id is None:
        return Windows(None)
    public = {r.id for r in published(split.track)}
    ids = tuple(r.id for r in answered if r.keys.get(split.track))
    every = bool(ids) and public <= set(ids)
    cache_key = (view.version.gold_sha256, view.release.gold_sha256, split.track, ids, every)
    with _lock:
        known = _windows.get(cache_key)
        if known is not None:
            _windows.move_to_end(cache_key)
            return known
    release_split = view.release_gold.splits.get((split.track, HIDDEN_SPLIT))
    paper_keys = release_split.index if release_split is not None else {}
    built = make_windows(split, view.tables(split), paper_keys,
                         [(r.name, r.keys[split.track]) for r in answered
                          if r.keys.get(split.track)], every=every)
    with _lock:
        _windows[cache_key] = built
        while len(_windows) > 4 * CACHE_SIZE:
            _windows.popitem(last=False)
    return built


def paper_view(version: GoldVersion, track: str, split: str) -> tuple[GoldSplit,
                                                                      BoolArray | None]:
    """The examples a version's board ranks by, as (split, mask of the whole split's): the
    whole split (mask None), or on a later version's test split the release's examples
    alone (benchmark.windows). Paired tests between entries (the Ladder, the rank groups,
    the compare page) read the outcomes there, on what every entry was given."""
    gold = gold_store.gold_of(version).get(track, split)
    if split != HIDDEN_SPLIT or version.parent_id is None:
        return gold, None
    paper = windows_for(gold_store.version_gold(version), gold, []).paper
    return (gold, None) if paper is None else (paper.split, paper.mask)


def describe(release: InputRelease) -> dict[str, Any]:
    """A published release as the page, its JSON and the feed show it (no answer)."""
    return {"name": release.name, "date": release.release_on.isoformat(),
            "version": release.gold_version.name,
            "tracks": {track: {"split": HIDDEN_SPLIT, "counts": release.counts[track],
                               "blank_sha256": release.blank_sha256[track],
                               "blank_url": f"/data/{track}/{HIDDEN_SPLIT}/blank.jsonl"
                                            f"?release={release.name}"}
                       for track in TRACK_INFO if track in release.keys}}
