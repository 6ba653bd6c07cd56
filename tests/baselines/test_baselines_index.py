"""Retrieval index: faiss flat / HNSW and the numpy fallback agree; saving and reloading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from baselines_helpers import dpr_args, invoke, read

from baselines.corpus import iter_passages
from baselines.passage_index import PassageIndex, numpy_top_k

pytest.importorskip("faiss")
pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_numpy_top_k_matches_faiss_flat() -> None:
    rng = np.random.default_rng(0)
    passages = rng.normal(size=(50, 8)).astype(np.float32)
    queries = rng.normal(size=(4, 8)).astype(np.float32)
    n_scores, n_idx = numpy_top_k(queries, passages, 10)
    f_scores, f_idx = PassageIndex.build("flat", passages).search(queries, 10)
    _h_scores, h_idx = PassageIndex.build("hnsw", passages).search(queries, 10)
    assert (n_idx == f_idx).all() and np.allclose(n_scores, f_scores, atol=1e-5)
    assert (h_idx == f_idx).all()
    assert numpy_top_k(queries, passages, 100)[1].shape == (4, 50)


def test_numpy_top_k_breaks_ties_by_corpus_order() -> None:
    passages = np.ones((5, 2), dtype=np.float32)
    assert numpy_top_k(np.ones((1, 2), dtype=np.float32), passages, 3)[1].tolist() == [[0, 1, 2]]


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf", "numpy"])
def test_index_saved_and_reloaded(tmp_path: Path, release_dir: Path,
                                  dpr_models: dict[str, Path], corpus: Path, kind: str) -> None:
    index_dir = tmp_path / "index"
    outputs = []
    for attempt in range(2):
        out = tmp_path / f"pred{attempt}.jsonl"
        invoke("run", "dpr", "--track", "present", "--data", release_dir, "-o", out,
               "--index", kind, "--index-path", index_dir, *dpr_args(dpr_models, corpus))
        outputs.append(read(out))
    assert (index_dir / "index.json").is_file()
    assert outputs[0] == outputs[1]


def test_index_of_another_corpus_is_refused(tmp_path: Path, release_dir: Path,
                                            dpr_models: dict[str, Path], corpus: Path) -> None:
    from click.testing import CliRunner

    from baselines.cli import main

    index_dir = tmp_path / "index"
    invoke("run", "dpr", "--track", "present", "--data", release_dir, "-o", tmp_path / "a.jsonl",
           "--index", "numpy", "--index-path", index_dir, *dpr_args(dpr_models, corpus))
    other = tmp_path / "other.tsv"
    other.write_text(corpus.read_text() + "99\textra passage\textra\n")
    args = dpr_args(dpr_models, other)
    result = CliRunner().invoke(main, [str(a) for a in (
        "run", "dpr", "--track", "present", "--data", release_dir, "-o", tmp_path / "b.jsonl",
        "--index", "numpy", "--index-path", index_dir, *args)])
    assert result.exit_code != 0 and str(index_dir) in result.output


def test_corpus_reader(corpus: Path) -> None:
    passages = list(iter_passages(corpus))
    assert len(passages) == 8
    assert passages[0].id == "1" and passages[0].title == "president"
