"""Retry-safe uploads: the first response to an Idempotency-Key is replayed for 24 hours.

The key's row is written in the upload's own transaction, so a stored upload always has
its key and a failed one never does: a client that retries after a connection error
spends no quota twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from ..extensions import db
from ..models import IdempotencyKey, User, utcnow
from .errors import ServiceError

WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 200
HEADER = "Idempotency-Key"


class KeyReused(ServiceError):
    """The key was sent before with a different request."""

    status = 422
    code = "idempotency_key_reused"


class ConcurrentRequest(ServiceError):
    """Another request with the same key committed first; replay its response."""

    status = 409
    code = "conflict"


def request_digest(fields: Iterable[tuple[str, str]], data: bytes) -> str:
    """SHA-256 over the form fields (sorted) and the file's bytes."""
    digest = hashlib.sha256()
    for name, value in sorted(fields):
        digest.update(f"{len(name)}:{name}={len(value)}:{value};".encode())
    digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def replay(user: User, key: str, request_sha256: str) -> tuple[dict[str, Any], int] | None:
    """The stored response for this key within the window (KeyReused if another request)."""
    row = db.session.scalar(select(IdempotencyKey).where(
        IdempotencyKey.user_id == user.id, IdempotencyKey.key == key,
        IdempotencyKey.created_at >= utcnow() - WINDOW))
    if row is None:
        return None
    if row.request_sha256 != request_sha256:
        raise KeyReused(f"the {HEADER} {key!r} was used within the last 24 hours for a "
                        "different upload; use a new key for a new upload")
    return dict(row.response), row.status


def record(user: User, key: str, request_sha256: str, response: dict[str, Any]) -> None:
    """Record the key and its 201 response in the upload's transaction (before its commit)."""
    db.session.execute(delete(IdempotencyKey).where(
        IdempotencyKey.user_id == user.id, IdempotencyKey.key == key,
        IdempotencyKey.created_at < utcnow() - WINDOW))
    db.session.add(IdempotencyKey(user_id=user.id, key=key, request_sha256=request_sha256,
                                  status=201, response=response, created_at=utcnow()))
    try:
        db.session.flush()
    except IntegrityError:
        raise ConcurrentRequest("a request with this Idempotency-Key is still being processed; "
                                "retry in a moment") from None
