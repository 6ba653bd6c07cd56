"""SituatedQA benchmark core: gold import, prediction formats, the paper's metrics, CIs.

Pure Python (numpy and msgspec; click for the CLI), no Flask; the web server and the offline
CLI call the same functions.
"""

from .formats import (
    FileTooLargeError,
    Predictions,
    Problem,
    SplitMatch,
    ValidationError,
    match_splits,
    parse_predictions,
    wrong_split_hint,
)
from .gold import Example, GoldError, GoldSet, GoldSplit, build_gold_set, load_gold
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, PairedDifference
from .normalize import normalize_answer
from .paired import compare_primary
from .release import import_release, read_manifest
from .scoring import ScoreResult, compare, outcome_codes, per_example, score
from .tracks import (
    HIDDEN_SPLIT,
    ID_TRACKS,
    METRIC_LABELS,
    QA_TRACKS,
    SPLITS,
    TRACK_INFO,
    TRACKS,
    UnknownTrackError,
    track_info,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "HIDDEN_SPLIT",
    "ID_TRACKS",
    "METRIC_LABELS",
    "QA_TRACKS",
    "SPLITS",
    "TRACKS",
    "TRACK_INFO",
    "Example",
    "FileTooLargeError",
    "GoldError",
    "GoldSet",
    "GoldSplit",
    "PairedDifference",
    "Predictions",
    "Problem",
    "ScoreResult",
    "SplitMatch",
    "UnknownTrackError",
    "ValidationError",
    "build_gold_set",
    "compare",
    "compare_primary",
    "import_release",
    "load_gold",
    "match_splits",
    "normalize_answer",
    "outcome_codes",
    "parse_predictions",
    "per_example",
    "read_manifest",
    "score",
    "track_info",
    "wrong_split_hint",
]
