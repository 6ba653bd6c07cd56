"""The upload store: content-addressed, write-once files named by their SHA-256."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from flask import current_app


@dataclass(frozen=True)
class StagedFile:
    """Bytes written under a temporary name, waiting for the database commit."""

    sha256: str
    temp_path: Path


class UploadStore:
    """Files under root/ab/abcdef…; the client's filename is never used."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, sha256: str) -> Path:
        """Where the file with this digest lives."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError("not a SHA-256 hex digest")
        return self.root / sha256[:2] / sha256

    def stage(self, data: bytes) -> StagedFile:
        """Write data to a temporary file in the store; publish it with commit()."""
        tmp_dir = self.root / ".tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        path = tmp_dir / secrets.token_hex(16)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return StagedFile(hashlib.sha256(data).hexdigest(), path)

    def commit(self, staged: StagedFile) -> Path:
        """Move a staged file to its content address; the same content twice is a no-op."""
        target = self.path_for(staged.sha256)
        if target.exists():
            staged.temp_path.unlink(missing_ok=True)
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        # rename is atomic: readers see the whole file or none, and never a partial one.
        os.replace(staged.temp_path, target)
        return target

    def discard(self, staged: StagedFile) -> None:
        """Remove a staged file whose submission was not stored."""
        staged.temp_path.unlink(missing_ok=True)

    def read(self, sha256: str) -> bytes:
        """The stored bytes of a file."""
        return self.path_for(sha256).read_bytes()


def upload_store() -> UploadStore:
    """The store of the current app."""
    return UploadStore(Path(current_app.config["SUBMISSIONS_DIR"]))
