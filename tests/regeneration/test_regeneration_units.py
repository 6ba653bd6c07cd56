"""The pure parts of regeneration: keys, plans, sidecars, the paper's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baselines.cli import RUNNERS as CLI_RUNNERS
from baselines.reported import load_reported
from situatedqa_server.services import baselines as svc
from situatedqa_server.services.baselines import BaselineError, BaselineKey


def test_runners_match_the_baselines_package() -> None:
    assert set(svc.RUNNERS) == set(CLI_RUNNERS)


def test_parse_spec_keeps_colons_in_the_path() -> None:
    key, path = svc.parse_spec("dpr:geo:test:/mnt/gpu:1/out.jsonl")
    assert key == BaselineKey("dpr", "geo", "test") and path == Path("/mnt/gpu:1/out.jsonl")


@pytest.mark.parametrize(("spec", "message"), [
    ("dpr:geo:test", "RUNNER:TRACK:SPLIT:PATH"),
    ("gpt:geo:test:x.jsonl", "unknown runner 'gpt'"),
    ("dpr:temp-id:test:x.jsonl", "does not answer track 'temp-id'"),
    ("id-random:temp-id:final:x.jsonl", "unknown split 'final'"),
])
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(BaselineError, match=message):
        svc.parse_spec(spec)


def test_default_plan() -> None:
    keys = svc.default_plan()
    assert {k.runner for k in keys} == {"id-random", "id-tfidf", "nn-train"} and len(keys) == 16
    assert {(k.track, k.split) for k in keys if k.runner == "id-tfidf"} == {
        (t, s) for t in ("temp-id", "geo-id") for s in ("dev", "test")}
    # nn-train answers every QA track, not the identification ones
    assert {(k.track, k.split) for k in keys if k.runner == "nn-train"} == {
        (t, s) for t in ("temp", "geo", "present", "curprev") for s in ("dev", "test")}
    assert {k.runner for k in svc.default_plan(with_minilm=True)} == {
        "id-random", "id-tfidf", "nn-train", "id-minilm"}
    assert svc.default_plan(["id-random"], ["geo-id"], ["dev"]) == [
        BaselineKey("id-random", "geo-id", "dev")]
    # QA runners skip identification tracks instead of failing
    assert svc.plan(["dpr"], ["temp-id", "geo"], ["test"]) == [BaselineKey("dpr", "geo", "test")]


def _output(tmp_path: Path, meta: dict[str, object] | None) -> Path:
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": 1, "label": true}\n')
    if meta is not None:
        (tmp_path / "out.jsonl.meta.json").write_text(json.dumps(meta))
    return path


def test_read_file_needs_the_file_and_a_matching_sidecar(tmp_path: Path) -> None:
    key = BaselineKey("id-random", "geo-id", "dev")
    with pytest.raises(BaselineError, match="nope.jsonl: no such file"):
        svc.read_file(key, tmp_path / "nope.jsonl")
    with pytest.raises(BaselineError, match=r"out\.jsonl\.meta\.json: not found"):
        svc.read_file(key, _output(tmp_path, None))
    path = _output(tmp_path, {"runner": "id-tfidf", "track": "geo-id", "split": "dev"})
    with pytest.raises(BaselineError, match="written by id-tfidf:geo-id:dev"):
        svc.read_file(key, path)
    meta = {"runner": "id-random", "track": "geo-id", "split": "dev", "seed": 3,
            "settings": {"batch_size": 16}, "code_version": "git:abc",
            "fingerprints": {"data_dev": {"sha256": "0" * 64}}}
    file = svc.read_file(key, _output(tmp_path, meta))
    assert file.record["code_version"] == "git:abc" and file.record["fingerprints"]
    assert svc.run_identity(file.record) == {"setting": None, "settings": {"batch_size": 16},
                                             "seed": 3}


def test_discover_keys_files_by_their_sidecars(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="no \\*.jsonl"):
        svc.discover(tmp_path)
    _output(tmp_path, {"runner": "id-random", "track": "geo-id", "split": "dev"})
    assert svc.discover(tmp_path) == [(BaselineKey("id-random", "geo-id", "dev"),
                                       tmp_path / "out.jsonl")]
    (tmp_path / "copy.jsonl").write_text("{}\n")
    (tmp_path / "copy.jsonl.meta.json").write_text(
        json.dumps({"runner": "id-random", "track": "geo-id", "split": "dev"}))
    with pytest.raises(BaselineError, match="several files for id-random:geo-id:dev"):
        svc.discover(tmp_path)


def test_reported_rows_cover_tables_4_5_8_9_with_unique_keys() -> None:
    rows = svc.reported_rows()
    assert len(rows) == len(load_reported())
    assert len({row.key for row in rows}) == len(rows)
    assert all(row.source.startswith(svc.REPORTED_PREFIX) for row in rows)
    assert {int(row.source.split("Table ")[1].split(":")[0]) for row in rows} == {4, 5, 8, 9}
    by_name = {(r.track, r.split, r.method_name): r for r in rows}
    dpr = by_name["temp", "test", "DPR (query-modified)"]
    assert dpr.model_type == "retrieval" and dpr.primary_metric == 18.6
    assert by_name["geo", "test", "BART (finetuned)"].fine_tuned is True
    human = by_name["temp-id", "test", "Human (estimate)"]
    assert "human performance" in human.source and human.primary_metric == 90.9
    present = [r for r in rows if r.track == "present"]
    # Table 9 reports no total EM: the rows have no primary metric
    assert len(present) == 5 and all(r.primary_metric is None for r in present)
