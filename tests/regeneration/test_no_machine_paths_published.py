"""The reference entries as the quick start loads them, and a researcher's upload of a
committed reference file, publish no path of the machine that made them: not in the API's
answers, the exports or the pages."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import select

from benchmark import TRACKS, GoldSet
from situatedqa_server.extensions import db
from situatedqa_server.models import Submission
from situatedqa_server.services.baselines import REFERENCE_DIR
from tests.packaging.test_no_machine_paths import MACHINE_PATH
from tests.server.conftest import api_upload, new_token, register

from .conftest import write_qa_output
from .test_provenance import entry


def test_reference_entries_publish_no_machine_path(app: Flask, runner: Any,
                                                   release_gold: GoldSet) -> None:
    # A researcher uploads the committed SmolLM2 samples file as it is (before the
    # baselines are loaded: it is then nobody's duplicate), then the quick start's entries.
    browser = app.test_client()
    register(browser, "dana")
    samples = gzip.decompress((REFERENCE_DIR / "smollm2-5shot.geo.dev.jsonl.gz").read_bytes())
    uploaded = api_upload(browser, new_token(browser), release_gold.get("geo", "dev"), samples,
                          public="true")
    assert uploaded.status_code == 201, uploaded.get_json()
    assert uploaded.get_json()["harness"]["model"].startswith("SmolLM2-135M-Instruct")
    assert not MACHINE_PATH.search(uploaded.get_data(as_text=True)), uploaded.get_json()
    done = runner.invoke(args=["baselines", "regenerate", "--quick"])
    assert done.exit_code == 0, done.output
    with app.app_context():
        entries = db.session.execute(select(Submission.id, Submission.baseline_runner).where(
            Submission.is_baseline.is_(True))).all()
    assert {runner for _, runner in entries} >= {"smollm2-0shot", "smollm2-5shot", "nn-train",
                                                "id-tfidf", "id-random"}
    client = app.test_client()
    urls = [f"/api/v1/leaderboards/{track}?split={split}" for track in TRACKS
            for split in ("dev", "test")]
    for submission_id in [uploaded.get_json()["id"], *(found for found, _ in entries)]:
        urls += [f"/api/v1/submissions/{submission_id}", f"/submissions/{submission_id}",
                 f"/api/v1/submissions/{submission_id}/every_eval_ever.json",
                 f"/api/v1/submissions/{submission_id}/eval_results.yaml",
                 f"/api/v1/submissions/{submission_id}/model-index.yaml"]
    found = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        if match := MACHINE_PATH.search(response.get_data(as_text=True)):
            found[url] = match.group(0)
    assert not found, found


def test_a_kept_entry_s_record_follows_its_sidecar(app: Flask, regenerate: Any,
                                                   release_dir: Path, tmp_path: Path) -> None:
    """An entry loaded from a sidecar that named its checkpoint by path (recorded by the
    path's last component), regenerated from the same file with the sidecar in the runners'
    present form: kept (same id), its record now the new one."""
    path = write_qa_output(release_dir, tmp_path / "dpr.geo.dev.jsonl", "dpr", "geo")
    sidecar = path.with_name(path.name + ".meta.json")
    meta = json.loads(sidecar.read_text())
    meta["fingerprints"]["reader"] = {"path": "/" + "home/dana/ckpt/reader", "sha256": "ab" * 32}
    sidecar.write_text(json.dumps(meta))
    assert regenerate("--from-file", f"dpr:geo:dev:{path}").exit_code == 0
    first = entry(app, "dpr")
    assert first.baseline_settings["fingerprints"]["reader"]["path"] == "reader"
    meta["fingerprints"]["reader"] = {"name": "reader", "sha256": "ab" * 32}
    sidecar.write_text(json.dumps(meta))
    done = regenerate("--from-file", f"dpr:geo:dev:{path}")
    assert done.exit_code == 0, done.output
    kept = entry(app, "dpr")
    assert kept.id == first.id
    assert kept.baseline_settings["fingerprints"]["reader"] == {"name": "reader",
                                                                "sha256": "ab" * 32}
