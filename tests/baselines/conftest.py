"""Fixtures for the baselines tests: a tiny synthetic release, corpus and random tiny models.

Nothing is downloaded: models are built from configs (HF_HUB_OFFLINE=1).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

# the test modules share baselines_helpers.py; with --import-mode=importlib the test folder
# is not on sys.path, so put it there
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REAL_DATA = os.environ.get("SITUATEDQA_DATA")

WORDS = [
    "who", "what", "when", "where", "is", "was", "the", "president", "prime", "minister", "of",
    "india", "usa", "france", "in", "as", "2018", "2019", "2020", "2021", "paris", "london",
    "capital", "city", "olympics", "held", "previously", "current", "team", "won", "world", "cup",
    "last", "time", "chancellor", "germany", "modi", "trump", "biden", "macron", "merkel",
    "scholz", "tokyo", "beijing", "rio", "currency", "dollar", "euro", "rupee", "value", "how",
    "many", "episodes", "season", "crown",
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write rows as JSON Lines, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def temp_rows(offset: int) -> list[dict[str, Any]]:
    """qa_data temp rows: repeated ids with different dates / date types."""
    rows = []
    for i, (q, a_old, a_new) in enumerate([
        ("who is the president of the usa", "trump", "biden"),
        ("who is the prime minister of india", "modi", "modi"),
        ("who is the chancellor of germany", "merkel", "scholz"),
    ]):
        qid = offset + i
        for date, date_type, ans in (("2018", "sampled_year", a_old), ("2021", "start", a_new),
                                     ("2019", "orig", a_old)):
            rows.append({"question": q, "id": qid, "edited_question": f"{q} as of {date}",
                         "date": date, "date_type": date_type, "answer": [ans],
                         "any_answer": [a_old, a_new]})
    return rows


def geo_rows(offset: int) -> list[dict[str, Any]]:
    """qa_data geo rows, with locations whose case differs."""
    rows = []
    for i, (q, pairs) in enumerate([
        ("what is the currency", [("India", "rupee"), ("france", "euro"), ("USA", "dollar")]),
        ("what is the capital city", [("France", "paris"), ("india", "new delhi")]),
    ]):
        for loc, ans in pairs:
            rows.append({"question": q, "id": offset + i, "location": loc,
                         "edited_question": f"{q} in {loc.lower()}", "answer": [ans],
                         "any_answer": [a for _, a in pairs]})
    return rows


def raw_temp_rows(offset: int) -> list[dict[str, Any]]:
    """raw_data temp rows: dependent with timelines, and an independent one."""
    return [
        {"question": "who is the president of the usa", "id": offset, "is_dependent": True,
         "nq_answers": ["trump"], "cur_answers": ["biden"], "prev_answers": ["trump"],
         "timelines": [{"cur_answers": ["biden"], "cur_start": {"year": 2021, "month": 1,
                                                               "date": 20},
                        "prev_answers": ["trump"], "prev_start": {"year": 2017}}],
         "context_answer_pairs": []},
        {"question": "who won the last world cup", "id": offset + 1, "is_dependent": True,
         "nq_answers": ["france"], "cur_answers": ["france"], "prev_answers": [],
         "timelines": [{"cur_answers": ["france"], "cur_start": {"year": 2018},
                        "prev_answers": [], "prev_start": None}],
         "context_answer_pairs": []},
        {"question": "what is the capital city of france", "id": offset + 2,
         "is_dependent": False, "nq_answers": ["paris"], "cur_answers": ["paris"],
         "prev_answers": None, "timelines": None, "context_answer_pairs": []},
        {"question": "who is the prime minister of india", "id": offset + 3, "is_dependent": True,
         "nq_answers": ["modi"], "cur_answers": ["modi"], "prev_answers": ["manmohan"],
         "timelines": [{"cur_answers": ["modi"], "cur_start": None}],
         "context_answer_pairs": []},
    ]


def id_rows(offset: int, n: int, with_source: bool) -> list[dict[str, Any]]:
    """id_data rows with alternating yes/no labels on distinguishable questions."""
    rows = []
    for i in range(n):
        dependent = i % 2 == 0
        q = ("who is the current president of " if dependent else "what is the capital of ") + \
            (["india", "usa", "france", "germany"][i % 4])
        row: dict[str, Any] = {"question": q, "id": offset + i,
                               "is_dependent": "yes" if dependent else "no"}
        if with_source:
            row["source_dataset"] = "nq_table.open"
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny synthetic release with the real layout and fields."""
    root = tmp_path_factory.mktemp("release")
    for k, split in enumerate(("train", "dev", "test")):
        base = 1000 * (k + 1)
        write_jsonl(root / "qa_data" / f"temp.{split}.jsonl", temp_rows(base))
        write_jsonl(root / "qa_data" / f"geo.{split}.jsonl", geo_rows(base))
        write_jsonl(root / "raw_data" / f"temp.{split}.jsonl", raw_temp_rows(base))
        write_jsonl(root / "id_data" / f"temp.{split}.jsonl", id_rows(base, 12, True))
        write_jsonl(root / "id_data" / f"geo.{split}.jsonl", id_rows(base, 8, False))
    return root


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny corpus in psgs_w100.tsv format."""
    path = tmp_path_factory.mktemp("corpus") / "psgs.tsv"
    rows = [
        ("1", "biden is the president of the usa as of 2021", "president"),
        ("2", "trump was the president of the usa in 2018", "president"),
        ("3", "modi is the prime minister of india", "india"),
        ("4", "paris is the capital city of france", "france"),
        ("5", "the currency of india is the rupee", "currency"),
        ("6", "france won the world cup in 2018", "world cup"),
        ("7", "merkel was chancellor of germany and scholz is chancellor", "germany"),
        ("8", "the euro is the currency of france", "euro"),
    ]
    path.write_text("id\ttext\ttitle\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows),
                    encoding="utf-8")
    return path


def write_bert_vocab(folder: Path) -> Path:
    """Write a WordPiece vocab.txt with the special tokens first."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vocab.txt"
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##d", "new", "delhi",
              "manmohan", "."]
    path.write_text("\n".join(dict.fromkeys(tokens)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def dpr_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny random DPR question encoder, context encoder and reader with tokenizers."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torch

    root = tmp_path_factory.mktemp("dpr")
    vocab = write_bert_vocab(root / "vocab")
    folders = {}
    for name, model_cls, tok_cls in (
        ("question_encoder", "DPRQuestionEncoder", "DPRQuestionEncoderTokenizer"),
        ("ctx_encoder", "DPRContextEncoder", "DPRContextEncoderTokenizer"),
        ("reader", "DPRReader", "DPRReaderTokenizer"),
    ):
        torch.manual_seed(len(name))
        tok = getattr(transformers, tok_cls)(str(vocab))
        cfg = transformers.DPRConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=37,
                                     max_position_embeddings=128)
        model = getattr(transformers, model_cls)(cfg)
        folder = root / name
        model.save_pretrained(str(folder))
        tok.save_pretrained(str(folder))
        folders[name] = folder
    return folders


@pytest.fixture(scope="session")
def bart_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny random BART folder, plus the same weights as a raw .pt state dict + config."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers.pre_tokenizers import ByteLevel

    root = tmp_path_factory.mktemp("bart")
    tok_dir = root / "tok"
    tok_dir.mkdir()
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for ch in sorted(ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
    vocab["<mask>"] = len(vocab)
    (tok_dir / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tok_dir / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    tok = transformers.BartTokenizer(str(tok_dir / "vocab.json"), str(tok_dir / "merges.txt"))
    torch.manual_seed(0)
    cfg = transformers.BartConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=0, forced_eos_token_id=2)
    model = transformers.BartForConditionalGeneration(cfg)
    folder = root / "model"
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    config_dir = root / "config"
    cfg.save_pretrained(str(config_dir))
    tok.save_pretrained(str(config_dir))
    state = {"module." + k: v for k, v in model.state_dict().items()}
    state["module.unexpected.weight"] = torch.zeros(1)
    pt = root / "bart.pt"
    torch.save(state, str(pt))
    return {"model": folder, "config": config_dir, "pt": pt}


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT folder usable as --init for the id-minilm runner."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("bert")
    vocab = write_bert_vocab(root)
    tok = transformers.BertTokenizer(str(vocab))
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                                  num_attention_heads=2, intermediate_size=37,
                                  max_position_embeddings=64)
    transformers.BertModel(cfg).save_pretrained(str(root))
    tok.save_pretrained(str(root))
    return root
