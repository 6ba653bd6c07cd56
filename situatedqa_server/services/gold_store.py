"""Gold versions in the database, parsed once per process and cached by content.

Each version's canonical gold is one stored file (blobs), named by its SHA-256. A process
parses it on first use and keeps it in memory, keyed by that digest: the cache can never
serve another database's version under a reused id, and losing it costs one reparse.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from sqlalchemy import func, or_, select

from benchmark import (
    HIDDEN_SPLIT,
    TRACK_INFO,
    Example,
    GoldError,
    GoldSet,
    GoldSplit,
    import_release,
)
from benchmark.error_classes import ErrorTables, error_tables
from benchmark.metrics import BoolArray
from benchmark.provenance import unreleased_mask
from benchmark.scoring import warm_lenient

from ..extensions import db
from ..models import GoldVersion
from . import blobs
from .errors import ServiceError

FIRST_VERSION_NAME = "2021-02, as released"
FIRST_VERSION_AS_OF = date(2021, 2, 1)
#: Parsed gold sets kept per process (each about 60 MB with its scoring caches).
CACHE_SIZE = 4

_cache: OrderedDict[str, GoldSet] = OrderedDict()
_cache_lock = threading.Lock()
#: Serialized bytes of gold sets built in this process, so registering one twice is cheap.
_serialized: weakref.WeakKeyDictionary[GoldSet, tuple[str, bytes]] = weakref.WeakKeyDictionary()


class GoldUnavailable(ServiceError):
    """The canonical gold has not been imported (run `flask --app app gold import`)."""

    status = 503
    code = "gold_unavailable"


# --- the stored form -------------------------------------------------------------------------


def serialize(gold: GoldSet) -> tuple[str, bytes]:
    """(SHA-256, bytes) of a gold set's canonical JSON: splits in canonical order, meta."""
    known = _serialized.get(gold)
    if known is not None:
        return known
    document = {"meta": gold.meta, "splits": [
        {"track": track, "split": split,
         "examples": [e.to_json() for e in gold.get(track, split).examples]}
        for track, split in gold.available()]}
    data = msgspec.json.encode(document, order="sorted")
    result = (blobs.digest(data), data)
    _serialized[gold] = result
    return result


class _Record(msgspec.Struct, gc=False):
    """A canonical example record (Example.to_json), as deserialize reads it."""

    key: str
    id: int
    question: str
    context: dict[str, str] = {}
    partitions: list[str] = []
    answers: list[str] = []
    any_answers: list[str] = []
    label: bool | None = None
    source: str | None = None


class _StoredSplit(msgspec.Struct):
    """One split of the canonical JSON, its records left undecoded until it is built."""

    track: str
    split: str
    examples: msgspec.Raw


class _StoredGold(msgspec.Struct):
    """The canonical JSON of a gold set (serialize)."""

    meta: dict[str, Any]
    splits: list[_StoredSplit]


_GOLD_DECODER = msgspec.json.Decoder(_StoredGold)
_RECORDS_DECODER = msgspec.json.Decoder(list[_Record])


def deserialize(data: bytes) -> GoldSet:
    """A gold set from its canonical JSON bytes.

    What a worker keeps for its lifetime is built with little left over: records are
    decoded one split at a time into small structs (not the whole document into dicts at
    once), and each distinct text becomes one object. A question's contexts repeat its
    text, answers and context values, so most strings repeat (`python
    scripts/bench_gold_memory.py` counts them).
    """
    document = _GOLD_DECODER.decode(data)
    share: dict[str, str] = {}
    splits = [GoldSplit(stored.track, stored.split,
                        [_example(record, share.setdefault)
                         for record in _RECORDS_DECODER.decode(stored.examples)])
              for stored in document.splits]
    return GoldSet(splits, document.meta)


def _example(record: _Record, share: Callable[[str, str], str]) -> Example:
    """The Example of a canonical record (as Example.from_json), its texts shared."""
    return Example(
        key=record.key, id=record.id, question=share(record.question, record.question),
        context={share(k, k): share(v, v) for k, v in record.context.items()},
        answers=tuple(share(a, a) for a in record.answers),
        any_answers=tuple(share(a, a) for a in record.any_answers),
        partitions=tuple(share(p, p) for p in record.partitions),
        label=record.label, source=record.source)


def store(gold: GoldSet) -> str:
    """Add a gold set's bytes to the current transaction; its digest."""
    sha256, data = serialize(gold)
    blobs.put(data, sha256, blobs.COMPRESSION_LEVEL)
    _remember(sha256, gold)
    return sha256


def _remember(sha256: str, gold: GoldSet) -> None:
    with _cache_lock:
        _cache[sha256] = gold
        _cache.move_to_end(sha256)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def load(sha256: str) -> GoldSet:
    """The gold set stored under a digest, parsed once per process."""
    with _cache_lock:
        gold = _cache.get(sha256)
        if gold is not None:
            _cache.move_to_end(sha256)
            return gold
    try:
        gold = deserialize(blobs.get(sha256))
    except blobs.MissingFile as exc:
        raise GoldUnavailable(str(exc)) from None
    except (GoldError, ValueError, KeyError) as exc:
        raise GoldUnavailable(f"the stored gold {sha256[:12]}… cannot be read: {exc}") from None
    _remember(sha256, gold)
    return gold


def error_tables_in(gold: GoldSet, split: GoldSplit) -> ErrorTables | None:
    """The error tables of one of a gold set's splits (built once per split and cached);
    None for a track without error classes, or when the set lacks the companion split the
    track's rule needs (a hand-built gold set: its scores then have no error figures)."""
    return _tables_in(gold, split)


def _tables_in(gold: GoldSet, split: GoldSplit) -> ErrorTables | None:
    info = TRACK_INFO[split.track]
    if info.errors is None:
        return None
    try:
        return error_tables(gold, split.track, split.split)
    except GoldError:
        return None


def error_tables_of(split: GoldSplit) -> ErrorTables | None:
    """error_tables_in of the parsed gold set that holds this very split (an upload's
    inputs), else None."""
    with _cache_lock:
        holders = [gold for gold in _cache.values()
                   if gold.splits.get((split.track, split.split)) is split]
    return error_tables_in(holders[0], split) if holders else None


def clear_cache() -> None:
    """Forget every parsed gold set (the next use reads the database again)."""
    with _cache_lock:
        _cache.clear()


# --- versions ----------------------------------------------------------------------------


def gold_of(version: GoldVersion) -> GoldSet:
    """A version's gold."""
    return load(version.gold_sha256)


#: (version gold, release gold, track) → the unreleased mask of the version's test split.
_unreleased: dict[tuple[str, str, str], BoolArray] = {}
_unreleased_lock = threading.Lock()


def unreleased_of(version: GoldVersion, track: str, split: str,
                  release: GoldVersion | None = None) -> BoolArray | None:
    """Which examples of a version's board have a gold never published (the release's
    test answers are public: benchmark.provenance), in gold order; None off the hidden test
    split, or when the version lacks the board. Cached per (version gold, release gold)."""
    if split != HIDDEN_SPLIT:
        return None
    gold = gold_of(version)
    if (track, split) not in gold.splits:
        return None
    if version.parent_id is None:  # the release itself (the one root): all published
        return np.zeros(len(gold.splits[(track, split)]), dtype=np.bool_)
    release = release or first_version()
    return _unreleased_mask(version, gold, release, load(release.gold_sha256), track)


def _unreleased_mask(version: GoldVersion, gold: GoldSet, release: GoldVersion,
                     release_gold: GoldSet, track: str) -> BoolArray | None:
    """unreleased_of a later version's test board, from gold already loaded."""
    split = HIDDEN_SPLIT
    if (track, split) not in gold.splits:
        return None
    if version.parent_id is None:
        return np.zeros(len(gold.splits[(track, split)]), dtype=np.bool_)
    key = (version.gold_sha256, release.gold_sha256, track)
    with _unreleased_lock:
        known = _unreleased.get(key)
    if known is not None:
        return known
    target = gold.splits[(track, split)]
    public = release_gold.splits.get((track, split))
    mask = (unreleased_mask(public, target) if public is not None
            else np.ones(len(target), dtype=np.bool_))
    mask.setflags(write=False)
    with _unreleased_lock:
        if len(_unreleased) > 64:
            _unreleased.clear()
        return _unreleased.setdefault(key, mask)


def has_unreleased(version: GoldVersion, track: str, split: str) -> bool:
    """Whether a version's board has examples whose gold was never published (its test
    board then shows the provenance figures)."""
    mask = unreleased_of(version, track, split)
    return mask is not None and bool(mask.any())


@dataclass(frozen=True)
class VersionGold:
    """What scoring against a version reads of the gold store, taken in one entry
    (version_gold): the version's gold, its parent's and the release's. The error tables
    and the unreleased masks are read from these, so a rescore batch enters the store once.
    """

    version: GoldVersion
    gold: GoldSet
    parent: GoldVersion | None
    parent_gold: GoldSet | None
    release: GoldVersion
    release_gold: GoldSet

    def tables(self, split: GoldSplit) -> ErrorTables | None:
        """error_tables_in of one of the version's splits."""
        return _tables_in(self.gold, split)

    def parent_tables(self, split: GoldSplit) -> ErrorTables | None:
        """error_tables_in of one of the parent's splits."""
        return _tables_in(self.parent_gold, split) if self.parent_gold is not None else None

    def unreleased(self, track: str, split: str) -> BoolArray | None:
        """unreleased_of the version's board."""
        if split != HIDDEN_SPLIT:
            return None
        return _unreleased_mask(self.version, self.gold, self.release, self.release_gold,
                                track)

    def has_unreleased(self, track: str, split: str) -> bool:
        """has_unreleased of the version's board."""
        mask = self.unreleased(track, split)
        return mask is not None and bool(mask.any())


def version_gold(version: GoldVersion, release: GoldVersion | None = None) -> VersionGold:
    """A version's gold with its parent's and the release's (see VersionGold; `release`:
    the first version when the caller has it at hand, else it is read)."""
    parent = db.session.get(GoldVersion, version.parent_id) if version.parent_id else None
    release = version if version.parent_id is None else release or _first_version()
    return VersionGold(version, load(version.gold_sha256), parent,
                       load(parent.gold_sha256) if parent is not None else None,
                       release, load(release.gold_sha256))


def first_version() -> GoldVersion:
    """The release as imported: the root of every later version."""
    return _first_version()


def _first_version() -> GoldVersion:
    version = db.session.scalar(select(GoldVersion).where(GoldVersion.parent_id.is_(None))
                                .order_by(GoldVersion.id).limit(1))
    if version is None:
        raise GoldUnavailable(
            "the gold has not been imported yet: run `flask --app app gold import`")
    return version


def get_gold() -> GoldSet:
    """The release's gold (the first version): the inputs of the hidden test split."""
    return gold_of(first_version())


def get_split(track: str, split: str) -> GoldSplit:
    """The gold participants answer on one track and split (GoldUnavailable when missing).

    That is the active version's, except on the hidden test split: its inputs stay the
    release's, so that nothing shows which test examples a later version changed.
    """
    try:
        return public_gold(split).get(track, split)
    except GoldError as exc:
        raise GoldUnavailable(str(exc)) from None


def inputs_of(version: GoldVersion, split: str) -> GoldVersion:
    """The version whose inputs participants answer under `version` (test: the release)."""
    return first_version() if split == HIDDEN_SPLIT else version


def public_gold(split: str) -> GoldSet:
    """The gold whose inputs a split's participants see (see get_split)."""
    if split != HIDDEN_SPLIT:
        return gold_of(active_version())
    rows = db.session.scalars(_ACTIVE_AND_FIRST).all()
    if not any(version.is_active for version in rows):
        raise GoldUnavailable("no active gold version: run `flask --app app gold import`")
    first = [version for version in rows if version.parent_id is None]
    if not first:
        return gold_of(first_version())  # raises GoldUnavailable
    return gold_of(min(first, key=lambda version: version.id))


#: The active and the first version in one round trip (every test upload asks); built once,
#: as building it cost more than running it.
_ACTIVE_AND_FIRST = select(GoldVersion).where(or_(
    GoldVersion.is_active.is_(True), GoldVersion.id == select(func.min(GoldVersion.id)).where(
        GoldVersion.parent_id.is_(None)).scalar_subquery()))


def active_version() -> GoldVersion:
    """The gold version whose scores the leaderboards show."""
    version = db.session.scalar(select(GoldVersion).where(GoldVersion.is_active.is_(True)))
    if version is None:
        raise GoldUnavailable("no active gold version: run `flask --app app gold import`")
    return version


def fingerprint_of(gold: GoldSet) -> str:
    """The source fingerprint recorded in the gold's metadata."""
    return str(gold.meta.get("source_fingerprint", ""))


def register_first_version(gold: GoldSet) -> GoldVersion:
    """Record the release as the first, active gold version unless one exists (committed)."""
    version = db.session.scalar(select(GoldVersion).where(
        GoldVersion.name == FIRST_VERSION_NAME))
    if version is None:
        version = GoldVersion(
            name=FIRST_VERSION_NAME, as_of=FIRST_VERSION_AS_OF,
            fingerprint=fingerprint_of(gold), changelog="The official release, unchanged.",
            gold_sha256=store(gold), changes=[],
            is_active=db.session.scalar(select(GoldVersion.id).limit(1)) is None)
        db.session.add(version)
        db.session.commit()
    return version


def import_gold(release_dir: Path) -> tuple[GoldSet, GoldVersion]:
    """Verify a release and record it as the first gold version, in the database."""
    gold = import_release(release_dir)
    version = register_first_version(gold)
    if version.fingerprint != fingerprint_of(gold):
        raise GoldUnavailable(
            f"this database holds another release (fingerprint {version.fingerprint[:12]}…) "
            f"than {release_dir} ({fingerprint_of(gold)[:12]}…)")
    return gold_of(version), version


def warm_up() -> str | None:
    """Load the active gold and its scoring caches ahead of the first upload; why nothing
    was loaded (no gold imported yet: it is then parsed on first use), else None."""
    try:
        loaded = (get_gold(), gold_of(active_version()))
    except GoldUnavailable as exc:
        return str(exc)
    for gold in {id(g): g for g in loaded}.values():
        for split in gold.splits.values():
            _ = (split.normalized_answers, split.normalized_any_answers,
                 split.partition_masks, split.sources,
                 split.labels if split.is_identification else None)
            # The lenient metrics' parsed gold (about 0.3 s a worker): a worker that took no
            # upload yet would otherwise build it while its first uploads wait (train-split
            # uploads, rare, build theirs on first use: it would cost every worker memory).
            if split.split != "train":
                warm_lenient(split)
                error_tables_in(gold, split)  # the error classes' lookups, likewise
    return None
