"""FreshQA (Vu et al. 2023, "FreshLLMs"; Apache-2.0): its dated snapshots imported as gold.

`manifest` pins the snapshot files and checks them, `reader` reads one CSV into typed rows,
`snapshots` turns rows into examples keyed by question text and two snapshots into the
update records of a gold version (benchmark/versions.py) and a changelog. See
docs/freshqa.md. The track registry does not declare FreshQA yet: nothing here touches it.
"""

from .manifest import (
    DATA_ENV,
    MANIFEST_PATH,
    FreshManifest,
    SnapshotFile,
    load_snapshots,
    read_manifest,
    resolve_data_dir,
)
from .reader import FreshQAError, Row, parse_snapshot, read_snapshot
from .snapshots import (
    TRACK,
    Snapshot,
    SnapshotChange,
    SnapshotDiff,
    changelog,
    diff_snapshots,
    question_key,
    row_example,
    snapshot_examples,
    update_file_text,
    update_records,
)

__all__ = [
    "DATA_ENV", "MANIFEST_PATH", "TRACK", "FreshManifest", "FreshQAError", "Row", "Snapshot",
    "SnapshotChange", "SnapshotDiff", "SnapshotFile", "changelog", "diff_snapshots",
    "load_snapshots", "parse_snapshot", "question_key", "read_manifest", "read_snapshot",
    "resolve_data_dir", "row_example", "snapshot_examples", "update_file_text",
    "update_records",
]
