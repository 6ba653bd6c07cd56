"""Streaming DPR: bounded-memory indexing, DPR shards, save/reload, HNSW/IVF, resuming."""

from __future__ import annotations

import os
import pickle
import random
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import click
import numpy as np
import pytest

from baselines.corpus import CorpusTable, Passage, PassageStore, id_key, iter_passages
from baselines.dpr import build_index
from baselines.passage_index import (
    EmbeddingFile,
    IndexParams,
    PassageIndex,
    numpy_top_k,
    read_dpr_shard,
    write_dpr_shard,
)

pytest.importorskip("faiss")

WORDS = [f"w{i}" for i in range(400)]
DIM = 24


def write_corpus(path: Path, n: int, words: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """A psgs_w100.tsv-like corpus of N random passages (a quoted text every 7th row)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(words))
        if i % 7 == 3:
            text = f'"{text} ""quoted"""'  # DPR's TSV quotes texts with doubled quotes
        rows.append((str(i + 1), text, f"title {rng.choice(WORDS)}"))
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id\ttext\ttitle\n")
        handle.writelines(f"{a}\t{b}\t{c}\n" for a, b, c in rows)
    return rows


PROJECTION = np.random.default_rng(7).normal(size=(256, DIM)).astype(np.float32)


def hashed_encoder(passages: Sequence[Passage]) -> np.ndarray:
    """A tiny deterministic encoder: the byte histogram of title and text, projected."""
    counts = np.stack([np.bincount(np.frombuffer(f"{p.title} {p.text}".encode(), np.uint8),
                                   minlength=256) for p in passages])
    return (counts.astype(np.float32) @ PROJECTION).astype(np.float32)


def queries(n: int, seed: int = 1) -> np.ndarray:
    """N query vectors built like passages (a few random words)."""
    rng = random.Random(seed)
    fake = [Passage("q", " ".join(rng.choice(WORDS) for _ in range(6)), "") for _ in range(n)]
    return hashed_encoder(fake)


def encoder_factory(seen: list[int] | None = None) -> Callable[[], Callable[..., np.ndarray]]:
    """An encoder factory counting the passages it encodes in SEEN."""
    def encode(batch: Sequence[Passage]) -> np.ndarray:
        if seen is not None:
            seen.append(len(batch))
        return hashed_encoder(batch)

    return lambda: encode


def test_streaming_index_is_bounded_and_exact(tmp_path: Path) -> None:
    corpus = tmp_path / "psgs.tsv"
    write_corpus(corpus, 20_000, 100)
    corpus_bytes = corpus.stat().st_size
    params = IndexParams("flat", add_chunk=2048)
    tracemalloc.start()
    try:
        index, table = build_index(corpus, tmp_path / "index", params, {"corpus": "synthetic"},
                                   encoder_factory(), batch_size=128)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the passages alone, as Python objects, take more than the file (~12 MB); streaming keeps
    # one batch (~80 kB of text) and small buffers: a generous ceiling is a quarter of the file
    assert corpus_bytes > 9_000_000
    assert peak < corpus_bytes / 4, (peak, corpus_bytes)
    assert index.ntotal == len(table) == 20_000

    # the exact in-memory computation on the same data
    passages = list(iter_passages(corpus))
    matrix = hashed_encoder(passages)
    q = queries(25)
    want_scores, want_rows = numpy_top_k(q, matrix, 10)
    got_scores, got_rows = index.search(q, 10)
    assert got_rows.tolist() == want_rows.tolist()
    assert np.allclose(got_scores, want_scores, rtol=1e-4, atol=1e-3)
    store = PassageStore(corpus, table)
    try:
        for row in (0, 3, 9_999, 19_999, int(got_rows[0, 0])):
            assert store[row] == passages[row]
    finally:
        store.close()
    assert passages[3].text.endswith('"quoted"')


@pytest.fixture()
def small(tmp_path: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    """A 600-passage corpus."""
    corpus = tmp_path / "small.tsv"
    return corpus, write_corpus(corpus, 600, 30, seed=3)


def test_dpr_shards_load_into_the_same_index(tmp_path: Path,
                                             small: tuple[Path, list[tuple[str, str, str]]],
                                             ) -> None:
    corpus, rows = small
    encoded, _ = build_index(corpus, tmp_path / "encoded", IndexParams("flat"), {"v": 1},
                             encoder_factory(), batch_size=50)
    vectors = hashed_encoder(list(iter_passages(corpus)))
    # DPR's shards: (id, vector) lists in any order, ids with or without the "wiki:" prefix
    order = list(range(len(rows)))
    random.Random(5).shuffle(order)
    shards = []
    for k, part in enumerate((order[:250], order[250:400], order[400:])):
        path = tmp_path / f"wiki_passages_{k}"
        ids = [(f"wiki:{rows[i][0]}" if k == 1 else rows[i][0]) for i in part]
        write_dpr_shard(path, ids, vectors[part])
        shards.append(path)
    loaded_ids, loaded = read_dpr_shard(shards[1])
    assert loaded_ids[0] == f"wiki:{rows[order[250]][0]}" and loaded.shape == (150, DIM)
    from_shards, _ = build_index(corpus, tmp_path / "shards", IndexParams("flat"), {"v": 1},
                                 None, shards)
    q = queries(20)
    assert from_shards.search(q, 8)[1].tolist() == encoded.search(q, 8)[1].tolist()
    assert np.allclose(from_shards.search(q, 8)[0], encoded.search(q, 8)[0], atol=1e-4)


def test_shard_with_code_or_unknown_ids_is_refused(tmp_path: Path,
                                                   small: tuple[Path, list[tuple[str, str, str]]],
                                                   ) -> None:
    corpus, _ = small
    evil = tmp_path / "evil.pkl"
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.mkdir, (str(marker),))

    evil.write_bytes(pickle.dumps([("1", Boom())]))
    with pytest.raises(click.ClickException, match="evil.pkl: not a DPR embedding shard"):
        read_dpr_shard(evil)
    assert not marker.exists()
    evil.write_bytes(pickle.dumps({"1": np.zeros(3)}))
    with pytest.raises(click.ClickException, match="evil.pkl: expected a non-empty list"):
        read_dpr_shard(evil)
    stray = tmp_path / "stray"
    write_dpr_shard(stray, ["1", "99999"], np.ones((2, DIM), dtype=np.float32))
    with pytest.raises(click.ClickException, match="stray: 1 passage ids are not in the corpus"):
        build_index(corpus, tmp_path / "idx", IndexParams("flat"), {}, None, [stray])


def test_index_reload_is_identical_and_does_not_encode(
        tmp_path: Path, small: tuple[Path, list[tuple[str, str, str]]]) -> None:
    corpus, _ = small
    q = queries(15)
    for kind in ("flat", "hnsw", "ivf", "numpy"):
        folder = tmp_path / kind
        params = IndexParams(kind, nlist=8, nprobe=8)
        built, _ = build_index(corpus, folder, params, {"v": 1}, encoder_factory(), batch_size=64)
        seen: list[int] = []
        reloaded, table = build_index(corpus, folder, params, {"v": 1}, encoder_factory(seen))
        assert seen == [] and len(table) == 600
        assert [a.tolist() for a in reloaded.search(q, 10)] == [
            a.tolist() for a in built.search(q, 10)]
        with pytest.raises(click.ClickException, match=str(folder)):
            build_index(corpus, folder, params, {"v": 2}, encoder_factory())


def test_hnsw_and_ivf_agree_with_flat(tmp_path: Path,
                                      small: tuple[Path, list[tuple[str, str, str]]]) -> None:
    corpus, _ = small
    q = queries(30)
    flat, _ = build_index(corpus, tmp_path / "flat", IndexParams("flat"), {}, encoder_factory())
    exact = flat.search(q, 10)[1]
    # IVF probing every list is exhaustive, so exact
    ivf, _ = build_index(corpus, tmp_path / "ivf", IndexParams("ivf", nlist=6, nprobe=6), {},
                         encoder_factory())
    assert ivf.search(q, 10)[1].tolist() == exact.tolist()
    hnsw, _ = build_index(corpus, tmp_path / "hnsw", IndexParams("hnsw", ef_search=200), {},
                          encoder_factory())
    found = hnsw.search(q, 10)[1]
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)])
    assert recall >= 0.9


def test_interrupted_encoding_resumes_where_it_stopped(
        tmp_path: Path, small: tuple[Path, list[tuple[str, str, str]]]) -> None:
    corpus, _ = small
    folder = tmp_path / "index"

    def failing() -> Callable[[Sequence[Passage]], np.ndarray]:
        calls = []

        def encode(batch: Sequence[Passage]) -> np.ndarray:
            calls.append(1)
            if len(calls) > 4:
                raise KeyboardInterrupt
            return hashed_encoder(batch)

        return encode

    with pytest.raises(KeyboardInterrupt):
        build_index(corpus, folder, IndexParams("flat"), {}, failing, batch_size=50)
    seen: list[int] = []
    resumed, _ = build_index(corpus, folder, IndexParams("flat"), {}, encoder_factory(seen),
                             batch_size=50)
    assert sum(seen) == 600 - 4 * 50
    whole, _ = build_index(corpus, tmp_path / "whole", IndexParams("flat"), {},
                           encoder_factory(), batch_size=50)
    q = queries(10)
    assert resumed.search(q, 10)[1].tolist() == whole.search(q, 10)[1].tolist()


def test_corpus_errors_name_file_and_row(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\ttext\ttitle\n1\tok\tt\n2\tmissing title\n", encoding="utf-8")
    with pytest.raises(click.ClickException, match=r"bad.tsv: passage row 2 .*3 columns"):
        list(iter_passages(bad))
    bad.write_bytes(b"id\ttext\ttitle\n1\tok\tt\n2\t\xff\tt\n")
    with pytest.raises(click.ClickException, match=r"bad.tsv: passage row 2 .*utf-8"):
        list(iter_passages(bad))
    bad.write_text("pid\tbody\n1\tx\n", encoding="utf-8")
    with pytest.raises(click.ClickException, match=r"bad.tsv:1: expected a header"):
        CorpusTable.build(bad, tmp_path / "t")


def test_id_keys() -> None:
    assert id_key("123") == id_key("wiki:123") == 123
    assert id_key("abc") == id_key("abc") < 0 and id_key("abc") != id_key("abd")


def test_passage_index_kinds_on_a_matrix() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(300, 8)).astype(np.float32)
    q = rng.normal(size=(5, 8)).astype(np.float32)
    rows = np.arange(300, dtype=np.int64)[::-1].copy()
    exact = numpy_top_k(q, matrix, 7)[1]
    for kind in ("flat", "numpy"):
        # positions map through ROWS (as for DPR shards in another order than the corpus)
        assert PassageIndex.build(kind, matrix, rows).search(q, 7)[1].tolist() == \
            rows[exact].tolist()


def test_embedding_file_cuts_a_torn_row_and_reads_in_blocks(tmp_path: Path) -> None:
    path = tmp_path / "e.f32"
    block = np.arange(12, dtype=np.float32).reshape(3, 4)
    EmbeddingFile(path).append(block)
    with path.open("ab") as handle:
        handle.write(b"\x00" * 5)  # a kill in the middle of the next row
    reopened = EmbeddingFile(path)
    assert reopened.rows() == 3 and path.stat().st_size == 3 * 4 * 4
    reopened.append(block[:1] + 100)
    assert [b.tolist() for b in reopened.chunks(3)] == [
        block.tolist(), [[100.0, 101.0, 102.0, 103.0]]]
    with pytest.raises(ValueError, match="dim 2"):
        reopened.append(np.zeros((1, 2)))
