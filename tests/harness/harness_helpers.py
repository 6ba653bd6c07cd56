"""Harness files written the way lm-eval and Inspect write them, for tiny gold splits."""

from __future__ import annotations

import hashlib
import io
import json
import random
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

from benchmark.gold import GoldSplit
from benchmark.harness import conformance_cases
from benchmark.harness.docs import document, prompt, target


def tiny(name: str = "temp-a") -> tuple[GoldSplit, dict[str, str]]:
    """A conformance case's gold and predictions."""
    case = next(c for c in conformance_cases() if c.name == name)
    return case.gold, case.predictions


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fewshot_prompt(doc: Mapping[str, Any], track: str, shots: Sequence[Mapping[str, Any]]) -> str:
    """A document's prompt after its shots, as lm-eval joins them (our tasks' delimiters)."""
    return "".join(f"{prompt(shot, track)} {target(shot, track)}\n\n" for shot in shots) \
        + prompt(doc, track)


def sample_line(doc_id: int, doc: Mapping[str, Any], track: str, response: str,
                filter_name: str = "first-line",
                shots: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """One record of an lm-eval samples file, as evaluator.py and evaluation_tracker write it
    (`shots`: the documents of a few-shot prompt, whole in `arguments` as lm-eval logs it)."""
    from benchmark.harness.lm_eval_task import process_results

    text, gold = fewshot_prompt(doc, track, shots), target(doc, track)
    metrics = process_results(doc, [response])  # every metric's item, as lm-eval logs them
    return {
        "doc_id": doc_id, "doc": dict(doc), "target": gold,
        "arguments": {"gen_args_0": {"arg_0": text, "arg_1": {"until": ["\n"]}}},
        "resps": [[response]], "filtered_resps": [response], "filter": filter_name,
        "metrics": list(metrics),
        "doc_hash": sha(json.dumps(doc, indent=2, ensure_ascii=False)),
        "prompt_hash": sha(text), "target_hash": sha(gold), **metrics,
    }


def samples_file(gold: GoldSplit, predictions: Mapping[str, str], *,
                 filters: Sequence[str] = ("first-line",), split: str | None = None,
                 only: Sequence[str] | None = None, shots: Sequence[Mapping[str, Any]] = (),
                 num_fewshot: int = 0, model: str = "tiny-model") -> bytes:
    """A samples file of our task over a gold split (every filter writes every document);
    with `num_fewshot`, each prompt holds that many of `shots` (drawn as lm-eval's sampler
    draws them: a seeded random sample a document)."""
    draw, pool = random.Random(1234), list(shots)
    lines = []
    for filter_name in filters:
        for doc_id, example in enumerate(gold.examples):
            if only is not None and example.key not in only:
                continue
            doc = document(example, gold.track, split or gold.split, harness="lm-eval 0.4.13",
                           model=model)
            answer = predictions[example.key]
            if filter_name != filters[0]:
                answer = f"other {answer}"
            few = draw.sample(pool, num_fewshot) if num_fewshot else ()
            lines.append(sample_line(doc_id, doc, gold.track, answer, filter_name, few))
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def inspect_log(gold: GoldSplit, predictions: Mapping[str, str], *,
                task: str = "situatedqa/temp") -> dict[str, Any]:
    """An Inspect log (the --log-format json document) of our task over a gold split."""
    samples = []
    for example in gold.examples:
        doc = document(example, gold.track, gold.split, harness="inspect 0.3.285")
        samples.append({"id": example.key, "epoch": 1, "input": prompt(doc, gold.track),
                        "target": target(doc, gold.track), "metadata": doc,
                        "output": {"model": "hf/tiny",
                                   "completion": predictions[example.key] + "\nmore text"}})
    return {"version": 2, "status": "success",
            "eval": {"task": task, "model": "hf/tiny", "packages": {"inspect_ai": "0.3.285"}},
            "samples": samples}


def eval_archive(log: Mapping[str, Any]) -> bytes:
    """The log as a .eval zip archive (header.json and one member a sample)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({k: v for k, v in log.items()
                                                    if k != "samples"}))
        for sample in log["samples"]:
            archive.writestr(f"samples/{sample['id']}_epoch_1.json", json.dumps(sample))
    return out.getvalue()


def tiny_model(folder: Any, words: Sequence[str] = ()) -> Any:
    """A 2-layer GPT-2 made from a config, with a word-level tokenizer written here: saved
    to `folder` (no download). Its outputs are random words, quickly."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    base = ["<unk>", "<eos>", "\n", "yes", "no", "the", "of", "in", "as", "answer", "question"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys([*base, *words]))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>",
                                   eos_token="<eos>", pad_token="<eos>")
    fast.save_pretrained(folder)
    import torch

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=512, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=1, eos_token_id=1, pad_token_id=1)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def generated(gold: Any, seed: int) -> list[dict[str, str]]:
    """Predictions mixing gold answers, other contexts' answers, noise and empty strings."""
    rng = random.Random(seed)
    rows = []
    for example in gold.examples:
        choice = rng.random()
        if choice < 0.3:
            answer = rng.choice(example.answers)
        elif choice < 0.5:
            answer = rng.choice(example.any_answers).upper() + "."
        elif choice < 0.6:
            answer = ""
        else:
            answer = f"the {rng.randrange(10_000)}"
        rows.append({"key": example.key, "prediction": answer})
    rng.shuffle(rows)
    return rows
