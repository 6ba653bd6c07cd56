"""Passage embeddings on disk and the inner-product index over them, built incrementally.

Embeddings are appended batch by batch to a raw float32 file (read back as a numpy memmap),
so encoding holds one batch in memory and an interrupted run resumes where it stopped.
The faiss index is then filled chunk by chunk from that file: peak memory is one chunk plus
the index itself. DPR's published embedding shards (pickled lists of ``(id, vector)``) are
read into the same file, with a table mapping index positions to corpus rows.

faiss is imported lazily (only the index kinds that use it need it).
"""

from __future__ import annotations

import json
import logging
import math
import pickle
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import numpy.typing as npt

from baselines.corpus import CorpusTable, id_key, read_int64

log = logging.getLogger(__name__)

INDEX_KINDS = ("flat", "hnsw", "ivf", "numpy")
Matrix = npt.NDArray[np.float32]
Rows = npt.NDArray[np.int64]


@dataclass(frozen=True)
class IndexParams:
    """The index kind and its knobs (HNSW graph degree and beams, IVF lists and probes)."""

    kind: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    nlist: int = 0  # 0: 4 * sqrt(n), capped so that every list gets 39 training points
    nprobe: int = 64
    add_chunk: int = 65536

    def describe(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return asdict(self)


class EmbeddingFile:
    """An append-only (n, dim) float32 matrix in a raw file; its dim in a JSON next to it."""

    def __init__(self, path: Path) -> None:
        """Use PATH (``*.f32``) and ``PATH.json``; a torn last row is cut off."""
        self.path, self.meta = path, path.with_suffix(".json")
        self.dim = 0
        if self.meta.is_file() and self.path.is_file():
            self.dim = int(json.loads(self.meta.read_text(encoding="utf-8"))["dim"])
            whole = self.rows() * self.dim * 4
            if self.path.stat().st_size != whole:
                with self.path.open("r+b") as handle:
                    handle.truncate(whole)

    def rows(self) -> int:
        """Complete rows written so far."""
        if not self.dim or not self.path.is_file():
            return 0
        return self.path.stat().st_size // (4 * self.dim)

    def reset(self) -> None:
        """Start an empty matrix."""
        self.path.unlink(missing_ok=True)
        self.meta.unlink(missing_ok=True)
        self.dim = 0

    def append(self, vectors: npt.ArrayLike) -> None:
        """Append an (m, dim) block (converted to float32)."""
        block = np.ascontiguousarray(vectors, dtype=np.float32)
        if block.ndim != 2:
            raise ValueError(f"expected an (m, dim) block, got shape {block.shape}")
        if not self.dim:
            self.dim = int(block.shape[1])
            self.meta.write_text(json.dumps({"dim": self.dim}), encoding="utf-8")
        if block.shape[1] != self.dim:
            raise ValueError(f"{self.path}: vectors of dim {block.shape[1]} added to a matrix "
                             f"of dim {self.dim}")
        with self.path.open("ab") as handle:
            block.tofile(handle)

    def chunks(self, size: int) -> Iterator[Matrix]:
        """The rows in blocks of SIZE, read from the file (not mapped: no resident pages)."""
        rows, done = self.rows(), 0
        with self.path.open("rb") as handle:
            while done < rows:
                count = min(size, rows - done)
                block = np.fromfile(handle, dtype=np.float32, count=count * self.dim)
                yield block.reshape(count, self.dim)
                done += count

    def matrix(self) -> Matrix:
        """The rows written so far, as a read-only memmap."""
        rows = self.rows()
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.memmap(self.path, dtype=np.float32, mode="r", shape=(rows, self.dim))


def numpy_top_k(queries: Matrix, passages: Matrix, k: int) -> tuple[Matrix, Rows]:
    """Exact inner-product top-k with argpartition; returns (scores, indices) sorted desc."""
    scores = queries @ passages.T
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, axis=1)
    # stable sort on (-score, index) so ties break by corpus order, like faiss flat
    order = np.lexsort((part, -part_scores), axis=1)
    return (np.take_along_axis(part_scores, order, axis=1).astype(np.float32),
            np.take_along_axis(part, order, axis=1).astype(np.int64))


def chunked_top_k(queries: Matrix, passages: Matrix, k: int, chunk: int) -> tuple[Matrix, Rows]:
    """numpy_top_k over a (memmapped) matrix read CHUNK rows at a time."""
    best_scores = np.zeros((len(queries), 0), dtype=np.float32)
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, len(passages), chunk):
        block = np.asarray(passages[start:start + chunk], dtype=np.float32)
        scores, rows = numpy_top_k(queries, block, k)
        merged_scores = np.concatenate([best_scores, scores], axis=1)
        merged_rows = np.concatenate([best_rows, rows + start], axis=1)
        order = np.lexsort((merged_rows, -merged_scores), axis=1)[:, :k]
        best_scores = np.take_along_axis(merged_scores, order, axis=1)
        best_rows = np.take_along_axis(merged_rows, order, axis=1)
    return best_scores, best_rows


def auto_nlist(n: int) -> int:
    """IVF list count: 4 * sqrt(n), with at least 39 training points per list."""
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


def _new_faiss_index(params: IndexParams, dim: int, matrix: Matrix) -> Any:
    """An empty faiss index of PARAMS.kind (IVF trained on a strided sample of MATRIX)."""
    import faiss  # lazy: the numpy kind and the package import need no faiss

    index: Any
    if params.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params.ef_construction
        return index
    if params.kind == "ivf":
        nlist = params.nlist or auto_nlist(len(matrix))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.linspace(0, len(matrix) - 1, min(len(matrix), 256 * nlist)).astype(np.int64)
        index.train(np.ascontiguousarray(matrix[np.unique(sample)], dtype=np.float32))
        return index
    return faiss.IndexFlatIP(dim)


class PassageIndex:
    """Inner-product search over passage embeddings; results are corpus rows."""

    FAISS = "index.faiss"
    ROWS = "embeddings.rows.i64"

    def __init__(self, params: IndexParams, index: Any, rows: Rows | None = None) -> None:
        """Wrap a faiss index (or a float32 matrix for the numpy kind); ROWS maps positions."""
        self.params, self.index, self.rows = params, index, rows

    @property
    def kind(self) -> str:
        """The index kind."""
        return self.params.kind

    @property
    def ntotal(self) -> int:
        """Vectors in the index."""
        return len(self.index) if self.kind == "numpy" else int(self.index.ntotal)

    @classmethod
    def build(cls, params: IndexParams | str, matrix: npt.ArrayLike,
              rows: Rows | None = None, chunks: Iterable[Matrix] | None = None,
              ) -> PassageIndex:
        """Index an (n, d) matrix, added params.add_chunk rows at a time (or CHUNKS of it).

        MATRIX may be a memmap; IVF trains on a sample of it. CHUNKS, when given, are its
        rows in order (read from the file, so a big matrix never becomes resident).
        """
        params = IndexParams(params) if isinstance(params, str) else params
        if params.kind not in INDEX_KINDS:
            raise click.BadParameter(f"unknown index kind {params.kind!r}", param_hint="--index")
        data: Matrix = matrix if isinstance(matrix, np.ndarray) else np.asarray(
            matrix, dtype=np.float32)
        if params.kind == "numpy":
            return cls(params, data, rows)
        index = _new_faiss_index(params, int(data.shape[1]), data)
        blocks = chunks if chunks is not None else (
            data[start:start + params.add_chunk] for start in range(0, len(data),
                                                                     params.add_chunk))
        for block in blocks:
            index.add(np.ascontiguousarray(block, dtype=np.float32))
        if index.ntotal != len(data):
            raise ValueError(f"indexed {index.ntotal} vectors of {len(data)}")
        return cls(params, index, rows)

    def search(self, queries: npt.ArrayLike, k: int) -> tuple[Matrix, Rows]:
        """Top-k (scores, corpus rows) for each query row, best first; -1 pads short lists."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, self.ntotal)
        if self.kind == "numpy":
            scores, found = chunked_top_k(q, self.index, k, self.params.add_chunk)
        else:
            if self.kind == "hnsw":
                self.index.hnsw.efSearch = max(self.params.ef_search, k)
            elif self.kind == "ivf":
                self.index.nprobe = self.params.nprobe
            scores, found = self.index.search(q, k)
        found = np.asarray(found, dtype=np.int64)
        scores = np.asarray(scores, dtype=np.float32)
        if self.rows is not None:
            found = np.where(found >= 0, self.rows[np.maximum(found, 0)], -1)
        # equal scores in corpus order, whatever order the index kind returned them in
        missing = found < 0
        order = np.lexsort((np.where(missing, np.iinfo(np.int64).max, found), -scores,
                            missing), axis=1)
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(found, order, axis=1)

    def save(self, folder: Path) -> None:
        """Write the faiss index (the numpy kind reads the embedding file in FOLDER)."""
        if self.kind != "numpy":
            import faiss  # lazy: see the module docstring

            faiss.write_index(self.index, str(folder / self.FAISS))

    @classmethod
    def load(cls, folder: Path, params: IndexParams, embeddings: EmbeddingFile) -> PassageIndex:
        """Open the index saved in FOLDER (with its position -> row table, if any)."""
        rows = read_int64(folder / cls.ROWS) if (folder / cls.ROWS).is_file() else None
        if params.kind == "numpy":
            return cls(params, embeddings.matrix(), rows)
        import faiss  # lazy: see the module docstring

        return cls(params, faiss.read_index(str(folder / cls.FAISS)), rows)


class _ShardUnpickler(pickle.Unpickler):
    """Unpickle only what DPR's shards hold (lists of (id, numpy vector)): no code runs."""

    ALLOWED = frozenset({
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
    })

    def find_class(self, module: str, name: str) -> Any:
        """Resolve only the numpy array constructors."""
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a shard")
        # numpy 2 moved numpy.core to numpy._core; old shards name the old module
        return super().find_class(module.replace("numpy.core.", "numpy._core."), name)


def read_dpr_shard(path: Path) -> tuple[list[str], Matrix]:
    """Ids and an (m, d) float32 matrix from one DPR shard (a pickled [(id, vector), ...])."""
    try:
        with path.open("rb") as handle:
            entries = _ShardUnpickler(handle).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
        raise click.ClickException(f"{path}: not a DPR embedding shard ({error})") from None
    if not isinstance(entries, list) or not entries:
        raise click.ClickException(f"{path}: expected a non-empty list of (id, vector) pairs")
    ids: list[str] = []
    vectors: list[Matrix] = []
    for number, entry in enumerate(entries):
        if (not isinstance(entry, tuple) or len(entry) != 2
                or not isinstance(entry[1], np.ndarray)):
            raise click.ClickException(f"{path}: entry {number} is not an (id, numpy vector) pair")
        vector = entry[1].reshape(-1)
        if vectors and vector.shape != vectors[0].shape:
            raise click.ClickException(f"{path}: entry {number} (id {entry[0]!r}) has dim "
                                       f"{vector.shape[0]}, the shard's first has "
                                       f"{vectors[0].shape[0]}")
        ids.append(str(entry[0]))
        vectors.append(vector.astype(np.float32, copy=False))
    return ids, np.stack(vectors)


def write_dpr_shard(path: Path, ids: Sequence[str], vectors: Matrix) -> None:
    """Write a shard in DPR's format (generate_dense_embeddings.py's pickled list)."""
    with path.open("wb") as handle:
        pickle.dump([(i, np.asarray(v)) for i, v in zip(ids, vectors, strict=True)], handle)


def load_dpr_shards(paths: Sequence[Path], table: CorpusTable, embeddings: EmbeddingFile,
                    rows_path: Path) -> int:
    """Append DPR shards to EMBEDDINGS, writing the position -> corpus row table; count."""
    embeddings.reset()
    total = 0
    with rows_path.open("wb") as rows_out:
        for path in paths:
            ids, vectors = read_dpr_shard(path)
            keys = np.fromiter((id_key(i) for i in ids), dtype=np.int64, count=len(ids))
            table.rows_of(keys, str(path)).tofile(rows_out)
            try:
                embeddings.append(vectors)
            except ValueError as error:
                raise click.ClickException(f"{path}: {error}") from None
            total += len(ids)
            log.info("read %d vectors from %s (%d in all)", len(ids), path, total)
    return total


def iter_batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    """Lists of SIZE consecutive items (the last may be shorter)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
