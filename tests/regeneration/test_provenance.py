"""A baseline entry says what produced it: its name and description come from the run's
sidecar, and a run unlike the setup it stands for needs an organizer's confirmation and is
published with a note of how it differs."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from baselines.runners import setup_differences
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from situatedqa_server.services import baselines as svc

from .conftest import database_state, write_qa_output


def tiny_dpr(root: Path) -> dict[str, Any]:
    """The settings a DPR run on random tiny models over an 8-passage corpus records (the
    corpus written under root, as such a run reads it)."""
    corpus = root / "tiny" / "corpus.tsv"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("id\ttext\ttitle\n" + "".join(f"{i}\tpassage {i}\tTitle {i}\n"
                                                    for i in range(1, 9)))
    return {"corpus": str(corpus), "corpus_passages": 8, "top_k": 100, "read_k": 50,
            "device": "auto", "device_used": "cpu", "precision_used": "float32",
            "architectures": {"reader": {"model_type": "dpr", "hidden_size": 32,
                                         "num_hidden_layers": 2},
                              "question_encoder": {"model_type": "dpr", "hidden_size": 32,
                                                   "num_hidden_layers": 2}}}


def rewrite_sidecar(path: Path, **settings: Any) -> None:
    sidecar = path.with_name(path.name + ".meta.json")
    meta = json.loads(sidecar.read_text())
    meta["settings"] = {"setting": meta["setting"], "batch_size": 16, **settings}
    sidecar.write_text(json.dumps(meta))


def entry(app: Flask, runner: str) -> Submission:
    with app.app_context():
        found = db.session.scalars(select(Submission).where(
            Submission.baseline_runner == runner)).one()
        db.session.expunge(found)
        return found


def test_a_tiny_dpr_run_is_refused_then_published_with_its_differences(
        app: Flask, regenerate: Any, release_dir: Path, tmp_path: Path) -> None:
    path = write_qa_output(release_dir, tmp_path / "dpr.geo.dev.jsonl", "dpr", "geo")
    rewrite_sidecar(path, **tiny_dpr(tmp_path))
    before = database_state(app)
    refused = regenerate("--from-file", f"dpr:geo:dev:{path}")
    assert refused.exit_code == 1
    assert "dpr:geo:dev differs from the paper's setup" in refused.output
    assert "a corpus of 8 passages" in refused.output and "not BERT-base" in refused.output
    assert "--confirm-differences" in refused.output
    assert database_state(app) == before  # nothing published, nothing stored

    done = regenerate("--from-file", f"dpr:geo:dev:{path}", "--confirm-differences")
    assert done.exit_code == 0, done.output
    found = entry(app, "dpr")
    assert found.method_name == "DPR (query-modified, 8-passage corpus)"
    assert "over Wikipedia" not in found.description  # what it used, not what DPR is for
    assert "corpus.tsv, 8 passages" in found.description
    assert "reader reader (sha256 abababababab)" in found.description
    assert "on cpu, float32" in found.description and "code git:gpu-box-1234" in found.description
    assert "Differs from the paper's setup" in found.description
    assert found.baseline_settings["confirmed_by"] == "an organizer at the command line"
    page = app.test_client().get(f"/submissions/{found.id}").get_data(as_text=True)
    assert 'id="setup-differs"' in page and "a corpus of 8 passages" in page


def test_nn_train_with_tfidf_says_tfidf(app: Flask, regenerate: Any, release_dir: Path,
                                        tmp_path: Path) -> None:
    path = write_qa_output(release_dir, tmp_path / "nn.temp.dev.jsonl", "nn-train", "temp")
    rewrite_sidecar(path, embedder="tfidf", model=None, similarity="cosine", device="cpu")
    refused = regenerate("--from-file", f"nn-train:temp:dev:{path}")
    assert refused.exit_code == 1
    assert "questions embedded with TF-IDF, not MiniLM-L6" in refused.output
    assert regenerate("--from-file", f"nn-train:temp:dev:{path}",
                      "--confirm-differences").exit_code == 0
    found = entry(app, "nn-train")
    assert found.method_name == "Nearest training question (query-modified, TF-IDF)"
    assert "TF-IDF" in found.description and "MiniLM cosine" not in found.description


def test_a_paper_setup_run_needs_no_confirmation(app: Flask, regenerate: Any,
                                                 release_dir: Path, tmp_path: Path) -> None:
    path = write_qa_output(release_dir, tmp_path / "dpr.geo.dev.jsonl", "dpr", "geo")
    assert regenerate("--from-file", f"dpr:geo:dev:{path}").exit_code == 0
    found = entry(app, "dpr")
    assert found.method_name == "DPR (query-modified)"
    assert "21,015,324 passages" in found.description and "on cuda:0, float32" in found.description
    assert found.baseline_settings["differences"] == []


def test_the_committed_reference_runs_match_their_setup() -> None:
    sidecars = sorted(svc.REFERENCE_DIR.glob("*.meta.json"))
    quick = [s for s in sidecars if json.loads(s.read_text())["runner"] in svc.QUICK_RUNNERS]
    assert len(quick) == 16
    for sidecar in sidecars:
        meta = json.loads(sidecar.read_text())
        assert not meta["code_version"].endswith("-dirty"), sidecar.name  # from a clean tree
        assert setup_differences(meta["runner"], meta) == [], sidecar.name


@pytest.mark.parametrize(("runner", "meta", "expected"), [
    ("id-tfidf", {"settings": {"limit": 5}, "code_version": "git:abc"},
     ["only the first 5 questions were run"]),
    ("bart", {"settings": {"architectures": {"model": {"d_model": 32, "encoder_layers": 1,
                                                        "decoder_layers": 1}}},
              "code_version": "git:abc-dirty"},
     ["the model is not BART-large (d_model 32, encoder_layers 1, decoder_layers 1)"]),
    ("nn-train", {"setting": "unmodified", "settings": {"embedder": "minilm"},
                  "fingerprints": {"embedder_model": {"sha256": "00"}}},
     ["an embedding model other than the packaged all-MiniLM-L6-v2",
      "unmodified questions, not query-modified"]),
])
def test_differences_by_hand(runner: str, meta: dict[str, Any], expected: list[str]) -> None:
    assert setup_differences(runner, meta) == expected


def test_the_admin_upload_needs_the_confirmation_box(app: Flask, release_dir: Path,
                                                     tmp_path: Path) -> None:
    from .test_admin_jobs import csrf_token, organizer

    client = organizer(app)
    output = write_qa_output(release_dir, tmp_path / "bart.geo.dev.jsonl", "bart", "geo")
    rewrite_sidecar(output, architectures={"model": {"d_model": 32, "encoder_layers": 1,
                                                     "decoder_layers": 1}}, device="cpu",
                    precision="float32")
    sidecar = output.with_name(output.name + ".meta.json").read_bytes()

    def post(**extra: str) -> str:
        return client.post("/admin/jobs/regenerate-from-file", data={
            "csrf_token": csrf_token(client, "/admin/jobs"), **extra,
            "file": (io.BytesIO(output.read_bytes()), output.name),
            "sidecar": (io.BytesIO(sidecar), output.name + ".meta.json")},
            content_type="multipart/form-data", follow_redirects=True).get_data(as_text=True)

    before = database_state(app)
    refused = html.unescape(post())
    assert "bart:geo:dev differs from the paper's setup: the model is not BART-large" in refused
    assert database_state(app) == before  # no job, no stored file
    assert "from an uploaded run" in post(confirm_differences="y")
    found = entry(app, "bart")
    assert found.baseline_settings["confirmed_by"] == "boss"  # the organizer logged in
    assert found.method_name == "BART (query-modified)"
    assert "the model is not BART-large" in found.description
