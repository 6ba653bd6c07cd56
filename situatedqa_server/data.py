"""Downloads: the blank inputs of every split, and the gold of the non-hidden splits."""

from __future__ import annotations

import json
from collections.abc import Iterator

from flask import Blueprint, Response, abort

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO, GoldSplit

from .services import gold_store

bp = Blueprint("data", __name__, url_prefix="/data")


def _split_or_404(track: str, split: str) -> GoldSplit:
    if track not in TRACK_INFO or split not in SPLITS:
        abort(404)
    return gold_store.get_split(track, split)


def _jsonl(records: Iterator[dict[str, object]], filename: str) -> Response:
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return Response(body, mimetype="application/jsonl", headers={
        "Content-Disposition": f"attachment; filename={filename}"})


@bp.get("/<track>/<split>/blank.jsonl")
def blank(track: str, split: str) -> Response:
    """Keys, questions and contexts without answers: what a system must answer."""
    gold = _split_or_404(track, split)
    return _jsonl((e.blank() for e in gold.examples), f"{track}.{split}.blank.jsonl")


@bp.get("/<track>/<split>/gold.jsonl")
def gold(track: str, split: str) -> Response:
    """Canonical gold of train and dev; the test gold never leaves the server."""
    if split == HIDDEN_SPLIT:
        abort(404)
    data = _split_or_404(track, split)
    return _jsonl((e.to_json() for e in data.examples), f"{track}.{split}.gold.jsonl")
