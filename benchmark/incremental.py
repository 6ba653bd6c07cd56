"""Incremental rescoring: a parent score's per-example outcomes, re-evaluated where gold changed.

A score is a function of per-example outcomes (benchmark.scoring.result_from_outcomes). An
example's outcome depends only on its prediction and its own gold (answers, any_answer or
label), so after a gold update the outcomes of the examples it left alone are the parent
row's, and only the changed and added ones need their prediction read and evaluated, with
the very functions score() uses (outcome_codes, lenient_codes) on a split of just those
examples. Metrics and CIs are then recomputed from the whole outcome vector, so the result
equals score() on the new gold, bit for bit (tests/benchmark_versions prove it on random
updates and files).

What a rescore needs besides the parent row is stored at upload time:

* the per-example token F1 (QA), which the outcome codes do not carry: `encode_f1`;
* the predictions as parsed (texts, or labels and scores), in the order of the inputs they
  were parsed against, named by the SHA-256 of those inputs' keys: `encode_predictions`.
  Keys are not stored: they are the inputs' and take three quarters of the bytes;
* with the error classes (QA, not in the paper), the per-example class codes
  (ScoreResult.error_classes, one byte each). An example's class also depends on the other
  contexts of its question, so a rescore re-classifies every example whose other answers
  changed (error_classes.ErrorTables of the parent and the new split), besides the changed
  and added ones: `error_redo`. With a track's mark (geo: the US answer) also the
  per-example mark states, which depend on the same sibling contexts; a parent row without
  them cannot seed a rescore.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np

from .error_classes import ErrorTables, reclassify_marked
from .formats import Predictions
from .gold import GoldSplit
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED, BoolArray, FloatArray, IntArray
from .normalize import normalize_many
from .scoring import (
    CORRECT,
    LENIENT_SCORED,
    ScoreResult,
    lenient_codes,
    outcome_codes,
    result_from_outcomes,
)

#: zlib level of the stored blobs: on an upload's path, and level 6 saves only 10% of the
#: bytes for 2x the time (temp/dev: 12.8 KB in 0.4 ms vs 11.5 KB in 0.9 ms; F1 10x slower).
ZLIB_LEVEL = 1


class StoredPredictions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A parsed prediction set without its keys: those of the inputs named by keys_sha256."""

    keys_sha256: str
    #: QA: the prediction texts as parsed (not normalized), in the inputs' order.
    answers: list[str] | None = None
    #: Identification: the labels (one byte each, 0/1) and the scores (float64) if given.
    labels: bytes | None = None
    scores: bytes | None = None

    def label_array(self) -> BoolArray:
        """The labels as a boolean array (identification)."""
        return np.frombuffer(self.labels or b"", dtype=np.bool_)

    def score_array(self) -> FloatArray | None:
        """The scores as a float64 array, None when the file had none."""
        return None if self.scores is None else np.frombuffer(self.scores, dtype=np.float64)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StoredPredictions)


def keys_digest(keys: Sequence[str]) -> str:
    """SHA-256 of a key list in order (keys hold no newline: they are one-line JSON values)."""
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


_digests: weakref.WeakKeyDictionary[GoldSplit, str] = weakref.WeakKeyDictionary()


def split_digest(gold: GoldSplit) -> str:
    """keys_digest of a gold split's keys, computed once per split object."""
    digest = _digests.get(gold)
    if digest is None:
        digest = _digests[gold] = keys_digest(gold.keys)
    return digest


def encode_predictions(predictions: Predictions, inputs: GoldSplit | None = None) -> bytes:
    """The stored form of a parsed prediction set (inputs: the split it was parsed against)."""
    digest = (split_digest(inputs) if inputs is not None and predictions.keys == inputs.keys
              else keys_digest(predictions.keys))
    if predictions.answers is not None:
        stored = StoredPredictions(digest, answers=list(predictions.answers))
    else:
        labels = predictions.labels if predictions.labels is not None else np.zeros(0, bool)
        scores = predictions.scores
        stored = StoredPredictions(
            digest, labels=np.ascontiguousarray(labels, dtype=np.bool_).tobytes(),
            scores=None if scores is None else np.ascontiguousarray(
                scores, dtype=np.float64).tobytes())
    return zlib.compress(_encoder.encode(stored), ZLIB_LEVEL)


def decode_predictions(data: bytes) -> StoredPredictions:
    """A stored prediction set (msgspec.ValidationError or zlib.error when corrupt)."""
    return _decoder.decode(zlib.decompress(data))


def encode_f1(f1: FloatArray | None, f1_any: FloatArray | None) -> bytes | None:
    """The per-example token F1 of a QA score (answers, then any_answer unless equal)."""
    if f1 is None or f1_any is None:
        return None
    parts = [np.ascontiguousarray(f1, dtype=np.float64).tobytes()]
    if not np.array_equal(f1, f1_any):
        parts.append(np.ascontiguousarray(f1_any, dtype=np.float64).tobytes())
    return zlib.compress(b"".join(parts), ZLIB_LEVEL)


def decode_f1(data: bytes, n: int) -> tuple[FloatArray, FloatArray] | None:
    """(f1, f1_any) of n examples from encode_f1's bytes; None when they are not n long."""
    raw = np.frombuffer(zlib.decompress(data), dtype=np.float64)
    if raw.size == n:
        return raw, raw
    if raw.size == 2 * n:
        return raw[:n], raw[n:]
    return None


@dataclass(frozen=True)
class Plan:
    """How a parent split's per-example outcomes carry over to a new split of the same board."""

    new: GoldSplit
    #: Per new example: its position in the parent split, or -1 where it is re-evaluated.
    take: IntArray
    #: New positions re-evaluated: examples added, or whose gold differs from the parent's.
    changed: IntArray
    #: The re-evaluated examples as a split of their own (outcomes are per example).
    probe: GoldSplit
    #: The parent split's length (a parent row of another length cannot be used).
    parent_size: int


_plans: dict[tuple[int, int], tuple[GoldSplit, GoldSplit, Plan]] = {}
_lock = threading.Lock()
#: Plans (and their key orders) kept per process. Each holds its two gold splits alive, and
#: a job worker lives through many versions: past this, the caches start again.
_KEPT = 64


def plan(parent: GoldSplit, new: GoldSplit) -> Plan:
    """The carry-over plan from a parent split to a new one, built once per pair of splits."""
    if (parent.track, parent.split) != (new.track, new.split):
        raise ValueError(f"{parent.track}/{parent.split} is not {new.track}/{new.split}")
    with _lock:
        found = _plans.get((id(parent), id(new)))
        if found is not None and found[0] is parent and found[1] is new:
            return found[2]
    take = np.full(len(new), -1, dtype=np.int64)
    for position, example in enumerate(new.examples):
        before = parent.index.get(example.key)
        # The whole example compared: an outcome needs only the answers (or label), so this
        # re-evaluates at most a few examples more than needed (e.g. a changed question).
        if before is not None and parent.examples[before] == example:
            take[position] = before
    changed = np.flatnonzero(take < 0)
    made = Plan(new=new, take=take, changed=changed,
                probe=GoldSplit(new.track, new.split, [new.examples[i] for i in changed]),
                parent_size=len(parent))
    with _lock:
        if len(_plans) >= _KEPT:
            _plans.clear()
            _sources.clear()
        # Keyed by id, holding both splits so that an id is never reused while cached.
        _plans[(id(parent), id(new))] = (parent, new, made)
    return made


@dataclass(frozen=True)
class _Sources:
    """Where a plan's examples are in one stored key order."""

    #: Per re-evaluated example: its position in the stored predictions, -1 if absent.
    changed: IntArray
    #: Per new example: its position in the stored predictions, -1 if absent (AUC scores).
    every: IntArray


_sources: dict[tuple[int, str], tuple[Plan, _Sources]] = {}


def _sources_of(made: Plan, keys: Sequence[str], digest: str) -> _Sources:
    """The stored positions of a plan's examples for one key order, once per (plan, keys)."""
    with _lock:
        found = _sources.get((id(made), digest))
        if found is not None and found[0] is made:
            return found[1]
    position = {key: i for i, key in enumerate(keys)}
    every = np.array([position.get(key, -1) for key in made.new.keys], dtype=np.int64)
    sources = _Sources(changed=every[made.changed], every=every)
    with _lock:
        if len(_sources) >= _KEPT:
            _sources.clear()
        _sources[(id(made), digest)] = (made, sources)
    return sources


def _probe_predictions(made: Plan, stored: StoredPredictions, where: IntArray) -> Predictions:
    """The stored predictions of the re-evaluated examples, filled as realign() fills them."""
    probe = made.probe
    if not probe.is_identification:
        answers = stored.answers or []
        # An example the file lacks (added after it was made) gets the empty answer: wrong.
        texts = tuple(answers[j] if j >= 0 else "" for j in where.tolist())
        return Predictions(probe.track, probe.split, "stored", answers=texts, keys=probe.keys)
    labels = stored.label_array()
    missing_label = ~probe.labels  # an absent label is the wrong one
    found = where >= 0
    chosen = np.where(found, labels[np.where(found, where, 0)] if labels.size else False,
                      missing_label)
    return Predictions(probe.track, probe.split, "stored", labels=chosen.astype(np.bool_),
                       keys=probe.keys)


def _scores_of(made: Plan, stored: StoredPredictions, every: IntArray) -> FloatArray | None:
    """The identification scores in new gold order, filled as realign() fills them."""
    scores = stored.score_array()
    if scores is None:
        return None
    # An absent example gets the worst score for its label: 0 for a positive, 1 for a negative.
    fill = np.where(made.new.labels, 0.0, 1.0)
    found = every >= 0
    return np.where(found, scores[np.where(found, every, 0)] if scores.size else 0.0, fill)


_redo: dict[tuple[int, int], tuple[ErrorTables, ErrorTables, IntArray]] = {}


def error_redo(made: Plan, parent_tables: ErrorTables, new_tables: ErrorTables) -> IntArray:
    """New positions whose error class must be re-evaluated: those the plan re-evaluates,
    and those whose other answers or marked answers differ from their parent example's (a
    sibling changed).

    Built once per pair of tables; ValueError when the tables are not the plan's splits'.
    """
    if len(parent_tables) != made.parent_size or len(new_tables) != len(made.new) or (
            new_tables.track, new_tables.split) != (made.new.track, made.new.split) or (
            parent_tables.track, parent_tables.split) != (new_tables.track, new_tables.split):
        raise ValueError("the error tables are not those of the parent and the new split")
    with _lock:
        found = _redo.get((id(parent_tables), id(new_tables)))
        if found is not None and found[0] is parent_tables and found[1] is new_tables:
            return found[2]
    before, after = parent_tables.situated, new_tables.situated
    marked_before, marked_after = parent_tables.marked, new_tables.marked
    redo = np.array([position for position, source in enumerate(made.take.tolist())
                     if source < 0 or after[position].others != before[source].others
                     or (bool(marked_after) and (not marked_before or marked_after[position]
                                                 != marked_before[source]))],
                    dtype=np.int64)
    with _lock:
        if len(_redo) >= _KEPT:
            _redo.clear()
        _redo[(id(parent_tables), id(new_tables))] = (parent_tables, new_tables, redo)
    return redo


def _rescore_classes(made: Plan, tables: tuple[ErrorTables, ErrorTables],
                     parent_codes: IntArray | None, parent_marks: IntArray | None,
                     take: IntArray | None, outcomes: IntArray, stored: StoredPredictions,
                     every: IntArray) -> tuple[IntArray, IntArray | None]:
    """The new split's class codes and mark states: the parent's, re-evaluated where
    error_redo says."""
    codes = np.asarray(parent_codes, dtype=np.int64) if parent_codes is not None else None
    if codes is None or codes.shape != (made.parent_size,):
        raise ValueError("the parent row carries no error classes for its gold")
    states = None
    if tables[1].mark_states is not None:
        states = np.asarray(parent_marks, dtype=np.int64) if parent_marks is not None else None
        if states is None or states.shape != (made.parent_size,):
            raise ValueError("the parent row carries no mark states for its gold")
    classes = codes[take] if take is not None else np.zeros(len(made.new), dtype=np.int64)
    marks = None if states is None else (
        states[take] if take is not None else np.zeros(len(made.new), dtype=np.int64))
    redo = error_redo(made, *tables)
    if redo.size:
        answers = stored.answers or []
        texts = [answers[j] if j >= 0 else "" for j in every[redo].tolist()]
        classes[redo], redone = reclassify_marked(tables[1], redo, normalize_many(texts),
                                                  (outcomes[redo] & CORRECT) > 0)
        if marks is not None and redone is not None:
            marks[redo] = redone
    return classes, marks


def rescore(
    parent: GoldSplit,
    new: GoldSplit,
    parent_outcomes: IntArray,
    stored: StoredPredictions,
    keys: Sequence[str],
    parent_f1: tuple[FloatArray, FloatArray] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    errors: tuple[ErrorTables, ErrorTables] | None = None,
    parent_error_classes: IntArray | None = None,
    parent_error_marks: IntArray | None = None,
) -> ScoreResult:
    """score() on the new split, from a parent score's outcomes and the stored predictions.

    parent_outcomes (and parent_f1, for QA) are the parent row's, in parent gold order;
    `keys` are those of the inputs the predictions were stored against (stored.keys_sha256).
    With `errors`, the error tables of (parent, new) split, and the parent row's class codes,
    the result also has the error classes, equal to score(..., errors=new tables); a track
    with a mark needs the parent's mark states too (parent_error_marks).
    Raises ValueError when the parent row cannot be used (another length, a QA row scored
    before the lenient metrics, no F1, no class codes or mark states): the caller scores the
    file in full.
    """
    if errors is not None and new.is_identification:
        raise ValueError("identification tracks have no error classes")
    made = plan(parent, new)
    codes = np.asarray(parent_outcomes, dtype=np.int64)
    if codes.shape != (made.parent_size,):
        raise ValueError(f"the parent row has {codes.size} outcomes, its gold "
                         f"{made.parent_size}")
    if len(keys) != len(stored.answers if stored.answers is not None else stored.label_array()):
        raise ValueError("the stored predictions do not match their keys")
    sources = _sources_of(made, keys, stored.keys_sha256)
    # Positions re-evaluated take a placeholder (position 0) that is overwritten below; a
    # parent split with no examples left has none to take, and every position is re-evaluated.
    take = np.where(made.take >= 0, made.take, 0) if codes.size else None
    outcomes = codes[take] if take is not None else np.zeros(len(new), dtype=np.int64)
    probe = _probe_predictions(made, stored, sources.changed)
    probe_codes = outcome_codes(made.probe, probe)
    if new.is_identification:
        outcomes[made.changed] = probe_codes
        return result_from_outcomes(new, outcomes, scores=_scores_of(made, stored, sources.every),
                                    resamples=resamples, seed=seed)
    if parent_f1 is None or not (codes.size == 0 or bool(np.all(codes & LENIENT_SCORED))):
        raise ValueError("the parent row carries no lenient outcomes")
    probe_codes, probe_f1, probe_f1_any = lenient_codes(made.probe, probe, probe_codes)
    outcomes[made.changed] = probe_codes
    f1, f1_any = ((parent_f1[0][take], parent_f1[1][take]) if take is not None
                  else (np.zeros(len(new)), np.zeros(len(new))))
    f1[made.changed] = probe_f1
    f1_any[made.changed] = probe_f1_any
    classes, marks = (None, None) if errors is None else _rescore_classes(
        made, errors, parent_error_classes, parent_error_marks, take, outcomes, stored,
        sources.every)
    return result_from_outcomes(new, outcomes, f1, f1_any, resamples=resamples, seed=seed,
                                errors=None if errors is None else errors[1],
                                error_classes=classes, error_marks=marks)
