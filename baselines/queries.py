"""Query construction for the three settings (paper Section 4, Table 3).

Each track declares the paper's query-modified form of its questions (TrackInfo.query in
benchmark/tracks.py: "... as of DATE", "... in LOCATION", "previously ..."); this module
picks the question or that form by setting.
"""

from __future__ import annotations

from typing import Any

from benchmark import TRACK_INFO


def modify_query(track: str, row: dict[str, Any], setting: str) -> str:
    """Return the model query of a release row for a track and setting.

    The fine-tuned setting uses query-modified questions (the models are trained on them);
    current answers (present track, curprev "current") are asked with the question alone.
    """
    question = str(row["question"])
    if setting == "unmodified":
        return question
    return TRACK_INFO[track].query(question, row)
