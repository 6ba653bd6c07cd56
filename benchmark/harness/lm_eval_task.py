"""The lm-evaluation-harness tasks' code: loaders, prompts, the filter and the metrics.

`lm_eval_tasks/` holds one YAML config per track (written by `python -m
benchmark.harness.lm_eval_task`, from the track registry) and a `utils.py` that binds these
functions per track. The metrics are the project's own: every sample's result is its
(key, answer), and each metric's aggregation scores them all with `benchmark.score`, then
reads its number; nothing is computed in the YAML.

Options (lm_eval's `--metadata` JSON): `split` (dev by default; "test" only where asked),
`data` (the release folder; default $SITUATEDQA_DATA), `inputs` (the server's blank inputs,
from `situatedqa download-inputs TRACK SPLIT`: for examples whose gold is hidden; the
documents then carry no gold and no metric is computed locally: the upload scores the
samples file), `release` with `server` (on test: the release's inputs plus the server's
input releases, "all" or names separated by commas, read from the server at `server`,
default $SITUATEDQA_URL; blank like `inputs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..example import Example
from ..gold import GoldSet, GoldSplit
from ..harness_files import response_value
from ..public_paths import public_text
from ..release import import_release, resolve_release_dir
from ..scoring import ScoreResult
from ..tracks import TRACKS, track_info
from .conformance import fingerprint, score_pairs
from .docs import TASK_VERSION, document, first_line, task_name

FILTER_NAME = "first-line"
MAX_GEN_TOKS = 32
#: Where lm-eval stops a generation, besides the model's end-of-text token and MAX_GEN_TOKS:
#: where a model writes the next example ("Question:" begins every prompt's question). No
#: line break: lm-eval cuts a generation at a stop sequence's first occurrence, even at its
#: start, and a model that opens with a line break would answer "" (the filter reads the
#: first non-empty line).
STOP_SEQUENCES: tuple[str, ...] = ("Question:",)
TASKS_DIR = Path(__file__).resolve().parent / "lm_eval_tasks"
GROUP = "situatedqa"
#: Gold splits loaded in this process, by (track, split): the metrics score against them.
_LOADED: dict[tuple[str, str], GoldSplit] = {}


@cache
def _release(data: str | None) -> GoldSet:
    return import_release(resolve_release_dir(Path(data) if data else None))


def harness_version() -> str:
    """lm-eval's version as the documents record it ("lm-eval 0.4.13")."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"lm-eval {version('lm_eval')}"
    except PackageNotFoundError:
        return "lm-eval"


def blank_examples(path: Path, track: str) -> list[Example]:
    """The examples of a blank inputs file (key, id, question, context fields; no gold)."""
    return _blank_records(path.read_text(encoding="utf-8"), track)


def _blank_records(text: str, track: str) -> list[Example]:
    """The examples of a blank inputs file's text (see blank_examples)."""
    info = track_info(track)
    examples = []
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)
            examples.append(Example(key=record["key"], id=int(record["id"]),
                                    question=record["question"],
                                    context={n: record[n] for n in info.context_fields}))
    return examples


def _fetch(url: str) -> str:
    """A server's download as text; ValueError with the server's message when refused."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return str(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read().decode("utf-8"))["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = exc.reason
        raise ValueError(f"{url}: {exc.code} {message}") from None
    except urllib.error.URLError as exc:
        raise ValueError(f"{url}: cannot reach the server ({exc.reason})") from None


#: The `release` option's value for every published input release.
ALL_RELEASES = "all"


def release_inputs(server: str | None, track: str, release: str) -> list[Example]:
    """The test inputs an upload answers with input releases, from a server: the release's
    inputs plus every published input release (`release` "all"), or plus the ones named
    (comma-separated names, from the server's /data/releases). ValueError when the server
    is not given or refuses (an unknown or unpublished release)."""
    from urllib.parse import quote

    if not server:
        raise ValueError("the release option reads the inputs from a server: give its "
                         "address as the server option (or set SITUATEDQA_URL)")
    root = server.rstrip("/")
    base = f"{root}/data/{track}/test/blank.jsonl"
    every = _blank_records(_fetch(base), track)
    if release.strip() == ALL_RELEASES:
        return every
    named = [name.strip() for name in release.split(",") if name.strip()]
    listed = json.loads(_fetch(f"{root}/data/releases.json")).get("releases", [])
    keys: dict[str, set[str]] = {}
    for name in dict.fromkeys([*named, *(str(r["name"]) for r in listed
                                         if track in r.get("tracks", {}))]):
        keys[name] = {e.key for e in _blank_records(
            _fetch(f"{base}?release={quote(name)}"), track)}
    wanted = set().union(*(keys[name] for name in named))
    others = set().union(*(k for name, k in keys.items() if name not in named))
    return [e for e in every if e.key in wanted or e.key not in others]


def load(track: str, **options: Any) -> Any:
    """The task's dataset: {"eval": the asked split, "train": few-shot examples}."""
    import datasets

    split = str(options.get("split") or "dev")
    model = model_marker(options)
    gold_set = _release(options.get("data"))
    if options.get("release"):
        if split != "test":
            raise ValueError(f"input releases hold test examples: the release option needs "
                             f"split test, not {split!r}")
        examples, with_gold = release_inputs(
            options.get("server") or os.environ.get("SITUATEDQA_URL"), track,
            str(options["release"])), False
    elif options.get("inputs"):
        examples, with_gold = blank_examples(Path(options["inputs"]), track), False
    else:
        gold = gold_set.get(track, split)
        _LOADED[(track, split)] = gold
        examples, with_gold = list(gold.examples), True
    harness = harness_version()
    rows = [document(e, track, split, harness=harness, model=model, with_gold=with_gold)
            for e in examples]
    train = [document(e, track, "train", harness=harness)
             for e in gold_set.get(track, "train").examples]
    return datasets.DatasetDict({"eval": datasets.Dataset.from_list(rows),
                                 "train": datasets.Dataset.from_list(train)})


def model_marker(options: Mapping[str, Any]) -> str | None:
    """The model as the documents name it: the `model_name` option where given (the
    baseline runner's name, package, file and hash), else lm-eval's `pretrained` (or
    `model`) and `gguf_file` model arguments. A path becomes its last component: samples
    files are uploaded and shown, and the folder is only the uploader's machine's."""
    if options.get("model_name"):
        return public_text(str(options["model_name"]))
    model = options.get("pretrained") or options.get("model")
    if not model:
        return None
    name = public_text(str(model))
    gguf = options.get("gguf_file")
    return f"{name} ({public_text(str(gguf))})" if gguf else name


def first_line_filter(responses: Iterable[Sequence[str]], docs: Any) -> list[list[str]]:
    """The answer filter: each response's first non-empty line, stripped
    (harness_files.first_line)."""
    return [[first_line(r if isinstance(r, str) else "") for r in inst] for inst in responses]


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    """Every metric's per-sample item: (track, split, key, answer); none without gold."""
    track = doc["situatedqa_track"] if "situatedqa_track" in doc else _track_of(doc)
    info = track_info(track)
    if "answers" not in doc and "label" not in doc:
        return {}  # the server's blank inputs: the upload scores the samples file
    item = (track, doc["situatedqa_split"], doc["key"], results[0] if results else "")
    return dict.fromkeys(metric_names(track), item) if info.metrics else {}


def _track_of(doc: Mapping[str, Any]) -> str:
    task = str(doc["situatedqa_task"]).removeprefix("situatedqa_")
    return next(t for t in TRACKS if t.replace("-", "_") == task)


def metric_names(track: str) -> tuple[str, ...]:
    """The metrics a task reports: the paper's (EM, EM Any, partitions), then the lenient."""
    info = track_info(track)
    return (*info.metrics, *info.lenient_metrics)


@cache
def _scored(items: tuple[tuple[str, str, str, str], ...]) -> ScoreResult:
    track, split = items[0][0], items[0][1]
    gold = _LOADED.get((track, split)) or _release(None).get(track, split)
    keys = {item[2] for item in items}
    if len(keys) < len(gold):  # a --limit run: the examples it covers
        gold = GoldSplit(track, split, [e for e in gold.examples if e.key in keys])
    return score_pairs(gold, ((key, response_value(gold, answer)) for _, _, key, answer in items),
                       resamples=0, fmt="lm-eval")


def aggregation(metric: str) -> Callable[[Sequence[Any]], float]:
    """The aggregation of one metric: the project's score of all items, that metric."""
    def aggregate(items: Sequence[Any]) -> float:
        value = _scored(tuple(tuple(item) for item in items)).metrics.get(metric)
        return float("nan") if value is None else float(value)

    aggregate.__name__ = f"agg_{metric}"
    return aggregate


# --- the YAML configs, written from the registry -------------------------------------------


def task_yaml(track: str) -> str:
    """The YAML config of one track's task."""
    name = task_name(track).removeprefix("situatedqa_")
    lines = [
        "# Written by `python -m benchmark.harness.lm_eval_task` from the track registry.",
        f"task: {task_name(track)}",
        f"custom_dataset: !function utils.load_{name}",
        "test_split: eval",
        "fewshot_split: train",
        "output_type: generate_until",
        f"doc_to_text: !function utils.prompt_{name}",
        f"doc_to_target: !function utils.target_{name}",
        "process_results: !function utils.process_results",
        "target_delimiter: \" \"",
        "fewshot_delimiter: \"\\n\\n\"",
        "generation_kwargs:",
        f"  until: {json.dumps(list(STOP_SEQUENCES))}",
        "  do_sample: false",
        f"  max_gen_toks: {MAX_GEN_TOKS}",
        "filter_list:",
        f"  - name: {FILTER_NAME}",
        "    filter:",
        "      - function: custom",
        "        filter_fn: !function utils.first_line_filter",
        "      - function: take_first",
    ]
    lines.append("metric_list:")
    for metric in metric_names(track):
        lines += [f"  - metric: {metric}", f"    aggregation: !function utils.agg_{metric}",
                  "    higher_is_better: true"]
    lines += ["metadata:", f"  version: {TASK_VERSION}", f"  scorer: {fingerprint()}"]
    return "\n".join(lines) + "\n"


def group_yaml() -> str:
    """The group of every track's task."""
    tasks = "\n".join(f"  - {task_name(t)}" for t in TRACKS)
    return (f"# Written by `python -m benchmark.harness.lm_eval_task`.\ngroup: {GROUP}\n"
            f"task:\n{tasks}\nmetadata:\n  version: {TASK_VERSION}\n")


def written_files() -> dict[str, str]:
    """Every YAML file of the task folder, by name."""
    files = {f"{task_name(t)}.yaml": task_yaml(t) for t in TRACKS}
    files[f"{GROUP}.yaml"] = group_yaml()
    return files


def all_metrics() -> list[str]:
    """Every metric name of every task (utils.py binds an aggregation to each)."""
    return sorted({m for t in TRACKS for m in metric_names(t)})


if __name__ == "__main__":
    for filename, text in written_files().items():
        (TASKS_DIR / filename).write_text(text, encoding="utf-8")
    print(f"wrote {len(written_files())} files to {TASKS_DIR}")
