"""DPR with controlled encoders and reader (known passage, known span), devices, CLI options."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import numpy as np
import pytest
from baselines_helpers import dpr_args, invoke, read
from click.testing import CliRunner

from baselines import devices
from baselines.cli import main
from baselines.corpus import PassageStore, iter_passages
from baselines.dpr import DPRPipeline, DPRRunConfig, build_index, encode_passages, encode_questions
from baselines.passage_index import IndexParams, write_dpr_shard
from baselines.release import QAItem

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("faiss")


class BagOfWords(torch.nn.Module):  # type: ignore[misc]
    """An encoder whose vector counts each vocabulary word (special tokens count 0)."""

    def __init__(self, vocab_size: int, special: list[int]) -> None:
        super().__init__()
        weight = torch.eye(vocab_size)
        weight[special] = 0
        self.embed = torch.nn.Embedding.from_pretrained(weight)

    def forward(self, input_ids: Any, attention_mask: Any, **_: Any) -> SimpleNamespace:
        vectors = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        return SimpleNamespace(pooler_output=vectors.sum(1))


class SpanReader(torch.nn.Module):  # type: ignore[misc]
    """A reader: relevance = occurrences of one word, start/end logits on two other words."""

    def __init__(self, relevant: int, start: int, end: int) -> None:
        super().__init__()
        self.relevant, self.start, self.end = relevant, start, end

    def forward(self, input_ids: Any, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(
            relevance_logits=(input_ids == self.relevant).float().sum(1),
            start_logits=(input_ids == self.start).float() * 5,
            end_logits=(input_ids == self.end).float() * 5)


@pytest.fixture()
def pipeline(tmp_path: Path, dpr_models: dict[str, Path], corpus: Path) -> DPRPipeline:
    """A DPR pipeline over the 8-passage corpus with bag-of-words encoders and a span reader."""
    q_tok = transformers.DPRQuestionEncoderTokenizer.from_pretrained(
        str(dpr_models["question_encoder"]))
    ctx_tok = transformers.DPRContextEncoderTokenizer.from_pretrained(
        str(dpr_models["ctx_encoder"]))
    reader_tok = transformers.DPRReaderTokenizer.from_pretrained(str(dpr_models["reader"]))
    special = [q_tok.convert_tokens_to_ids(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]")]
    encoder = BagOfWords(len(q_tok), special)
    ids = {w: reader_tok.convert_tokens_to_ids(w) for w in ("rupee", "india")}
    reader = SpanReader(relevant=ids["rupee"], start=ids["india"], end=ids["rupee"])
    cfg = DPRRunConfig(question_encoder=dpr_models["question_encoder"], ctx_encoder=None,
                       reader=dpr_models["reader"], corpus=corpus, top_k=3, read_k=3,
                       reader_batch_size=2)
    index, table = build_index(
        corpus, tmp_path / "index", IndexParams("flat"), {"encoder": "bag of words"},
        lambda: lambda batch: encode_passages(encoder, ctx_tok, batch), batch_size=3)
    return DPRPipeline(cfg, PassageStore(corpus, table), index, encoder, q_tok, reader,
                       reader_tok, devices.resolve("cpu"))


QUERY = "who is the prime minister of india"


def test_retrieval_returns_the_known_passage(pipeline: DPRPipeline) -> None:
    # word overlaps with the query (who is the prime minister of india), title included:
    # row 2 "modi is the prime minister of india" (title india) 7; rows 0 and 4 five each
    assert pipeline.retrieve([QUERY]) == [[2, 0, 4]]
    vector = encode_questions(pipeline.q_model, pipeline.q_tok, [QUERY])
    scores, rows = pipeline.index.search(vector, 8)
    assert rows.tolist() == [[2, 0, 4, 7, 1, 3, 6, 5]]
    assert scores.tolist() == [[7, 5, 5, 4, 3, 3, 2, 1]]
    assert pipeline.passages[2].text == "modi is the prime minister of india"


def test_reader_returns_the_known_span(pipeline: DPRPipeline) -> None:
    # the reader prefers the third retrieved passage ("the currency of india is the rupee")
    # and its span india..rupee; "india" of the question is not part of the passage
    assert pipeline.read(QUERY, [2, 0, 4]) == "india is the rupee"
    assert pipeline.predict([QAItem((1,), {}, QUERY)]) == ["india is the rupee"]
    # a passage outside the first read_k is not read
    assert pipeline.read(QUERY, [2, 0, 1, 4]) != "india is the rupee"


def test_device_resolution() -> None:
    assert devices.resolve_device("auto", cuda_available=False).type == "cpu"
    assert devices.resolve_device("auto", cuda_available=True).type == "cuda"
    assert devices.resolve_device("cpu", cuda_available=True).type == "cpu"
    with pytest.raises(click.BadParameter, match="--device cuda was asked for"):
        devices.resolve_device("cuda", cuda_available=False)
    cuda = torch.device("cuda")
    assert devices.resolve_dtype(cuda, "auto", bf16_supported=True) == torch.bfloat16
    assert devices.resolve_dtype(cuda, "auto", bf16_supported=False) == torch.float16
    assert devices.resolve_dtype(cuda, "fp32") == torch.float32
    assert devices.resolve_dtype(torch.device("cpu"), "auto") == torch.float32
    with pytest.raises(click.BadParameter, match="needs a CUDA device"):
        devices.resolve_dtype(torch.device("cpu"), "bf16")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this checks a machine without CUDA")
def test_auto_is_cpu_here_and_cuda_is_a_clear_error(
        tmp_path: Path, release_dir: Path, dpr_models: dict[str, Path], corpus: Path) -> None:
    placement = devices.resolve("auto")
    assert (placement.device.type, placement.dtype) == ("cpu", torch.float32)
    moved = placement.tensors({"input_ids": torch.ones(2, dtype=torch.long), "n": 3})
    assert moved["input_ids"].device.type == "cpu" and moved["n"] == 3
    result = CliRunner().invoke(main, [str(a) for a in (
        "run", "dpr", "--track", "present", "--data", release_dir, "-o", tmp_path / "p.jsonl",
        "--device", "cuda", *dpr_args(dpr_models, corpus))])
    assert result.exit_code == 2
    assert "--device cuda was asked for but torch sees no CUDA device" in result.output
    assert not (tmp_path / "p.jsonl").exists()


def test_cli_with_dpr_shards_and_reader_batches(tmp_path: Path, release_dir: Path,
                                                dpr_models: dict[str, Path],
                                                corpus: Path) -> None:
    common = ["run", "dpr", "--track", "temp", "--data", release_dir, "--device", "auto",
              "--index", "numpy"]
    encoded = tmp_path / "encoded.jsonl"
    invoke(*common, "-o", encoded, "--encode-batch-size", 3, *dpr_args(dpr_models, corpus))
    # the same passage vectors as DPR shards (in two files, second in reverse order)
    ctx = transformers.DPRContextEncoder.from_pretrained(str(dpr_models["ctx_encoder"]))
    ctx_tok = transformers.DPRContextEncoderTokenizer.from_pretrained(
        str(dpr_models["ctx_encoder"]))
    passages = list(iter_passages(corpus))
    vectors = encode_passages(ctx.eval(), ctx_tok, passages)
    write_dpr_shard(tmp_path / "emb_0", [p.id for p in passages[:5]], vectors[:5])
    write_dpr_shard(tmp_path / "emb_1", [f"wiki:{p.id}" for p in passages[5:]][::-1],
                    vectors[5:][::-1])
    from_shards = tmp_path / "shards.jsonl"
    args = list(dpr_args(dpr_models, corpus))
    at = args.index("--ctx-encoder")
    del args[at:at + 2]
    invoke(*common, "-o", from_shards, "--reader-batch-size", 1,
           "--passage-embeddings", tmp_path / "emb_*", *args)
    assert read(from_shards) == read(encoded)
    assert len(read(encoded)) == 9
    meta = json.loads((tmp_path / "shards.jsonl.meta.json").read_text())
    assert meta["settings"]["reader_batch_size"] == 1 and meta["settings"]["device"] == "auto"
    assert [p["name"] for p in meta["fingerprints"]["passage_embeddings"]] == [
        "emb_0", "emb_1"]
    assert np.isfinite(vectors).all()
