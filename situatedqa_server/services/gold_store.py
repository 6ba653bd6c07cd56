"""Canonical gold, loaded once per worker, and the gold versions recorded in the database."""

from __future__ import annotations

import functools
from datetime import date
from pathlib import Path

from flask import current_app
from sqlalchemy import select

from benchmark import GoldError, GoldSet, GoldSplit, import_release, load_gold

from ..extensions import db
from ..models import GoldVersion

FIRST_VERSION_NAME = "2021-02, as released"
FIRST_VERSION_AS_OF = date(2021, 2, 1)
#: Later versions live in GOLD_DIR/versions/<id>/; the release is GOLD_DIR itself.
VERSIONS_DIR = "versions"
#: The split whose gold never leaves the server (as scoring.HIDDEN_SPLIT).
HIDDEN_SPLIT = "test"


class GoldUnavailable(Exception):
    """The canonical gold has not been imported (run `flask --app app gold import`)."""


@functools.lru_cache(maxsize=4)
def _load(directory: str, stamp: int) -> GoldSet:
    """Read canonical gold; cached per process, keyed by folder and meta.json's mtime."""
    return load_gold(Path(directory))


def load_gold_dir(directory: Path) -> GoldSet:
    """The canonical gold in a folder, read once per worker while it is unchanged."""
    meta = directory / "meta.json"
    try:
        stamp = meta.stat().st_mtime_ns
    except OSError:
        raise GoldUnavailable(
            "the gold has not been imported yet: run `flask --app app gold import`") from None
    try:
        return _load(str(directory.resolve()), stamp)
    except (GoldError, OSError, ValueError) as exc:
        raise GoldUnavailable(f"the canonical gold cannot be read: {exc}") from None


def get_gold() -> GoldSet:
    """The gold the current app serves."""
    return load_gold_dir(Path(current_app.config["GOLD_DIR"]))


def get_split(track: str, split: str) -> GoldSplit:
    """The gold participants answer on one track and split (GoldUnavailable when missing).

    That is the active version's, except on the hidden test split: its inputs stay the
    release's, so that nothing shows which test examples a later version changed.
    """
    try:
        return public_gold(split).get(track, split)
    except GoldError as exc:
        raise GoldUnavailable(str(exc)) from None


def version_dir(version: GoldVersion) -> Path:
    """The folder of a version's canonical gold."""
    root = Path(current_app.config["GOLD_DIR"])
    return root if version.parent_id is None else root / VERSIONS_DIR / str(version.id)


def public_gold(split: str) -> GoldSet:
    """The gold whose inputs a split's participants see (see get_split)."""
    version = db.session.scalar(select(GoldVersion).where(GoldVersion.is_active.is_(True)))
    if split == HIDDEN_SPLIT or version is None:
        return get_gold()
    return load_gold_dir(version_dir(version))


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
            is_active=db.session.scalar(select(GoldVersion.id).limit(1)) is None)
        db.session.add(version)
        db.session.commit()
    return version


def import_gold(release_dir: Path) -> tuple[GoldSet, GoldVersion]:
    """Verify a release, write canonical gold to GOLD_DIR, and record the first version."""
    gold = import_release(release_dir)
    gold.save(Path(current_app.config["GOLD_DIR"]))
    return gold, register_first_version(gold)


def warm_up() -> None:
    """Load the gold and compute its normalized answers and masks ahead of the first upload."""
    for gold in get_gold().splits.values():
        _ = (gold.normalized_answers, gold.normalized_any_answers, gold.partition_masks,
             gold.sources, gold.labels if gold.is_identification else None)
