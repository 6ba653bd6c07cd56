"""The resumable batched prediction loop shared by all runners."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from baselines.output import ResumableWriter, pending_batches

T = TypeVar("T")


def run_batches(items: Sequence[T], key_of: Callable[[T], tuple[Any, ...]],
                predict: Callable[[list[T]], list[dict[str, Any]]], writer: ResumableWriter,
                batch_size: int, limit: int | None = None, desc: str = "predict") -> int:
    """Predict the pending items batch by batch and append them; returns records written.

    Batches are aligned to the whole item list, so an interrupted (or --limit) run followed
    by a resumed run writes exactly what one uninterrupted run writes. With LIMIT only the
    first LIMIT items are written (their batches are still computed whole).
    """
    from tqdm import tqdm

    allowed = len(items) if limit is None else max(0, min(limit, len(items)))
    index = {id(item): i for i, item in enumerate(items)}
    batches = pending_batches(items, batch_size, lambda item: writer.is_done(key_of(item)))
    batches = [batch for batch in batches if index[id(batch[0])] < allowed]
    before = writer.written
    for batch in tqdm(batches, desc=desc, unit="batch"):
        records = predict(batch)
        writer.write_batch(record for item, record in zip(batch, records, strict=True)
                           if index[id(item)] < allowed)
    return writer.written - before
