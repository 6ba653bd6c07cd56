"""Query construction for the three settings (paper Section 4, Table 3)."""

from __future__ import annotations

from typing import Any

PREVIOUS_PREFIX = "previously "


def temp_query(question: str, date: str) -> str:
    """Temporal query modification: append "as of DATE"."""
    return f"{question} as of {date}"


def geo_query(question: str, location: str) -> str:
    """Geographical query modification: append "in LOCATION" (lower-cased, as in the release)."""
    return f"{question} in {location.lower()}"


def previous_query(question: str) -> str:
    """Query for the previous answer: prepend "previously" (paper Section 6)."""
    return f"{PREVIOUS_PREFIX}{question}"


def modify_query(track: str, row: dict[str, Any], setting: str) -> str:
    """Return the model query of a release row for a track and setting.

    The fine-tuned setting uses query-modified questions (the models are trained on them);
    current answers (present track, curprev "current") are asked with the question alone.
    """
    question = str(row["question"])
    if setting == "unmodified":
        return question
    if track == "temp":
        return temp_query(question, row["date"])
    if track == "geo":
        return geo_query(question, row["location"])
    if track == "curprev" and row.get("which") == "previous":
        return previous_query(question)
    return question
