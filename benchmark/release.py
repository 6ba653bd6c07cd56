"""The pinned data release: its manifest, checksum verification, download and import."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .gold import GoldError, GoldSet, build_gold_set
from .tracks import DEFAULT_PRESENT_THRESHOLD

#: The pinned manifest: the wheel ships gold/manifest.json as benchmark/gold/manifest.json
#: (see setup.py); a checkout has it in gold/.
_PACKAGED_MANIFEST = Path(__file__).resolve().parent / "gold" / "manifest.json"
MANIFEST_PATH = (_PACKAGED_MANIFEST if _PACKAGED_MANIFEST.is_file()
                 else Path(__file__).resolve().parent.parent / "gold" / "manifest.json")
#: Where `fetch` puts the downloaded release unless told otherwise (not committed).
DEFAULT_DOWNLOAD_DIR = Path(__file__).resolve().parent.parent / "gold" / "release"
DATA_ENV = "SITUATEDQA_DATA"


@dataclass(frozen=True)
class Manifest:
    """Repository, commit and SHA-256 of every file of the release we pin."""

    repository: str
    commit: str
    folder: str
    url_template: str
    files: dict[str, str]

    def url(self, path: str) -> str:
        """The download address of one file at the pinned commit."""
        return self.url_template.format(
            repository=self.repository, commit=self.commit, folder=self.folder, path=path
        )

    def fingerprint(self) -> str:
        """One SHA-256 over the pinned file list: identifies this gold source."""
        text = json.dumps({"commit": self.commit, "files": self.files}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def read_manifest(path: Path = MANIFEST_PATH) -> Manifest:
    """Load the manifest of the pinned release."""
    data: dict[str, Any] = json.loads(path.read_text())
    return Manifest(
        repository=data["repository"], commit=data["commit"], folder=data["folder"],
        url_template=data["url_template"], files=dict(data["files"]),
    )


def sha256_file(path: Path) -> str:
    """SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_release(release_dir: Path, manifest: Manifest) -> None:
    """Raise GoldError naming every file that is missing or whose checksum differs."""
    problems = []
    for name, expected in manifest.files.items():
        path = release_dir / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif (actual := sha256_file(path)) != expected:
            problems.append(f"{path}: SHA-256 {actual} differs from the manifest's {expected}")
    if problems:
        raise GoldError(
            "the release does not match gold/manifest.json:\n  " + "\n  ".join(problems))


def resolve_release_dir(explicit: Path | None) -> Path:
    """The release folder: --from, else $SITUATEDQA_DATA, else the downloaded copy."""
    if explicit is not None:
        return explicit
    if env := os.environ.get(DATA_ENV):
        return Path(env)
    if DEFAULT_DOWNLOAD_DIR.is_dir():
        return DEFAULT_DOWNLOAD_DIR
    raise GoldError(
        f"no release found: pass --from DIR, set ${DATA_ENV}, or run `python -m benchmark fetch`"
    )


def import_release(
    release_dir: Path,
    manifest: Manifest | None = None,
    *,
    present_threshold: int = DEFAULT_PRESENT_THRESHOLD,
) -> GoldSet:
    """Verify a release folder against the manifest, then build the canonical gold."""
    manifest = manifest or read_manifest()
    verify_release(release_dir, manifest)
    meta = {
        "repository": manifest.repository, "commit": manifest.commit,
        "source_fingerprint": manifest.fingerprint(), "files": manifest.files,
    }
    return build_gold_set(release_dir, present_threshold=present_threshold, meta=meta)


Progress = Callable[[str, int], Callable[[int], None]]


def fetch_release(
    destination: Path,
    manifest: Manifest,
    *,
    get: Callable[[str], Any],
    progress: Progress | None = None,
) -> list[str]:
    """Download every manifest file not already present and verified; return what was fetched.

    `get(url)` returns a streaming HTTP response (requests-compatible: raise_for_status,
    headers, iter_content). Each file is written to a temporary name, verified, then renamed,
    so an interrupted or corrupted download never leaves a file that looks valid.
    """
    fetched = []
    for name, expected in manifest.files.items():
        target = destination / name
        if target.is_file() and sha256_file(target) == expected:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        response = get(manifest.url(name))
        response.raise_for_status()
        total = int(response.headers.get("Content-Length", 0))
        advance = progress(name, total) if progress else (lambda n: None)
        digest = hashlib.sha256()
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in response.iter_content(chunk_size=1 << 16):
                    digest.update(chunk)
                    out.write(chunk)
                    advance(len(chunk))
            if digest.hexdigest() != expected:
                raise GoldError(
                    f"{name}: downloaded SHA-256 {digest.hexdigest()} differs from the "
                    f"manifest's {expected}"
                )
            os.replace(tmp_name, target)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
        fetched.append(name)
    return fetched
