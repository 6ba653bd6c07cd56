"""End-to-end runner tests on tiny random models and a synthetic release."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("faiss")

from baselines_helpers import EXPECTED_FIELDS, SETTINGS, dpr_args, expected_count, invoke, read

from baselines import bart
from baselines.release import load_qa_items


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_dpr_end_to_end(tmp_path: Path, release_dir: Path, dpr_models: dict[str, Path],
                        corpus: Path, track: str, setting: str) -> None:
    out = tmp_path / "pred.jsonl"
    invoke("run", "dpr", "--track", track, "--setting", setting, "--data", release_dir,
           "-o", out, "--batch-size", 2, "--index", "numpy", *dpr_args(dpr_models, corpus))
    records = read(out)
    assert len(records) == expected_count(track)
    assert all(set(r) == EXPECTED_FIELDS[track] for r in records)
    assert all(isinstance(r["pred_answer"], str) for r in records)
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["runner"] == "dpr" and meta["setting"] == setting
    assert meta["fingerprints"]["corpus"]["sha256"]


@pytest.fixture(scope="module")
def varied_bart(tmp_path_factory: pytest.TempPathFactory, bart_models: dict[str, Path]) -> Path:
    """The tiny BART with large random weights: its answers differ from question to question."""
    import torch
    import transformers

    folder = tmp_path_factory.mktemp("varied") / "model"
    config = transformers.BartConfig.from_pretrained(str(bart_models["model"]))
    config.init_std = 1.0
    torch.manual_seed(0)
    transformers.BartForConditionalGeneration(config).save_pretrained(str(folder))
    transformers.AutoTokenizer.from_pretrained(str(bart_models["model"])).save_pretrained(
        str(folder))
    return folder


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_bart_end_to_end(tmp_path: Path, release_dir: Path, varied_bart: Path,
                         track: str, setting: str) -> None:
    out = tmp_path / "pred.jsonl"
    invoke("run", "bart", "--track", track, "--setting", setting, "--data", release_dir,
           "-o", out, "--batch-size", 4, "--model", varied_bart)
    records = read(out)
    items = load_qa_items(release_dir, track, "test", setting)
    # each record is its item's release record plus what the model generates for the
    # item's query of this setting (generated here independently, one question at a time)
    model, tok = bart.load_bart(bart.resolve_source(varied_bart, None, None))
    expected = [bart.generate(model, tok, [item.query])[0] for item in items]
    assert len({*expected}) > 1 and all(expected)  # the check can tell answers apart
    assert records == [{**item.record, "pred_answer": answer}
                       for item, answer in zip(items, expected, strict=True)]
    if setting != "unmodified" and track == "geo":  # short enough to differ within 32 ids
        plain = [bart.generate(model, tok, [item.query])[0] for item in
                 load_qa_items(release_dir, track, "test", "unmodified")]
        assert [r["pred_answer"] for r in records] != plain
    meta = json.loads((tmp_path / "pred.jsonl.meta.json").read_text())
    assert meta["setting"] == setting and meta["fingerprints"]["model"]["files"]
    assert meta["settings"]["preprocessing"] == bart.PREPROCESSING
    assert meta["settings"]["device"] == "cpu"


REAL = os.environ.get("SITUATEDQA_DATA")
HAVE_RELEASE = bool(REAL) and (Path(REAL or ".") / "qa_data").is_dir()


@pytest.mark.skipif(not HAVE_RELEASE, reason="SITUATEDQA_DATA is not a release folder here")
@pytest.mark.parametrize("track", ["temp", "geo", "present", "curprev"])
def test_bart_on_real_data_keeps_release_records(tmp_path: Path, bart_models: dict[str, Path],
                                                 track: str) -> None:
    out = tmp_path / "pred.jsonl"
    invoke("run", "bart", "--track", track, "--setting", "query-modified", "-o", out,
           "--batch-size", 4, "--limit", 6, "--model", bart_models["model"])
    records = read(out)
    assert len(records) == 6 and all(set(r) == EXPECTED_FIELDS[track] for r in records)
    if track in ("temp", "geo"):
        release = Path(REAL or "") / "qa_data" / f"{track}.test.jsonl"
        rows = [json.loads(line) for line in release.read_text().splitlines()[:6]]
        for record, row in zip(records, rows, strict=True):
            assert {k: v for k, v in record.items() if k != "pred_answer"} == {
                k: row[k] for k in EXPECTED_FIELDS[track] - {"pred_answer"}}
