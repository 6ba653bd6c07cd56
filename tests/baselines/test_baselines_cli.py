"""User errors produce clear click messages naming the offending path or option."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from baselines.cli import main


def run_cli(*args: object) -> tuple[int, str]:
    """Invoke the CLI and return (exit code, output)."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def test_help_lists_runners() -> None:
    code, output = run_cli("run", "--help")
    assert code == 0 and "id-minilm" in output and "--index-path" in output


def test_missing_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SITUATEDQA_DATA", raising=False)
    code, output = run_cli("run", "id-random", "--track", "temp-id", "-o", tmp_path / "o.jsonl")
    assert code == 2 and "SITUATEDQA_DATA" in output
    missing = tmp_path / "nowhere"
    code, output = run_cli("run", "id-random", "--track", "temp-id", "--data", missing,
                           "-o", tmp_path / "o.jsonl")
    assert code == 2 and str(missing) in output


def test_missing_checkpoint_and_corpus_are_named(tmp_path: Path, release_dir: Path,
                                                 dpr_models: dict[str, Path],
                                                 corpus: Path) -> None:
    missing = tmp_path / "no-reader"
    code, output = run_cli("run", "dpr", "--track", "temp", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl", "--question-encoder",
                           dpr_models["question_encoder"], "--ctx-encoder",
                           dpr_models["ctx_encoder"], "--reader", missing, "--corpus", corpus)
    assert code == 2 and str(missing) in output and "--reader" in output
    no_corpus = tmp_path / "psgs.tsv"
    code, output = run_cli("run", "dpr", "--track", "temp", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl", "--question-encoder",
                           dpr_models["question_encoder"], "--ctx-encoder",
                           dpr_models["ctx_encoder"], "--reader", dpr_models["reader"],
                           "--corpus", no_corpus)
    assert code == 2 and str(no_corpus) in output


def test_bart_state_dict_needs_config(tmp_path: Path, release_dir: Path,
                                      bart_models: dict[str, Path]) -> None:
    code, output = run_cli("run", "bart", "--track", "geo", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl", "--model", bart_models["pt"])
    assert code == 2 and "--config" in output
    code, output = run_cli("run", "bart", "--track", "geo", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl", "--model", tmp_path / "absent")
    assert code == 2 and str(tmp_path / "absent") in output


def test_runner_and_track_must_match(tmp_path: Path, release_dir: Path) -> None:
    code, output = run_cli("run", "id-tfidf", "--track", "temp", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl")
    assert code == 2 and "temp-id" in output
    code, output = run_cli("run", "bart", "--track", "geo-id", "--data", release_dir, "-o",
                           tmp_path / "o.jsonl")
    assert code == 2 and "QA track" in output


def test_missing_release_file(tmp_path: Path) -> None:
    (tmp_path / "qa_data").mkdir()
    code, output = run_cli("run", "id-random", "--track", "geo-id", "--data", tmp_path, "-o",
                           tmp_path / "o.jsonl")
    assert code == 1 and ("geo.train.jsonl" in output or "geo.test.jsonl" in output)


def test_setting_is_refused_for_identification(tmp_path: Path, release_dir: Path) -> None:
    code, output = run_cli("run", "id-random", "--track", "temp-id", "--setting",
                           "query-modified", "--data", release_dir, "-o", tmp_path / "o.jsonl")
    assert code == 2 and "--setting" in output


def test_resuming_an_output_of_another_track_is_refused(
        tmp_path: Path, release_dir: Path, bart_models: dict[str, Path]) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text('{"id": 1, "question": "q", "location": "x", "pred_answer": "y"}\n')
    code, output = run_cli("run", "bart", "--track", "temp", "--data", release_dir, "-o", out,
                           "--model", bart_models["model"])
    assert code == 1 and "cannot resume" in output and str(out) in output
    out.write_text('{"id": 1, "label": true}\nnot json\n')
    code, output = run_cli("run", "id-random", "--track", "temp-id", "--data", release_dir,
                           "-o", out)
    assert code == 1 and "cannot resume" in output
