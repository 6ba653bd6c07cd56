"""`flask baselines regenerate`: idempotent, atomic, scored against every gold version."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select, update

from benchmark import GoldSet, parse_predictions, score
from situatedqa_server.extensions import db
from situatedqa_server.models import QuotaCounter, ReportedEntry, Score, Submission
from situatedqa_server.services import baselines as svc
from situatedqa_server.services import evaluation, versions
from tests.versions.conftest import update_on_every_qa_track

from .conftest import database_state, write_qa_output

QUICK_ARGS = ("--runner", "id-random", "--split", "dev")


def _entries(app: Flask, track: str, split: str, query: str = "") -> list[dict[str, Any]]:
    """The JSON leaderboard's entries."""
    board = app.test_client().get(f"/api/v1/leaderboards/{track}?split={split}{query}").get_json()
    entries: list[dict[str, Any]] = board["entries"]
    return entries


def _ok(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return result


def test_regenerate_twice_changes_nothing(app: Flask, regenerate: Any) -> None:
    first = _ok(regenerate(*QUICK_ARGS))
    assert first.output.count("added ") == 2 and "42 added" in first.output
    before = database_state(app)
    second = _ok(regenerate(*QUICK_ARGS))
    assert second.output.count("kept ") == 2 and "42 unchanged" in second.output
    assert database_state(app) == before
    with app.app_context():
        entries = db.session.scalars(select(Submission)).all()
        assert len(entries) == 2 and {e.track for e in entries} == {"temp-id", "geo-id"}
        for entry in entries:
            assert entry.is_baseline and entry.is_public and entry.baseline_runner == "id-random"
            assert entry.team.name == svc.SYSTEM_TEAM and entry.user.username == svc.SYSTEM_USERNAME
            record = entry.baseline_settings or {}
            assert record["seed"] == 0 and record["code_version"]
            assert {"data_train", "data_dev"} <= set(record["fingerprints"])
        # baselines count against no quota
        assert db.session.scalar(select(func.count(QuotaCounter.id))) == 0


def test_a_new_seed_replaces_entries_and_their_scores(app: Flask, regenerate: Any) -> None:
    _ok(regenerate(*QUICK_ARGS))
    old = database_state(app)
    result = _ok(regenerate(*QUICK_ARGS, "--seed", "1"))
    assert result.output.count("replaced ") == 2
    new = database_state(app)
    old_ids = {row.id for row in old["submissions"]}
    assert not old_ids & {row.id for row in new["submissions"]}
    assert not old_ids & {row.submission_id for row in new["scores"]}
    assert len(new["scores"]) == len(old["scores"]) and new["reported"] == old["reported"]


def test_a_runner_failing_halfway_leaves_the_old_entries(app: Flask, regenerate: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _ok(regenerate(*QUICK_ARGS))
    before = database_state(app)
    real = svc.run_runner
    calls: list[svc.BaselineKey] = []

    def fail_after_first(key: svc.BaselineKey, *args: Any, **kwargs: Any) -> svc.BaselineFile:
        calls.append(key)
        if len(calls) > 1:
            raise svc.BaselineError(f"{key}: out of memory")
        return real(key, *args, **kwargs)

    monkeypatch.setattr(svc, "run_runner", fail_after_first)
    result = regenerate(*QUICK_ARGS, "--seed", "1")
    assert result.exit_code == 1 and "out of memory" in result.output
    assert len(calls) == 2 and database_state(app) == before


def test_a_failure_inside_the_transaction_rolls_everything_back(
        app: Flask, regenerate: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _ok(regenerate(*QUICK_ARGS))
    before = database_state(app)
    real = evaluation.score_row
    calls = []

    def fail_on_second(*args: Any) -> Score:
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        return real(*args)

    monkeypatch.setattr(evaluation, "score_row", fail_on_second)
    result = regenerate(*QUICK_ARGS, "--seed", "1")
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
    assert database_state(app) == before  # also: no staged file left in the store


def test_runner_outputs_from_elsewhere_are_scored_like_uploads(
        app: Flask, regenerate: Any, release_dir: Path, release_gold: GoldSet,
        tmp_path: Path) -> None:
    outputs = tmp_path / "gpu-box"
    outputs.mkdir()
    random_file = svc.run_runner(svc.BaselineKey("id-random", "geo-id", "dev"), release_dir,
                                 outputs)
    random_path = outputs / "id-random.geo-id.dev.jsonl"
    qa_paths = {"geo": write_qa_output(release_dir, outputs / "dpr.geo.jsonl", "dpr", "geo"),
                "temp": write_qa_output(release_dir, outputs / "bart.temp.jsonl", "bart",
                                        "temp", "finetuned")}
    _ok(regenerate("--from-file", f"dpr:geo:dev:{qa_paths['geo']}",
                   "--from-file", f"bart:temp:dev:{qa_paths['temp']}",
                   "--from-file", f"id-random:geo-id:dev:{random_path}"))
    expected = {"geo": ("DPR (query-modified)", "retrieval", False),
                "temp": ("BART (finetuned)", "closed-book", True)}
    for track, path in qa_paths.items():
        # the offline scorer accepts the file as it is, and the server agrees with it
        gold = release_gold.get(track, "dev")
        offline = score(gold, parse_predictions(path.read_bytes(), gold), resamples=0)
        [entry] = [e for e in _entries(app, track, "dev") if e["baseline"]]
        assert (entry["method_name"], entry["model_type"], entry["fine_tuned"]) == expected[track]
        assert entry["metrics"]["em"] == pytest.approx(offline.metrics["em"]) and entry["ci"]["em"]
    assert [e["method_name"] for e in _entries(app, "geo-id", "dev") if e["baseline"]] == [
        "Random (train label rate)"]
    with app.app_context():
        stored = db.session.scalar(select(Submission).where(Submission.track == "geo"))
        assert stored is not None and stored.baseline_settings is not None
        assert stored.baseline_settings["code_version"] == "git:gpu-box-1234"
        assert stored.baseline_settings["fingerprints"]["corpus"]["sha256"] == "cd" * 32
        assert stored.file_sha256 in database_state(app)["files"]
    # the same files through --from-dir are the same entries
    kept = _ok(regenerate("--from-dir", str(outputs)))
    assert kept.output.count("kept ") == 3
    assert random_file.sha256 in {r.file_sha256 for r in database_state(app)["submissions"]}


def test_user_errors_name_the_problem(regenerate: Any, tmp_path: Path) -> None:
    missing = tmp_path / "lost.jsonl"
    result = regenerate("--from-file", f"bart:temp:test:{missing}")
    assert result.exit_code == 1 and str(missing) in result.output
    result = regenerate("--quick", "--runner", "id-random")
    assert result.exit_code == 2 and "--quick takes no --runner" in result.output
    result = regenerate("--from-dir", str(tmp_path), "--with-minilm")
    assert result.exit_code == 2


def test_baselines_are_scored_against_every_gold_version(app: Flask, regenerate: Any,
                                                         release_gold: GoldSet) -> None:
    dev = release_gold.get("geo-id", "dev").examples
    flips = [{"track": "geo-id", "split": "dev", "key": e.key, "action": "update",
              "answer": not e.label, "reason": "relabelled"} for e in dev[:200]]
    with app.app_context():
        version = versions.build_version("".join(json.dumps(f) + "\n" for f in flips),
                                         "update.jsonl", "relabelled", date(2022, 1, 1), "",
                                         None)
        version_id = version.id
    _ok(regenerate("--runner", "id-random", "--track", "geo-id", "--split", "dev"))
    with app.app_context():
        scores = db.session.scalars(select(Score).order_by(Score.id)).all()
        assert [s.gold_version_id for s in scores][1:] == [version_id]
        assert scores[0].metrics["f1"] != scores[1].metrics["f1"]


def _board(app: Flask, track: str, query: str = "") -> list[dict[str, Any]]:
    return _entries(app, track, "test", query)


def test_paper_rows_sit_in_rank_position_marked_without_ci(app: Flask, regenerate: Any) -> None:
    _ok(regenerate("--runner", "id-random", "--track", "temp-id", "--split", "test"))
    entries = _board(app, "temp-id")
    f1 = [e["metrics"]["f1"] for e in entries]
    assert f1 == sorted(f1, reverse=True)
    reported = [e for e in entries if e["reported"]]
    assert {e["method_name"] for e in reported} == {
        "Random", "BERT-base", "BERT-large", "Human (estimate)"}
    assert all(e["rank"] is None and e["ci"] == {} and e["source"] for e in reported)
    [ours] = [e for e in entries if e["baseline"]]
    assert ours["rank"] == 1 and ours["ci"]["f1"]
    page = app.test_client().get("/leaderboards/temp-id?split=test").get_data(as_text=True)
    assert page.count("badge reported") == 4 and "Human (estimate)" in page
    csv = app.test_client().get("/leaderboards/temp-id.csv?split=test").get_data(as_text=True)
    assert "BERT-large" in csv and "SituatedQA paper, Table 4: BERT_large" in csv  # its source


def test_present_rows_sort_last_on_em_and_in_place_on_their_partitions(
        app: Flask, regenerate: Any, release_gold: GoldSet) -> None:
    from tests.server.conftest import api_upload, new_token, prediction_file, register

    _ok(regenerate("--reported-only"))
    client = app.test_client()
    register(client, "alice")
    gold = release_gold.get("present", "test")
    response = api_upload(client, new_token(client), gold, prediction_file(gold, 100),
                          public="true", method_name="ours")
    assert response.status_code == 201, response.json
    names = [e["method_name"] for e in _board(app, "present")]
    assert names[0] == "ours" and len(names) == 6  # no total EM reported: after every scored row
    by_updated = _board(app, "present", "&sort=em_updated")
    updated = [e["metrics"]["em_updated"] for e in by_updated]
    assert updated == sorted(updated, reverse=True)


def test_reported_refresh_is_idempotent_and_repairs_edits(app: Flask, regenerate: Any) -> None:
    _ok(regenerate("--reported-only"))
    with app.app_context():
        ids = db.session.scalars(select(ReportedEntry.id).order_by(ReportedEntry.id)).all()
        first = ids[0]
        db.session.execute(update(ReportedEntry).where(ReportedEntry.id == first)
                           .values(metrics={"f1": 1.0}, primary_metric=1.0))
        db.session.add(ReportedEntry(track="geo", split="test", method_name="gone",
                                     source=svc.REPORTED_PREFIX + "Table 99", metrics={}))
        db.session.add(ReportedEntry(track="geo", split="test", method_name="other paper",
                                     source="Another paper, Table 2", metrics={"em": 30.0}))
        db.session.commit()
    result = _ok(regenerate("--reported-only"))
    assert "0 added, 1 updated, 1 removed, 41 unchanged" in result.output
    with app.app_context():
        names = db.session.scalars(select(ReportedEntry.method_name)).all()
        assert "gone" not in names and "other paper" in names
        assert db.session.scalars(select(ReportedEntry.id).where(
            ReportedEntry.source.startswith(svc.REPORTED_PREFIX))
            .order_by(ReportedEntry.id)).all() == ids
        assert db.session.get_one(ReportedEntry, first).metrics != {"f1": 1.0}


def test_reference_files_load_after_a_version_retires_and_adds_examples(
        app: Flask, runner: Any, release_gold: GoldSet, tmp_path: Path) -> None:
    """`baselines regenerate --quick` (the quick start's step) after such a version: the
    release-made reference files are read against the release's inputs and aligned to each
    version (retired examples dropped, added examples wrong); it exited 1 before."""
    update = tmp_path / "every-qa-track.jsonl"
    records = update_on_every_qa_track(release_gold)
    update.write_text("".join(json.dumps(r) + "\n" for r in records))
    _ok(runner.invoke(args=["gold", "build", "--from-update", str(update), "--name", "v2",
                            "--as-of", "2026-11-01"]))
    _ok(runner.invoke(args=["gold", "activate", "v2"]))
    _ok(runner.invoke(args=["baselines", "regenerate", "--quick"]))
    with app.app_context():
        active = versions.version_named("v2")
        assert active is not None and active.is_active
        new_gold = versions.gold_of(active)
        added = {(r["track"], r["split"]): r["key"] for r in records if r["action"] == "add"}
        for (track, split), key in added.items():
            rows = db.session.execute(select(Submission, Score).join(Score).where(
                Submission.is_baseline.is_(True), Submission.track == track,
                Submission.split == split, Score.gold_version_id == active.id)).all()
            assert rows, (track, split)
            target = new_gold.get(track, split)
            position = target.keys.index(key)
            for submission, row in rows:
                assert row.n == len(target) == len(release_gold.get(track, split)), submission
                assert row.outcomes[position] & 1 == 0  # the added example counts as wrong
    # The boards show them under the active version.
    assert any(e["baseline"] and not e["reported"] for e in _entries(app, "geo", "dev"))
