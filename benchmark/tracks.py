"""The benchmark's tracks, splits, metric names and partition rules, declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SPLITS: Final = ("train", "dev", "test")

QA_TRACKS: Final = ("temp", "geo", "present", "curprev")
ID_TRACKS: Final = ("temp-id", "geo-id")
TRACKS: Final = ("temp", "geo", "temp-id", "geo-id", "present", "curprev")

#: The official 28 common locations, compared after answer normalization.
COMMON_LOCATIONS: Final = (
    "united states", "india", "united kingdom", "australia", "canada", "china",
    "new york", "florida", "japan", "england", "uk", "germany", "spain", "georgia",
    "france", "new york city", "alabama", "russia", "kentucky", "ohio", "us",
    "california", "texas", "pakistan", "mexico", "new zealand", "usa", "israel",
)
#: Table 7 singles out the two most common location names, "United States" and "India";
#: "us" and "usa" stay in Other common, which reproduces Table 7's Other count (203).
US_LOCATIONS: Final = ("united states",)
INDIA_LOCATIONS: Final = ("india",)

DEFAULT_PRESENT_THRESHOLD: Final = 2019


@dataclass(frozen=True)
class TrackInfo:
    """What a track is, which metrics it reports, and which one ranks it."""

    name: str
    title: str
    metrics: tuple[str, ...]
    primary: str
    context_fields: tuple[str, ...]
    description: str


TRACK_INFO: Final[dict[str, TrackInfo]] = {
    "temp": TrackInfo(
        "temp", "Temporal SituatedQA",
        ("em", "em_static", "em_sampled", "em_start", "em_any"), "em",
        ("date", "date_type"),
        "Answer the question as of the given date (paper Tables 5 and 6).",
    ),
    "geo": TrackInfo(
        "geo", "Geographical SituatedQA",
        ("em", "em_common", "em_rare", "em_any", "em_us", "em_india", "em_other_common"), "em",
        ("location",),
        "Answer the question for the given location (paper Tables 5, 6 and 7).",
    ),
    "temp-id": TrackInfo(
        "temp-id", "Temporal dependence identification",
        ("accuracy", "precision", "recall", "f1"), "f1", (),
        "Is the answer to this question time-dependent? (paper Table 4).",
    ),
    "geo-id": TrackInfo(
        "geo-id", "Geographical dependence identification",
        ("accuracy", "precision", "recall", "f1"), "f1", (),
        "Is the answer to this question location-dependent? (paper Table 4).",
    ),
    "present": TrackInfo(
        "present", "Present-day answers",
        ("em", "em_stable", "em_updated"), "em", (),
        "Answer as of the data collection (Feb 2021), split Stable / Updated (paper Table 9).",
    ),
    "curprev": TrackInfo(
        "curprev", "Current and previous answers",
        ("em", "em_current", "em_previous"), "em", ("which",),
        "Give the current or the previous answer of a changing fact (paper Table 8).",
    ),
}

#: Human-readable labels for every metric name used anywhere.
METRIC_LABELS: Final[dict[str, str]] = {
    "em": "EM",
    "em_static": "Static",
    "em_sampled": "Sampled",
    "em_start": "Start",
    "em_any": "EM Any",
    "em_common": "Common",
    "em_rare": "Rare",
    "em_us": "US",
    "em_india": "India",
    "em_other_common": "Other common",
    "em_stable": "Stable",
    "em_updated": "Updated",
    "em_current": "Current",
    "em_previous": "Previous",
    "accuracy": "Accuracy",
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "auc": "ROC AUC",
}

TEMP_PARTITION_OF_DATE_TYPE: Final = {
    "orig": "static",
    "sampled_year": "sampled",
    "sampled_date": "sampled",
    "start": "start",
}


class UnknownTrackError(ValueError):
    """Raised for a track or split name the benchmark does not have."""


def track_info(track: str) -> TrackInfo:
    """Return the description of a track, or raise UnknownTrackError."""
    try:
        return TRACK_INFO[track]
    except KeyError:
        raise UnknownTrackError(
            f"unknown track {track!r}; choose one of {', '.join(TRACKS)}"
        ) from None


def check_split(split: str) -> str:
    """Return the split name if it exists, or raise UnknownTrackError."""
    if split not in SPLITS:
        raise UnknownTrackError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return split
