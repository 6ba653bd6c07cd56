"""`python -m benchmark` through click's CliRunner: score, compare, blank, import, fetch."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Self

import pytest
from bm_helpers import jsonl
from click.testing import CliRunner

from benchmark import GoldError, GoldSet, load_gold, read_manifest
from benchmark import cli as cli_module
from benchmark.cli import main
from benchmark.release import Manifest, fetch_release


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, release_gold: GoldSet,
        release_dir: Path) -> CliRunner:
    """A runner whose release import is the session's (already verified) gold."""
    monkeypatch.setenv("SITUATEDQA_DATA", str(release_dir))

    def imported(directory: Path, *args: Any, **kwargs: Any) -> GoldSet:
        assert Path(directory) == release_dir
        return release_gold

    monkeypatch.setattr(cli_module, "import_release", imported)
    return CliRunner()


def _gold_file(gold: GoldSet, track: str, split: str, path: Path) -> Path:
    examples = gold.get(track, split).examples
    path.write_bytes(jsonl({"key": e.key, "prediction": e.answers[0]} for e in examples))
    return path


def test_score_table(cli: CliRunner, release_gold: GoldSet, tmp_path: Path) -> None:
    file = _gold_file(release_gold, "geo", "test", tmp_path / "geo.jsonl")
    result = cli.invoke(main, ["score", "--track", "geo", "--split", "test", str(file),
                               "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert "geo / test: 506 examples" in result.output
    assert "EM (em)" in result.output and "Other common (em_other_common)" in result.output
    assert "100.00" in result.output


def test_score_json_shape(cli: CliRunner, release_gold: GoldSet, tmp_path: Path) -> None:
    file = _gold_file(release_gold, "temp", "test", tmp_path / "temp.jsonl")
    result = cli.invoke(main, ["score", "--track", "temp", "--split", "test", str(file),
                               "--json", "--resamples", "100", "--seed", "3"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {"track", "split", "n", "metrics", "ci", "counts", "horizon", "scorer"}
    assert (payload["track"], payload["split"], payload["n"]) == ("temp", "test", 2795)
    paper = ["em", "em_static", "em_sampled", "em_start", "em_any"]
    lenient = [f"{family}{name[2:]}" for family in ("em_equiv", "f1") for name in paper]
    errors = [f"{cls}_{kind}{suffix}" for kind in ("rate", "share")
              for suffix in ("", "_static", "_sampled", "_start")
              for cls in ("outdated", "premature", "other_context", "unrelated")]
    assert list(payload["metrics"]) == paper + lenient + errors
    assert all(payload["metrics"][name] == 100.0 for name in paper + lenient)
    # 2795 of 2795: Wilson's [99.863, 100] (a bootstrap of 100% never varies).
    assert payload["ci"]["em"] == pytest.approx([99.8627, 100.0], abs=1e-4)
    sizes = {"em": 2795, "em_static": 400, "em_sampled": 1482, "em_start": 913, "em_any": 2795}
    # Every answer right: every class rate is 0 (CI: Wilson's for 0 of the partition's
    # size); no error, so no share.
    for name in errors:
        kind, size = ("rate", sizes["em" + name.partition("_rate")[2]]) if "_rate" in name \
            else ("share", 0)
        assert payload["metrics"][name] == (0.0 if kind == "rate" else None)
        assert payload["ci"][name] == (
            pytest.approx([0.0, 100 * 1.96**2 / (size + 1.96**2)], abs=1e-3)
            if kind == "rate" else None)
        assert payload["counts"][name] == size
    assert {k: v for k, v in payload["counts"].items() if k in paper + lenient} == sizes | {
        f"{family}{name[2:]}": size for family in ("em_equiv", "f1")
        for name, size in sizes.items()}
    horizon = payload["horizon"]
    assert horizon["determined"] is False and horizon["year"] is None
    assert "never drops" in horizon["reason"]


def test_score_json_full_precision(cli: CliRunner, release_gold: GoldSet,
                                   tmp_path: Path) -> None:
    examples = release_gold.get("present", "test").examples
    file = tmp_path / "present.json"
    file.write_text(json.dumps({e.key: (e.answers[0] if i % 3 else "-")
                                for i, e in enumerate(examples)}))
    result = cli.invoke(main, ["score", "--track", "present", "--split", "test", str(file),
                               "--json", "--resamples", "0"])
    payload = json.loads(result.stdout)
    right = sum(1 for i in range(len(examples)) if i % 3)
    assert payload["metrics"]["em"] == 100 * right / len(examples)  # not rounded
    assert payload["ci"]["em"] is None


def test_score_rejects_bad_file(cli: CliRunner, tmp_path: Path) -> None:
    file = tmp_path / "bad.jsonl"
    file.write_text('{"key": "nope", "prediction": "x"}\n{"key": \n')
    result = cli.invoke(main, ["score", "--track", "geo", "--split", "test", str(file)])
    assert result.exit_code != 0
    assert f"{file}:1: unknown example for geo/test (key 'nope')" in result.stderr
    assert f"{file}:2: malformed JSON" in result.stderr
    assert "506 of 506 examples" in result.stderr
    assert "rejected, nothing was scored" in result.stderr
    assert result.stdout == ""


def test_compare(cli: CliRunner, release_gold: GoldSet, tmp_path: Path) -> None:
    good = _gold_file(release_gold, "curprev", "test", tmp_path / "a.jsonl")
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({e.key: "x" for e in release_gold.get("curprev", "test")}))
    result = cli.invoke(main, ["compare", "--track", "curprev", "--split", "test", str(good),
                               str(bad), "--json", "--resamples", "200"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    errors = {f"{cls}_{kind}{suffix}" for kind in ("rate", "share")
              for suffix in ("", "_current", "_previous")
              for cls in ("outdated", "premature", "unrelated")}
    assert set(payload) == {"em", "em_current", "em_previous", "em_equiv", "em_equiv_current",
                            "em_equiv_previous"} | errors  # token F1 is not in the codes
    assert payload["em"]["difference"] == 100.0 == payload["em_equiv"]["difference"]
    assert payload["em"]["p_value"] < 0.01
    # B's "x" is unrelated everywhere, A is always right: -100 points; A has no errors, so
    # no share of them to compare.
    assert payload["unrelated_rate"]["difference"] == -100.0
    assert payload["unrelated_rate"]["p_value"] < 0.01
    assert payload["outdated_rate"]["difference"] == 0.0
    assert payload["unrelated_share"]["difference"] is None
    table = cli.invoke(main, ["compare", "--track", "curprev", "--split", "test", str(good),
                              str(bad)])
    assert table.exit_code == 0 and "em_previous" in table.output


def test_blank(cli: CliRunner, release_gold: GoldSet, tmp_path: Path) -> None:
    out = tmp_path / "blank.jsonl"
    result = cli.invoke(main, ["blank", "--track", "temp", "--split", "test", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    gold = release_gold.get("temp", "test")
    assert len(rows) == len(gold)
    answers = {a for e in gold for a in e.answers + e.any_answers}
    for row, example in zip(rows, gold.examples, strict=True):
        assert set(row) == {"key", "id", "question", "date", "date_type"}
        assert row["key"] == example.key and row["question"] == example.question
    assert not any(set(row.values()) & answers - {row["date"]} for row in rows)


def test_blank_identification_has_no_label(cli: CliRunner) -> None:
    result = cli.invoke(main, ["blank", "--track", "geo-id", "--split", "test"])
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 367
    assert all(set(row) == {"key", "id", "question"} for row in rows)


def test_import_writes_canonical_gold(release_dir: Path, release_gold: GoldSet,
                                      tmp_path: Path) -> None:
    out = tmp_path / "gold"
    result = CliRunner().invoke(main, ["import", "--from", str(release_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "canonical gold written" in result.output
    assert "temp     test    2795" in result.output
    loaded = load_gold(out)
    assert loaded.available() == release_gold.available()
    assert loaded.meta == json.loads(json.dumps(release_gold.meta))
    for track, split in release_gold.available():
        assert loaded.get(track, split).examples == release_gold.get(track, split).examples


def test_import_refuses_altered_release(tmp_path: Path, release_dir: Path) -> None:
    copy = tmp_path / "copy"
    for name in read_manifest().files:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((release_dir / name).read_bytes())
    with (copy / "raw_data" / "temp.test.jsonl").open("ab") as stream:
        stream.write(b" ")
    result = CliRunner().invoke(main, ["import", "--from", str(copy), "--out",
                                       str(tmp_path / "gold")])
    assert result.exit_code != 0
    assert "raw_data/temp.test.jsonl" in result.output
    assert not (tmp_path / "gold").exists()


# --- fetch -----------------------------------------------------------------------------------


class FakeResponse:
    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.headers = {"Content-Length": str(len(body))}

    def raise_for_status(self) -> None:
        if self.status >= 400:
            raise OSError(f"HTTP {self.status}")

    def iter_content(self, chunk_size: int = 1) -> Iterator[bytes]:
        stream = io.BytesIO(self.body)
        while chunk := stream.read(chunk_size):
            yield chunk


def _tiny_manifest(files: dict[str, bytes]) -> Manifest:
    return Manifest("owner/repo", "0" * 40, "data", "mem://{repository}/{commit}/{folder}/{path}",
                    {name: hashlib.sha256(body).hexdigest() for name, body in files.items()})


def test_fetch_release_with_fake_get(tmp_path: Path) -> None:
    files = {"qa_data/a.jsonl": b'{"x": 1}\n' * 5000, "id_data/b.jsonl": b"{}\n"}
    manifest = _tiny_manifest(files)
    requested: list[str] = []
    progressed: dict[str, int] = {}

    def get(url: str) -> FakeResponse:
        requested.append(url)
        return FakeResponse(files[url.split("/data/", 1)[1]])

    def progress(name: str, total: int):  # type: ignore[no-untyped-def]
        progressed[name] = 0

        def advance(n: int) -> None:
            progressed[name] += n
        return advance

    fetched = fetch_release(tmp_path, manifest, get=get, progress=progress)
    assert fetched == list(files)
    assert requested[0] == f"mem://owner/repo/{'0' * 40}/data/qa_data/a.jsonl"
    for name, body in files.items():
        assert (tmp_path / name).read_bytes() == body
        assert progressed[name] == len(body)
    # A second run finds everything verified and downloads nothing.
    assert fetch_release(tmp_path, manifest, get=get) == []
    assert len(requested) == 2


def test_fetch_checksum_failure_leaves_no_file(tmp_path: Path) -> None:
    files = {"qa_data/a.jsonl": b"good\n"}
    manifest = _tiny_manifest(files)
    with pytest.raises(GoldError, match=r"qa_data/a\.jsonl: downloaded SHA-256"):
        fetch_release(tmp_path, manifest, get=lambda url: FakeResponse(b"evil\n"))
    assert list((tmp_path / "qa_data").iterdir()) == []  # no target, no temporary file


def test_fetch_http_error_leaves_no_file(tmp_path: Path) -> None:
    manifest = _tiny_manifest({"qa_data/a.jsonl": b"good\n"})
    with pytest.raises(OSError, match="HTTP 404"):
        fetch_release(tmp_path, manifest, get=lambda url: FakeResponse(b"", 404))
    assert not (tmp_path / "qa_data" / "a.jsonl").exists()


class FakeSession:
    """Stands in for requests.Session: serves the release files from memory."""

    served: ClassVar[dict[str, bytes]] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def get(self, url: str, **kwargs: Any) -> FakeResponse:
        return FakeResponse(self.served[url])


@pytest.fixture
def fake_download(monkeypatch: pytest.MonkeyPatch, release_dir: Path) -> dict[str, bytes]:
    monkeypatch.delenv("SITUATEDQA_DATA", raising=False)
    manifest = read_manifest()
    served = {manifest.url(name): (release_dir / name).read_bytes() for name in manifest.files}
    monkeypatch.setattr(FakeSession, "served", served)
    monkeypatch.setattr("requests.Session", FakeSession)
    return served


def test_cli_fetch_downloads_and_verifies(fake_download: dict[str, bytes],
                                          tmp_path: Path) -> None:
    dest = tmp_path / "release"
    result = CliRunner().invoke(main, ["fetch", "--dest", str(dest)])
    assert result.exit_code == 0, result.output
    manifest = read_manifest()
    assert f"{len(manifest.files)} files downloaded" in result.output
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*.jsonl")) == sorted(
        manifest.files)


def test_cli_fetch_corrupted_download(fake_download: dict[str, bytes], tmp_path: Path) -> None:
    manifest = read_manifest()
    url = manifest.url("qa_data/geo.test.jsonl")
    fake_download[url] = fake_download[url][:-1] + b"X"
    dest = tmp_path / "release"
    result = CliRunner().invoke(main, ["fetch", "--dest", str(dest)])
    assert result.exit_code != 0
    assert "qa_data/geo.test.jsonl" in result.output and "SHA-256" in result.output
    assert not (dest / "qa_data" / "geo.test.jsonl").exists()
    assert not [p for p in (dest / "qa_data").iterdir() if p.name.startswith(".")]


def test_cli_fetch_from_local_copy(monkeypatch: pytest.MonkeyPatch, release_dir: Path,
                                   tmp_path: Path) -> None:
    monkeypatch.delenv("SITUATEDQA_DATA", raising=False)
    dest = tmp_path / "copied"
    result = CliRunner().invoke(main, ["fetch", "--from", str(release_dir), "--dest", str(dest)])
    assert result.exit_code == 0, result.output
    assert "verified files" in result.output
    for name in read_manifest().files:
        assert (dest / name).read_bytes() == (release_dir / name).read_bytes()


def test_cli_fetch_from_altered_copy_fails(release_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "source"
    for name in read_manifest().files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((release_dir / name).read_bytes())
    victim = source / "id_data" / "geo.test.jsonl"
    victim.write_bytes(b"#" + victim.read_bytes()[1:])
    dest = tmp_path / "dest"
    result = CliRunner().invoke(main, ["fetch", "--from", str(source), "--dest", str(dest)])
    assert result.exit_code != 0
    assert "id_data/geo.test.jsonl" in result.output
    assert not dest.exists()


def test_score_leads_with_the_split_a_file_belongs_to(
        cli: CliRunner, release_gold: GoldSet, tmp_path: Path) -> None:
    file = _gold_file(release_gold, "temp", "dev", tmp_path / "temp-dev.jsonl")
    result = cli.invoke(main, ["score", "--track", "geo", "--split", "dev", str(file)])
    assert result.exit_code != 0
    lines = result.output.splitlines()
    assert lines[0] == f"{file}: none of these keys belong to geo/dev; they match temp/dev"
    # temp/dev has more records than geo/dev allows: the cap that stopped the reading first.
    assert "more than 1498 records: geo/dev has 1398 examples" in lines[1]
    assert "unknown example for geo/dev" in lines[2]
