"""Inspect tasks of the six tracks: `inspect eval situatedqa/temp` (declared in
situatedqa/tasks.py, so that Inspect names them situatedqa/…).

Each task gives the documents of benchmark.harness.docs as samples (the id is the example
key; the metadata is the document, markers included), generates with the track's
closed-book prompt, and scores with the project's scorer: each sample's score is its EM on
its own example, and every metric (EM, EM Any, the partitions, the lenient ones beside them)
is `benchmark.score` over all the samples' answers. The answer filter is the lm-eval tasks'
(first line, stripped).

Task options (`-T name=value`): `split` (dev; test only where asked), `shots` (0; drawn
from train, in release order), `data` (the release folder; default $SITUATEDQA_DATA),
`inputs` (the server's blank inputs: no gold in the samples, no metric computed; the upload
scores the log), `release` with `server` (on test: the release's inputs plus the server's
input releases, "all" or names separated by commas; `server` defaults to $SITUATEDQA_URL;
blank like `inputs`).

Imports inspect_ai: this module is loaded by Inspect (as a file: hence its absolute imports),
never by the server.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState, generate

from benchmark.example import Example
from benchmark.gold import GoldSplit
from benchmark.harness.conformance import score_pairs
from benchmark.harness.docs import document, prompt, target
from benchmark.harness.lm_eval_task import (
    MAX_GEN_TOKS,
    _release,
    blank_examples,
    metric_names,
    release_inputs,
)
from benchmark.harness_files import first_line, response_value
from benchmark.scoring import ScoreResult
from benchmark.tracks import TRACKS, track_info

HARNESS = "inspect"
_LOADED: dict[tuple[str, str], GoldSplit] = {}


def _harness() -> str:
    from importlib.metadata import version

    return f"{HARNESS} {version('inspect_ai')}"


def samples(track: str, split: str = "dev", shots: int = 0, data: str | None = None,
            inputs: str | None = None, release: str | None = None,
            server: str | None = None) -> list[Sample]:
    """The task's samples: a document each, its prompt with `shots` train examples first."""
    gold_set = _release(data)
    if release:
        if split != "test":
            raise ValueError(f"input releases hold test examples: the release option needs "
                             f"split test, not {split!r}")
        examples: list[Example] = release_inputs(
            server or os.environ.get("SITUATEDQA_URL"), track, release)
        with_gold = False
    elif inputs:
        examples = blank_examples(Path(inputs), track)
        with_gold = False
    else:
        gold = gold_set.get(track, split)
        _LOADED[(track, split)] = gold
        examples, with_gold = list(gold.examples), True
    harness = _harness()
    train = [document(e, track, "train", harness=harness)
             for e in gold_set.get(track, "train").examples[:shots]]
    shown = "".join(f"{prompt(d, track)} {target(d, track)}\n\n" for d in train)
    found = []
    for example in examples:
        doc = document(example, track, split, harness=harness, with_gold=with_gold)
        found.append(Sample(id=example.key, input=shown + prompt(doc, track),
                            target=target(doc, track), metadata=doc))
    return found


@cache
def _scored(items: tuple[tuple[str, str, str, str], ...]) -> ScoreResult:
    track, split = items[0][0], items[0][1]
    gold = _LOADED.get((track, split)) or _release(None).get(track, split)
    keys = {item[2] for item in items}
    if len(keys) < len(gold):
        gold = GoldSplit(track, split, [e for e in gold.examples if e.key in keys])
    return score_pairs(gold, ((k, response_value(gold, a)) for _, _, k, a in items),
                       resamples=0, fmt="inspect")


def _items(scores: list[SampleScore]) -> tuple[tuple[str, str, str, str], ...]:
    return tuple((str(s.score.metadata["track"]), str(s.score.metadata["split"]),
                  str(s.score.metadata["key"]), str(s.score.answer or ""))
                 for s in scores if s.score.metadata and "key" in s.score.metadata)


def project_metric(name: str) -> Metric:
    """One of the project's metrics over every sample (NaN where undefined)."""
    def compute(scores: list[SampleScore]) -> float:
        items = _items(scores)
        if not items:
            return float("nan")
        value = _scored(items).metrics.get(name)
        return float("nan") if value is None else float(value)

    return compute


def _registered(name: str) -> Any:
    def factory() -> Metric:
        return project_metric(name)

    factory.__name__ = f"sqa_{name}"
    return metric(name=f"sqa_{name}")(factory)


_METRICS = {name: _registered(name) for t in TRACKS for name in metric_names(t)}


def situatedqa_scorer(track: str) -> Scorer:
    """The track's scorer: the first line of the output as the answer, scored by benchmark."""
    @scorer(metrics=[_METRICS[name]() for name in metric_names(track)],
            name=f"situatedqa_{track.replace('-', '_')}")
    def build() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            doc = state.metadata
            answer = first_line(state.output.completion)
            meta = {"track": track, "split": doc["situatedqa_split"], "key": doc["key"]}
            if "answers" not in doc and "label" not in doc:  # blank inputs: no gold here
                return Score(value=float("nan"), answer=answer, metadata=meta)
            gold = _LOADED.get((track, doc["situatedqa_split"]))
            one = GoldSplit(track, doc["situatedqa_split"],
                            [gold.examples[gold.index[doc["key"]]]]) if gold else None
            value = float("nan") if one is None else float(score_pairs(
                one, [(doc["key"], response_value(one, answer))], resamples=0).metrics.get(
                track_info(track).primary) or 0.0) / 100
            return Score(value=value, answer=answer, metadata=meta)

        return score

    return build()


def situatedqa_task(track: str, split: str = "dev", shots: int = 0, data: str | None = None,
                    inputs: str | None = None, release: str | None = None,
                    server: str | None = None) -> Task:
    """One track's task."""
    return Task(dataset=MemoryDataset(samples(track, split, int(shots), data, inputs,
                                              release, server),
                                      name=f"situatedqa_{track}"),
                solver=generate(), scorer=situatedqa_scorer(track),
                config=GenerateConfig(max_tokens=MAX_GEN_TOKS, temperature=0.0),
                name=f"situatedqa_{track.replace('-', '_')}", version=1)

