"""SituatedQA as a Hugging Face `evaluate` metric: `evaluate.load("<path>/situatedqa")`.

The numbers are the project's scorer's (benchmark.score), imported, never re-implemented:
predictions and references are matched by key, and the references name the examples of a
track and split of the release (or carry their gold, for a split not in the release).
"""

from __future__ import annotations

from typing import Any

import datasets
import evaluate

from benchmark.example import Example
from benchmark.gold import GoldSplit
from benchmark.harness.conformance import fingerprint, score_pairs
from benchmark.tracks import track_info

_DESCRIPTION = """The SituatedQA scorer (Zhang & Choi, EMNLP 2021): EM, EM Any and every
partition of a track, with the lenient metrics (em_equiv, token F1) beside them, and 95%
bootstrap CIs. Identical to `python -m benchmark score` (the `scorer` fingerprint says which
scorer produced a result)."""

_KWARGS = """
Args:
    predictions: list of {"key": example key, "prediction": answer text (QA) or a label
        (identification: "yes"/"no", true/false)}.
    references: list of {"key", "track", "split"} naming examples of the release (read from
        `data`, default $SITUATEDQA_DATA), or with "gold": the example's canonical JSON
        (benchmark.Example.to_json) for gold outside it.
    resamples: bootstrap resamples of the CIs (0: none; default 0).
    data: the release folder.
Returns:
    every metric of the track (percent), "ci", "n" and "scorer".
"""

_CITATION = """@inproceedings{zhang-choi-2021-situatedqa,
  title = {{SituatedQA}: Incorporating Extra-Linguistic Contexts into {QA}},
  author = {Zhang, Michael and Choi, Eunsol},
  booktitle = {EMNLP}, year = {2021}}"""


def _value(prediction: Any, identification: bool) -> str | bool:
    if not identification:
        return str(prediction)
    if isinstance(prediction, bool):
        return prediction
    return str(prediction).strip().lower() in ("yes", "true", "1")


def compute_situatedqa(predictions: list[dict[str, Any]], references: list[dict[str, Any]],
                       resamples: int = 0, data: str | None = None) -> dict[str, Any]:
    """The project's scores of predictions against the referenced examples (any order)."""
    if not references:
        raise ValueError("no references")
    tracks = {(r["track"], r["split"]) for r in references}
    if len(tracks) != 1:
        raise ValueError(f"the references name several tracks or splits: {sorted(tracks)}")
    track, split = tracks.pop()
    if all(r.get("gold") for r in references):
        gold = GoldSplit(track, split, [Example.from_json(r["gold"]) for r in references])
    else:
        from benchmark.harness.lm_eval_task import _release

        full = _release(data).get(track, split)
        wanted = {r["key"] for r in references}
        gold = GoldSplit(track, split, [e for e in full.examples if e.key in wanted])
        if len(gold) != len(wanted):
            missing = sorted(wanted - set(gold.keys))[:3]
            raise ValueError(f"references not in {track}/{split}: {missing}")
    identification = track_info(track).identification
    result = score_pairs(gold, ((p["key"], _value(p["prediction"], identification))
                                for p in predictions), resamples=resamples, fmt="evaluate")
    return {**result.metrics, "ci": {k: list(v) if v else None for k, v in result.ci.items()},
            "n": result.n, "scorer": fingerprint()}


class Situatedqa(evaluate.Metric):  # type: ignore[misc]
    """SituatedQA (see the card beside this file)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_KWARGS,
            features=datasets.Features({
                "predictions": {"key": datasets.Value("string"),
                                "prediction": datasets.Value("string")},
                "references": {"key": datasets.Value("string"),
                               "track": datasets.Value("string"),
                               "split": datasets.Value("string")},
            }),
            reference_urls=["https://github.com/mikejqzhang/SituatedQA"])

    def _compute(self, predictions: list[dict[str, Any]], references: list[dict[str, Any]],
                 resamples: int = 0, data: str | None = None) -> dict[str, Any]:
        return compute_situatedqa(predictions, references, resamples=resamples, data=data)
