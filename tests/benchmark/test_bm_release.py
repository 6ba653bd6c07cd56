"""The importer on the real release: partition sizes of the paper, keys, present-day split,
manifest checksums."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from benchmark import GoldError, GoldSet, import_release, read_manifest
from benchmark.release import verify_release
from benchmark.tracks import SPLITS, TRACKS


def test_temp_partitions(release_gold: GoldSet) -> None:
    temp = release_gold.get("temp", "test")
    assert len(temp) == 2795
    assert temp.partition_sizes() == {"static": 400, "sampled": 1482, "start": 913}
    date_types = Counter(e.context["date_type"] for e in temp)
    assert date_types == {"orig": 400, "sampled_year": 911, "sampled_date": 571, "start": 913}


def test_geo_partitions_and_table7_groups(release_gold: GoldSet) -> None:
    geo = release_gold.get("geo", "test")
    assert len(geo) == 506
    sizes = geo.partition_sizes()
    assert sizes["common"] == 266
    assert sizes["rare"] == 240
    # Table 7: US = "united states" only; "us"/"usa" count as Other common (203).
    assert (sizes["us"], sizes["india"], sizes["other_common"]) == (43, 20, 203)
    assert sizes["us"] + sizes["india"] + sizes["other_common"] == sizes["common"]


def test_present_and_curprev_partitions(release_gold: GoldSet) -> None:
    assert release_gold.get("present", "test").partition_sizes() == {
        "stable": 267, "updated": 209}
    assert release_gold.get("curprev", "test").partition_sizes() == {
        "current": 529, "previous": 373}


@pytest.mark.parametrize(("track", "questions", "dependent"),
                         [("temp-id", 1928, 533), ("geo-id", 367, 137)])
def test_identification_sizes(release_gold: GoldSet, track: str, questions: int,
                              dependent: int) -> None:
    gold = release_gold.get(track, "test")
    assert len(gold) == questions
    assert int(gold.labels.sum()) == dependent
    assert gold.partition_sizes() == {"dependent": dependent,
                                      "independent": questions - dependent}


def test_temp_id_sources(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp-id", "test")
    assert all(e.source for e in gold)
    assert release_gold.get("geo-id", "test").sources == ()


@pytest.mark.parametrize("split", ["train", "dev"])
def test_present_reproduces_released_temp_splits(release_gold: GoldSet, release_dir: Path,
                                                 split: str) -> None:
    present = release_gold.get("present", split)
    for partition, prefix in (("stable", "pre"), ("updated", "post")):
        path = release_dir / "temp_splits" / f"{prefix}_2019.{split}.jsonl"
        released = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        ours = [e for e in present if partition in e.partitions]
        # Same ids, in the same order, with the same answers (and questions).
        assert [e.id for e in ours] == [r["id"] for r in released]
        assert [list(e.answers) for e in ours] == [r["answer"] for r in released]
        assert [e.question for e in ours] == [r["question"] for r in released]


def test_keys_unique_per_track_and_split(release_gold: GoldSet) -> None:
    assert release_gold.available() == [(t, s) for t in TRACKS for s in SPLITS]
    for track, split in release_gold.available():
        keys = [e.key for e in release_gold.get(track, split)]
        assert len(keys) == len(set(keys)), (track, split)


def test_temp_key_needs_date_type(release_gold: GoldSet) -> None:
    # (id, date) alone repeats 10 times in test and 12 times in dev: the key needs date_type.
    for split, repeats in (("test", 10), ("dev", 12)):
        pairs = Counter((e.id, e.context["date"]) for e in release_gold.get("temp", split))
        assert sum(count - 1 for count in pairs.values() if count > 1) == repeats


def test_geo_key_keeps_location_case(release_gold: GoldSet) -> None:
    # Lower-casing locations would merge examples: the key keeps case.
    for split in SPLITS:
        geo = release_gold.get("geo", split)
        assert len({e.key for e in geo}) == len(geo)
    lowered = Counter((e.id, e.context["location"].lower())
                      for s in SPLITS for e in release_gold.get("geo", s))
    assert any(count > 1 for count in lowered.values())


def test_import_records_provenance(release_gold: GoldSet) -> None:
    manifest = read_manifest()
    assert release_gold.meta["commit"] == manifest.commit
    assert release_gold.meta["source_fingerprint"] == manifest.fingerprint()
    assert release_gold.meta["present_threshold"] == 2019


@pytest.fixture
def release_copy(release_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "release"
    for name in read_manifest().files:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release_dir / name, copy / name)
    return copy


def test_checksum_refuses_altered_file(release_copy: Path) -> None:
    victim = release_copy / "qa_data" / "geo.test.jsonl"
    data = bytearray(victim.read_bytes())
    data[100] ^= 0x01  # alter one byte
    victim.write_bytes(bytes(data))
    with pytest.raises(GoldError) as error:
        import_release(release_copy)
    message = str(error.value)
    assert "geo.test.jsonl" in message
    assert "SHA-256" in message
    # Only the altered file is named.
    assert "temp.test.jsonl" not in message


def test_checksum_names_missing_file(release_copy: Path) -> None:
    (release_copy / "id_data" / "temp.dev.jsonl").unlink()
    with pytest.raises(GoldError, match=r"id_data/temp\.dev\.jsonl: missing"):
        verify_release(release_copy, read_manifest())
