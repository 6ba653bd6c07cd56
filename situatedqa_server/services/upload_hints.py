"""What to tell a participant whose file answers inputs that the active gold version changed."""

from __future__ import annotations

from dataclasses import dataclass

from flask import url_for

from benchmark import HIDDEN_SPLIT, ValidationError

from . import gold_store


@dataclass(frozen=True)
class StaleInputs:
    """A file answers the release's inputs of a split the active version has changed."""

    track: str
    split: str
    version: str
    as_of: str
    retired: int
    added: int
    blank_url: str
    gold_url: str

    def sentence(self) -> str:
        """The line a rejection leads with."""
        return (f"this file answers the release's {self.track}/{self.split} inputs, but the "
                f"active gold version {self.version!r} (as of {self.as_of}) retired "
                f"{self.retired} and added {self.added} of its examples: answer its inputs, "
                f"{self.blank_url} (to score a release file offline against this version: "
                f"python -m benchmark score --track {self.track} --split {self.split} --gold "
                f"{self.track}.{self.split}.gold.jsonl FILE, with the gold from "
                f"{self.gold_url})")


def stale_inputs(exc: ValidationError, track: str, split: str) -> StaleInputs | None:
    """The active version and its blank file, when every key of a rejected file is one of
    the release's inputs of the split and the active version retired or added some.

    Never on the hidden test split, whose inputs stay the release's (so nothing shows which
    test examples a version changed).
    """
    if split == HIDDEN_SPLIT or not exc.keys:
        return None
    try:
        active = gold_store.active_version()
        if active.parent_id is None:
            return None
        released = gold_store.get_gold().get(track, split).index.keys()
        current = gold_store.gold_of(active).get(track, split).index.keys()
    except gold_store.GoldUnavailable:
        return None
    keys = set(exc.keys)
    if released == current or not keys <= released or keys <= current:
        return None
    return StaleInputs(track, split, active.name, active.as_of.isoformat(),
                       len(released - current), len(current - released),
                       url_for("data.blank", track=track, split=split, _external=True),
                       url_for("data.gold", track=track, split=split, _external=True))
