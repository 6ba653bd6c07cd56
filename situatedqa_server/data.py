"""Downloads: the blank inputs of every split, the gold of the non-hidden splits, and the
input releases (their page, its JSON twin and an Atom feed of releases and gold versions)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from typing import Any

from flask import Blueprint, Response, abort, render_template, request, url_for

from benchmark import HIDDEN_SPLIT, SPLITS, TRACK_INFO, GoldSplit

from .models import GoldVersion, InputRelease
from .services import gold_store, input_releases, versions
from .services.errors import InvalidQuery, NotFound, known_track

bp = Blueprint("data", __name__, url_prefix="/data")
ATOM = "http://www.w3.org/2005/Atom"
ET.register_namespace("", ATOM)


def _split_or_404(track: str, split: str) -> GoldSplit:
    """The gold of a download's track and split; UnknownTrack, or NotFound naming the
    splits, for a name the benchmark does not have (404 either way)."""
    known_track(track)
    if split not in SPLITS:
        raise NotFound(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return gold_store.get_split(track, split)


def _jsonl(records: Iterator[dict[str, object]], filename: str) -> Response:
    return Response(input_releases.jsonl_body(records), mimetype="application/jsonl",
                    headers={"Content-Disposition": f"attachment; filename={filename}"})


@bp.get("/<track>/<split>/blank.jsonl")
def blank(track: str, split: str) -> Response:
    """Keys, questions and contexts without answers: what a system must answer.

    On the test split: the release's inputs, then every published input release's;
    `?release=NAME` gives that release's alone (404 for an unknown or unpublished one).
    """
    gold = _split_or_404(track, split)
    name = request.args.get("release")
    if name is None:
        if split == HIDDEN_SPLIT:
            gold = input_releases.public_inputs(track, split)
        return _jsonl((e.blank() for e in gold.examples), f"{track}.{split}.blank.jsonl")
    if split != HIDDEN_SPLIT:
        raise InvalidQuery(f"input releases hold test examples only; ?release= does not "
                           f"apply to the {split} split",
                           {"fields": {"release": f"use split {HIDDEN_SPLIT}"}})
    release = input_releases.published_named(name, track)
    examples = input_releases.examples_of(release, track)
    return _jsonl((e.blank() for e in examples),
                  f"{track}.{split}.{release.name}.blank.jsonl")


@bp.get("/<track>/<split>/gold.jsonl")
def gold(track: str, split: str) -> Response:
    """Canonical gold of train and dev; the test gold never leaves the server."""
    if split == HIDDEN_SPLIT:
        abort(404)
    data = _split_or_404(track, split)
    return _jsonl((e.to_json() for e in data.examples), f"{track}.{split}.gold.jsonl")


# --- input releases ------------------------------------------------------------------------


def _release_json(release: InputRelease) -> dict[str, Any]:
    described = input_releases.describe(release)
    for track, about in described["tracks"].items():
        about["blank_url"] = url_for("data.blank", track=track, split=HIDDEN_SPLIT,
                                     release=release.name, _external=True)
    return described


def releases_document() -> dict[str, Any]:
    """Every published input release, oldest first, as the page and its JSON show it."""
    return {"releases": [_release_json(r) for r in input_releases.published()],
            "inputs": {track: url_for("data.blank", track=track, split=HIDDEN_SPLIT,
                                      _external=True) for track in TRACK_INFO}}


@bp.get("/releases")
def releases() -> str:
    """Every published input release: name, date, version, counts and blank files."""
    return render_template("data/releases.html", document=releases_document(),
                           tracks=TRACK_INFO)


@bp.get("/releases.json")
def releases_json() -> dict[str, Any]:
    """The input releases page as JSON."""
    return releases_document()


def _timestamp(day: date | datetime) -> str:
    moment = day if isinstance(day, datetime) else datetime.combine(day, time(0))
    return moment.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")


def _version_time(version: GoldVersion) -> datetime:
    """When a published version became public: its rescore's end (the release: its import)."""
    job = versions.latest_job(version)
    return (job.finished_at if job is not None and job.finished_at is not None
            else version.created_at)


def _add(parent: ET.Element, tag: str, text: str | None = None, **attributes: str
         ) -> ET.Element:
    """An Atom child element (ElementTree escapes text and attributes)."""
    element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attributes)
    element.text = text
    return element


def _entry(feed: ET.Element, entry_id: str, title: str, updated: str, link: str,
           summary: str) -> None:
    entry = _add(feed, "entry")
    _add(entry, "id", entry_id)
    _add(entry, "title", title)
    _add(entry, "updated", updated)
    _add(entry, "link", rel="alternate", href=link)
    _add(entry, "summary", summary)


@bp.get("/releases.atom")
def releases_atom() -> Response:
    """An Atom feed of the published input releases and gold versions, newest first: when
    to run a harness again."""
    page = url_for("data.releases", _external=True)
    entries: list[tuple[str, str, str, str, str]] = []  # id, title, updated, link, summary
    for release in input_releases.published():
        counts = ", ".join(f"{track} {c['total']}" for track, c in release.counts.items())
        entries.append((f"{page}#{release.name}", f"Input release {release.name}",
                        _timestamp(release.release_on), f"{page}#{release.name}",
                        f"New test inputs from gold version {release.gold_version.name}: "
                        f"{counts} examples (key, question, context; no answers)."))
    for version in versions.published_versions():
        link = url_for("versions.changelog", version_id=version.id, _external=True)
        entries.append((link, f"Gold version {version.name}", _timestamp(_version_time(version)),
                        link, f"As of {version.as_of.isoformat()}. {version.changelog}".strip()))
    entries.sort(key=lambda entry: entry[2], reverse=True)
    self_url = url_for("data.releases_atom", _external=True)
    feed = ET.Element(f"{{{ATOM}}}feed")
    _add(feed, "id", self_url)
    _add(feed, "title", "SituatedQA: input releases and gold versions")
    _add(feed, "updated", entries[0][2] if entries else _timestamp(datetime(1970, 1, 1)))
    _add(feed, "link", rel="self", href=self_url)
    _add(feed, "link", rel="alternate", href=page)
    _add(_add(feed, "author"), "name", "SituatedQA evaluation server")
    for entry in entries:
        _entry(feed, *entry)
    body = ET.tostring(feed, encoding="unicode", xml_declaration=False)
    return Response('<?xml version="1.0" encoding="utf-8"?>\n' + body + "\n",
                    mimetype="application/atom+xml")
