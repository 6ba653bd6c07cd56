"""The benchmark's tracks, declared once: the registry every other module reads.

A track's declaration (TrackInfo) holds its key fields, partitions and their rule, metrics,
primary metric, display names (its title, its metrics' and source datasets' labels), its
plots, the paper's query form of its questions and the reader that turns records of the
release into gold examples. Formats, gold import, gold versions, the baselines and the
server read it and never test a track's name, so a new track is one declaration here (plus
its tests).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

from .example import Example, GoldError, example_key
from .normalize import normalize_answer
from .situations import (
    OUTDATED,
    PREMATURE,
    MarkRule,
    OtherAnswersRule,
    dated_other_answers,
    listed_other_answers,
    located_answers,
    located_other_answers,
)

SPLITS: Final = ("train", "dev", "test")


#: The official 28 common locations, compared after answer normalization.
COMMON_LOCATIONS: Final = (
    "united states", "india", "united kingdom", "australia", "canada", "china",
    "new york", "florida", "japan", "england", "uk", "germany", "spain", "georgia",
    "france", "new york city", "alabama", "russia", "kentucky", "ohio", "us",
    "california", "texas", "pakistan", "mexico", "new zealand", "usa", "israel",
)
#: Table 7 singles out the two most common location names, "United States" and "India";
#: "us" and "usa" stay in Other common, which reproduces Table 7's Other count (203).
US_LOCATIONS: Final = ("united states",)
INDIA_LOCATIONS: Final = ("india",)
#: Every way the release writes the country as a geo location, after answer normalization:
#: "United States", "the united states", "United states" (united states); "us", "US", "U.S."
#: (us); "USA", "usa" (usa); "america"; "United States of America" (and train's "united
#: state of america"). The US-answer figure reads these; the US partition keeps Table 7's
#: US_LOCATIONS. A region ("Southern United States", "Vermont, U.S.") or a continent
#: ("North America", "Americas") is not the country.
US_ANSWER_LOCATIONS: Final = ("united states", "us", "usa", "america",
                              "united states of america", "united state of america")

DEFAULT_PRESENT_THRESHOLD: Final = 2019
#: The split whose gold never leaves the server (no page, export, error or log line shows it).
HIDDEN_SPLIT: Final = "test"

TEMP_PARTITION_OF_DATE_TYPE: Final = {
    "orig": "static",
    "sampled_year": "sampled",
    "sampled_date": "sampled",
    "start": "start",
}
CURPREV_WHICH: Final = ("current", "previous")

#: Labels of the metrics that are not a partition's: every QA track's EM and EM Any, every
#: identification track's statistics. A track labels its partitions (partition_labels).
SHARED_LABELS: Final = {"em": "EM", "em_any": "EM Any", "accuracy": "Accuracy",
                        "precision": "Precision", "recall": "Recall", "f1": "F1",
                        "auc": "ROC AUC"}
#: The error classes' labels, and their figures' ("Outdated % of examples Static").
ERROR_CLASS_LABELS: Final = {
    "outdated": "Outdated", "premature": "Premature", "other_context": "Other context",
    "wrong_place": "Wrong place", "us_default": "US default", "unrelated": "Unrelated",
}
_FIGURE_LABELS: Final = {"rate": "% of examples", "share": "% of errors"}
#: The provenance figures (benchmark.provenance; not in the paper, never rank), in board
#: order: the score on the test examples whose gold was never published, on the others,
#: and the difference (released minus unreleased).
UNRELEASED: Final = "unreleased"
RELEASED: Final = "released"
GAP: Final = "contamination_gap"
PROVENANCE_METRICS: Final = (UNRELEASED, RELEASED, GAP)
PROVENANCE_LABELS: Final = {UNRELEASED: "Unreleased", RELEASED: "Released",
                            GAP: "Contamination gap"}
#: The figures after a model's declared knowledge cutoff (benchmark.cutoff; not in the
#: paper, never rank), in board order: the score and the outdated answers on the examples
#: whose answer took effect after the cutoff, then on those whose answer took effect by it.
EM_POST_CUTOFF: Final = "em_post_cutoff"
OUTDATED_POST_CUTOFF: Final = "outdated_rate_post_cutoff"
EM_PRE_CUTOFF: Final = "em_pre_cutoff"
OUTDATED_PRE_CUTOFF: Final = "outdated_rate_pre_cutoff"
CUTOFF_METRICS: Final = (EM_POST_CUTOFF, OUTDATED_POST_CUTOFF, EM_PRE_CUTOFF,
                         OUTDATED_PRE_CUTOFF)
CUTOFF_LABELS: Final = {EM_POST_CUTOFF: "After the cutoff",
                        OUTDATED_POST_CUTOFF: "Outdated after the cutoff",
                        EM_PRE_CUTOFF: "By the cutoff",
                        OUTDATED_PRE_CUTOFF: "Outdated by the cutoff"}
#: The knowledge horizon's column (a year; dated tracks: TrackInfo.horizon_metrics).
HORIZON: Final = "horizon"
#: The fresh windows of a later version's test board (benchmark.windows; not in the paper,
#: never rank the board): every published input release together, and one release,
#: `fresh_<release>`; a window's other figures are `<window>/<figure>`.
FRESH: Final = "fresh"
WINDOW_PREFIX: Final = FRESH + "_"
FIGURE_SEPARATOR: Final = "/"


def is_window(name: str) -> bool:
    """Whether a metric name is a window's own figure (its EM): `fresh`, `fresh_<release>`."""
    return (name == FRESH or name.startswith(WINDOW_PREFIX)) and FIGURE_SEPARATOR not in name


def window_label(name: str) -> str:
    """A window's display name: "Fresh (all releases)", "Fresh: 2031-contexts"."""
    return "Fresh (all releases)" if name == FRESH else f"Fresh: {name[len(WINDOW_PREFIX):]}"
#: The lenient metrics' families (their name's start) and labels, with EM's partition label.
_LENIENT_LABELS: Final = (("em_equiv", "EM equiv"), ("f1", "Token F1"))

#: Plots a track may have beside the bars of every metric that every submission has:
#: "years" (a submission's EM by the year of its examples' context date), "groups" (a
#: submission's EM per group: the track's GroupPlot) and "drift" (the top entries' EM
#: under every gold version, against each version's as-of date: for answers that move with
#: time).
PLOT_KINDS: Final = ("years", "groups", "drift")

_COMMON = frozenset(normalize_answer(loc) for loc in COMMON_LOCATIONS)
_US = frozenset(normalize_answer(loc) for loc in US_LOCATIONS)
_INDIA = frozenset(normalize_answer(loc) for loc in INDIA_LOCATIONS)
_US_ANSWER = frozenset(normalize_answer(loc) for loc in US_ANSWER_LOCATIONS)


@dataclass(frozen=True)
class ReleaseFile:
    """The release file a track is read from: FOLDER/STEM.SPLIT.jsonl."""

    folder: str
    stem: str

    def path(self, release_dir: Path, split: str) -> Path:
        """The file of one split under a release folder."""
        return release_dir / self.folder / f"{self.stem}.{split}.jsonl"


@dataclass(frozen=True)
class BuildOptions:
    """Choices of the gold import that are not in the release itself."""

    present_threshold: int = DEFAULT_PRESENT_THRESHOLD


@dataclass(frozen=True)
class GroupPlot:
    """A track's "groups" plot: a submission's EM per group, each group one of its metrics."""

    #: What a group is, in the plot's title and table ("location group").
    noun: str
    #: The groups' metrics, in the paper's order.
    metrics: tuple[str, ...]


#: Turns one record of the release into the track's examples (none, one or several).
Reader = Callable[["TrackInfo", Mapping[str, Any], BuildOptions], Iterator[Example]]
#: The partitions of an example from its context and label; ValueError names a bad value.
PartitionRule = Callable[[Mapping[str, str], "bool | None"], tuple[str, ...]]
#: The paper's query-modified form of a question, from the question and its context (a
#: mapping holding the track's context fields): Section 4, Table 3.
QueryForm = Callable[[str, Mapping[str, Any]], str]

PREVIOUS_PREFIX: Final = "previously "


def query_alone(question: str, context: Mapping[str, Any]) -> str:
    """The question as it is: a track without a context to add (present, identification)."""
    return question


def query_as_of(question: str, context: Mapping[str, Any]) -> str:
    """Temporal query modification: append "as of DATE"."""
    return f"{question} as of {context['date']}"


def query_in_location(question: str, context: Mapping[str, Any]) -> str:
    """Geographical query modification: append "in LOCATION" (lower-cased, as the release's
    edited questions have it)."""
    return f"{question} in {str(context['location']).lower()}"


def query_previously(question: str, context: Mapping[str, Any]) -> str:
    """Current or previous answer: "previously QUESTION" asks for the previous one (paper
    Section 6); the current one is asked with the question alone."""
    return f"{PREVIOUS_PREFIX}{question}" if context["which"] == "previous" else question


@dataclass(frozen=True)
class Mark:
    """A figure beside a track's error classes (benchmark/situations.py: marks): the wrong
    predictions equal to an answer the rule marks for their example, over the examples the
    rule does not leave outside; whatever class each has, so it is no class and its figures
    sum with none. Its figures are `{name}_rate{suffix}` and `{name}_share{suffix}`."""

    name: str
    label: str
    answers: MarkRule


@dataclass(frozen=True)
class ErrorRule:
    """How a QA track's wrong predictions are classified (benchmark/situations.py).

    `classes` are the reported classes in their order (names of situations.ERROR_CLASSES; a
    class also counts its situations.SUBCLASSES); `other_answers` gives each example's other
    answers by class from the gold alone; `companion` names the track whose split of the same
    name it also reads (temp: curprev, for the timeline's previous answers); `horizon` says
    that the contexts are dated, so the knowledge-horizon estimate applies; `mark` is a
    figure counted beside the classes (geo: the US answer).
    """

    classes: tuple[str, ...]
    other_answers: OtherAnswersRule
    companion: str | None = None
    horizon: bool = False
    mark: Mark | None = None

    @property
    def figures(self) -> tuple[str, ...]:
        """The names the error figures are reported for: the classes, then the mark."""
        return (*self.classes, *((self.mark.name,) if self.mark else ()))

    def label(self, name: str) -> str:
        """The display name of a class or of the mark ("US default", "US answer")."""
        return self.mark.label if self.mark and name == self.mark.name else (
            ERROR_CLASS_LABELS[name])


@dataclass(frozen=True)
class TrackInfo:
    """What a track is: its keys, partitions, metrics, primary metric and release reader."""

    name: str
    title: str
    metrics: tuple[str, ...]
    primary: str
    #: The context fields of an example, in key order (the key is id|field|field...).
    context_fields: tuple[str, ...]
    description: str
    #: True for the context-dependence identification tracks (a label, not an answer).
    identification: bool
    #: Every partition name an example of the track may carry.
    partitions: tuple[str, ...]
    release: ReleaseFile
    read: Reader
    #: Derives an example's partitions; None when each example names its own.
    partition_rule: PartitionRule | None = None
    #: Context fields whose values form a closed set.
    context_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Display names of the partitions its metrics are computed on (em_static: "Static").
    partition_labels: Mapping[str, str] = field(default_factory=dict)
    #: What each partition holds, as the rule that assigns an example to it (the metric
    #: card and the metrics pages define the columns with these).
    partition_rules: Mapping[str, str] = field(default_factory=dict)
    #: The paper's query-modified form of the track's questions (baselines' query-modified
    #: and finetuned settings).
    query: QueryForm = query_alone
    #: The context field whose value is an example's context type (curprev: which, current
    #: or previous answer); None when the whole track is one, named as the track. Baselines
    #: train one model (fine-tuning) or look answers up (nn-train) per context type.
    context_type_field: str | None = None
    #: Whether the paper fine-tunes a model per context type on the track (Section 4).
    fine_tuned: bool = False
    #: Display names of the source datasets its examples come from, by the metric suffix
    #: of the source (f1_marco: "MS MARCO").
    source_labels: Mapping[str, str] = field(default_factory=dict)
    #: The track's plots of PLOT_KINDS.
    plots: tuple[str, ...] = ()
    #: What the "groups" plot draws (with "groups" in plots).
    groups: GroupPlot | None = None
    #: Partition sizes of the paper's tables where they differ from the release's, by split
    #: then partition (the paper rows of a board were computed on these).
    paper_partition_sizes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    #: The situated error taxonomy of a QA track (None: identification tracks).
    errors: ErrorRule | None = None

    def __post_init__(self) -> None:
        """ValueError for a declaration that names an unknown plot or metric."""
        unlabelled = [m for m in self.metrics if m not in SHARED_LABELS and (
            not m.startswith("em_") or m.removeprefix("em_") not in self.partitions
            or m.removeprefix("em_") not in self.partition_labels)]
        if self.primary not in self.metrics or unlabelled:
            raise ValueError(f"track {self.name!r}: the primary metric must be one of its "
                             "metrics, each of them EM on a declared and labelled partition "
                             f"or one of {list(SHARED_LABELS)}; not {unlabelled}")
        unknown = [kind for kind in self.plots if kind not in PLOT_KINDS]
        if unknown:
            raise ValueError(f"track {self.name!r}: unknown plot kinds {unknown}; "
                             f"choose from {list(PLOT_KINDS)}")
        if ("groups" in self.plots) != (self.groups is not None) or not set(
                self.groups.metrics if self.groups else ()) <= set(self.metrics):
            raise ValueError(f"track {self.name!r}: a groups plot and its groups (some of the "
                             "track's metrics) are declared together")
        if self.context_type_field is not None and (
                self.context_type_field not in self.context_values):
            raise ValueError(f"track {self.name!r}: the context type field "
                             f"{self.context_type_field!r} needs its closed set of values")

    @property
    def context_types(self) -> tuple[str, ...]:
        """The track's context types (see context_type_field)."""
        if self.context_type_field is None:
            return (self.name,)
        return self.context_values[self.context_type_field]

    def context_type(self, context: Mapping[str, Any]) -> str:
        """The context type of an example with this context (or a record holding it)."""
        if self.context_type_field is None:
            return self.name
        return str(context[self.context_type_field])

    def source_label(self, source: str) -> str:
        """The display name of a source dataset, by its metric suffix (itself if undeclared)."""
        return self.source_labels.get(source, source)

    def label(self, metric: str) -> str:
        """A metric's display name on this track: "EM", "Static", "Token F1 Static", and per
        source dataset "F1 (MS MARCO)"."""
        if metric in SHARED_LABELS:
            return SHARED_LABELS[metric]
        if metric == HORIZON:
            return "Knowledge horizon"
        if is_window(metric):
            return window_label(metric)
        window, separator, figure = metric.partition(FIGURE_SEPARATOR)
        if separator and is_window(window):
            return f"{window_label(window)} · {self.label(figure)}"
        if metric in PROVENANCE_LABELS:
            return PROVENANCE_LABELS[metric]
        if metric in CUTOFF_LABELS:
            return CUTOFF_LABELS[metric]
        if metric in self.error_metrics:
            name, _, rest = metric.partition("_rate")
            kind = "rate"
            if not _:
                name, _, rest = metric.partition("_share")
                kind = "share"
            head = self.errors.label(name) if self.errors else ERROR_CLASS_LABELS[name]
            return " ".join([head, _FIGURE_LABELS[kind],
                             *([self.label("em" + rest)] if rest else [])])
        if metric.startswith("em_") and metric[3:] in self.partition_labels:
            return self.partition_labels[metric[3:]]
        if metric in self.lenient_metrics:
            for family, base in _LENIENT_LABELS:
                if metric.startswith(family):
                    suffix = metric.removeprefix(family)
                    return f"{base} {self.label('em' + suffix)}".replace(f"{base} EM", base)
        statistic, _, source = metric.partition("_")
        if not source or statistic not in SHARED_LABELS:
            return metric
        return f"{SHARED_LABELS[statistic]} ({self.source_label(source)})"

    @property
    def lenient_metrics(self) -> tuple[str, ...]:
        """Secondary metrics not in the paper (QA tracks): em_equiv and token f1 on EM's
        partitions (em_static -> em_equiv_static, f1_static); they never rank a board."""
        if self.identification:
            return ()
        suffixes = [name.removeprefix("em") for name in self.metrics]
        return (*(f"em_equiv{s}" for s in suffixes), *(f"f1{s}" for s in suffixes))

    @property
    def error_partitions(self) -> tuple[str, ...]:
        """The metric suffixes the error classes are reported on: EM's partitions but `any`
        ("" for the whole split, "_static", ...); empty without an error rule."""
        if self.errors is None:
            return ()
        return tuple(name.removeprefix("em") for name in self.metrics if name != "em_any")

    @property
    def error_metrics(self) -> tuple[str, ...]:
        """The error-class figures (not in the paper; never rank a board): per class and
        partition its rate among all examples, `{class}_rate{suffix}`, then its share of
        the wrong ones, `{class}_share{suffix}` (outdated_rate_static, us_default_share);
        the mark's after the classes' (us_answer_rate, among the examples it counts)."""
        if self.errors is None:
            return ()
        return tuple(f"{cls}_{kind}{suffix}" for kind in ERROR_FIGURES
                     for suffix in self.error_partitions for cls in self.errors.figures)

    @property
    def horizon_metrics(self) -> tuple[str, ...]:
        """("horizon",) on a track whose contexts are dated (the knowledge horizon's year, a
        board column; not in the paper, never ranks), else ()."""
        return (HORIZON,) if self.errors is not None and self.errors.horizon else ()

    @property
    def optional_metrics(self) -> tuple[str, ...]:
        """The columns not in the paper, shown on a board only when picked and never ranking
        it: the lenient metrics, the error figures and the knowledge horizon."""
        return (*self.lenient_metrics, *self.error_metrics, *self.horizon_metrics)

    def key(self, nq_id: int, context: Mapping[str, str]) -> str:
        """The key of the example with this NQ id and context."""
        return example_key(nq_id, (context[name] for name in self.context_fields))

    def partitions_of(self, context: Mapping[str, str], label: bool | None = None,
                      given: Sequence[str] | None = None) -> tuple[str, ...]:
        """An example's partitions (derived, or the one given); ValueError says why not."""
        if self.partition_rule is not None:
            return self.partition_rule(context, label)
        if given is None or len(given) != 1 or given[0] not in self.partitions:
            raise ValueError(
                f"'partitions' must be one of {list(self.partitions)} on track {self.name!r}")
        return tuple(given)


# --- partition rules ------------------------------------------------------------------------


def temp_partitions(context: Mapping[str, str], label: bool | None = None) -> tuple[str, ...]:
    """Static / sampled / start, from the date type (paper Table 5)."""
    date_type = context["date_type"]
    if date_type not in TEMP_PARTITION_OF_DATE_TYPE:
        raise ValueError(f"unknown date_type {date_type!r}")
    return (TEMP_PARTITION_OF_DATE_TYPE[date_type],)


def geo_partitions(location: str) -> tuple[str, str]:
    """Common/rare partition and the Table 7 group of a location."""
    normalized = normalize_answer(location)
    if normalized not in _COMMON:
        return ("rare", "rare")
    if normalized in _US:
        return ("common", "us")
    if normalized in _INDIA:
        return ("common", "india")
    return ("common", "other_common")


def geo_location_partitions(context: Mapping[str, str],
                            label: bool | None = None) -> tuple[str, ...]:
    """Common or rare, and for a common location its Table 7 group."""
    partition, group = geo_partitions(context["location"])
    return (partition,) if group == "rare" else (partition, group)


def curprev_partitions(context: Mapping[str, str],
                       label: bool | None = None) -> tuple[str, ...]:
    """Current or previous, as the example asks."""
    which = context["which"]
    if which not in CURPREV_WHICH:
        raise ValueError("'which' must be current/previous")
    return (which,)


def is_us_location(location: str) -> bool:
    """True for a location of the US partition (Table 7's "United States" group)."""
    return geo_partitions(location)[1] == "us"


def is_us_answer_location(location: str) -> bool:
    """True for a location the US-answer figure reads as the US (US_ANSWER_LOCATIONS)."""
    return normalize_answer(location) in _US_ANSWER


def curprev_error_class(example: Example) -> int:
    """A current answer's other answers are outdated, a previous answer's premature."""
    return OUTDATED if example.context.get("which") == CURPREV_WHICH[0] else PREMATURE


def dependence_partitions(context: Mapping[str, str],
                          label: bool | None = None) -> tuple[str, ...]:
    """Dependent or independent, from the label."""
    return ("dependent" if label else "independent",)


def present_partition(record: Mapping[str, Any], threshold: int) -> str | None:
    """Stable/Updated by the data README's rule, or None when no timeline has a start."""
    years = [
        timeline["cur_start"]["year"]
        for timeline in record.get("timelines") or ()
        if timeline.get("cur_start") and timeline["cur_start"].get("year") is not None
    ]
    if not years:
        return None
    return "updated" if all(year >= threshold for year in years) else "stable"


# --- readers of the release's records -------------------------------------------------------


def read_situated(info: TrackInfo, r: Mapping[str, Any],
                  options: BuildOptions) -> Iterator[Example]:
    """A qa_data record (temp, geo): one example in its context, with its answers."""
    context = {name: r[name] for name in info.context_fields}
    yield Example(
        key=info.key(r["id"], context), id=int(r["id"]), question=r["question"],
        context=context, answers=tuple(r["answer"]), any_answers=tuple(r["any_answer"]),
        partitions=info.partitions_of(context),
    )


def read_identification(info: TrackInfo, r: Mapping[str, Any],
                        options: BuildOptions) -> Iterator[Example]:
    """An id_data record: label = is_dependent == "yes"."""
    if r["is_dependent"] not in ("yes", "no"):
        raise GoldError(f"id {r['id']}: is_dependent must be yes/no, got {r['is_dependent']!r}")
    label = r["is_dependent"] == "yes"
    yield Example(
        key=info.key(r["id"], {}), id=int(r["id"]), question=r["question"],
        partitions=info.partitions_of({}, label), label=label, source=r.get("source_dataset"),
    )


def read_present(info: TrackInfo, r: Mapping[str, Any],
                 options: BuildOptions) -> Iterator[Example]:
    """A raw_data/temp record with a dated timeline: gold = cur_answers."""
    partition = present_partition(r, options.present_threshold)
    if partition is not None:
        yield Example(
            key=info.key(r["id"], {}), id=int(r["id"]), question=r["question"],
            answers=tuple(r["cur_answers"]),
            any_answers=tuple(r["cur_answers"]) + tuple(r.get("prev_answers") or ()),
            partitions=info.partitions_of({}, None, (partition,)),
        )


def read_curprev(info: TrackInfo, r: Mapping[str, Any],
                 options: BuildOptions) -> Iterator[Example]:
    """A temporally dependent raw_data/temp record: its current and previous answers."""
    if not r.get("is_dependent"):
        return
    current = tuple(r.get("cur_answers") or ())
    previous = tuple(r.get("prev_answers") or ())
    for which, answers in zip(CURPREV_WHICH, (current, previous), strict=True):
        if answers:
            context = {"which": which}
            yield Example(
                key=info.key(r["id"], context), id=int(r["id"]), question=r["question"],
                context=context, answers=answers, any_answers=current + previous,
                partitions=info.partitions_of(context),
            )


#: The two figures of every error class: share of all examples, share of the wrong ones.
ERROR_FIGURES: Final = ("rate", "share")

_ID_METRICS: Final = ("accuracy", "precision", "recall", "f1")
_DEPENDENCE: Final = ("dependent", "independent")
_DEPENDENCE_RULES: Final = {"dependent": "questions whose answer depends on the {} "
                                         "(is_dependent yes)",
                            "independent": "the others"}
#: The source datasets of the identification questions (id_data's source_dataset, up to its
#: first "."): the paper's names (Table 10), MS MARCO and TyDi QA as those datasets spell
#: theirs.
_ID_SOURCES: Final = {"nq_table": "NQ-Table", "nq_passage": "NQ-Passage",
                      "webq": "WebQuestions", "tydi": "TyDi QA", "marco": "MS MARCO"}

TRACK_INFO: Final[dict[str, TrackInfo]] = {
    "temp": TrackInfo(
        "temp", "Temporal SituatedQA",
        ("em", "em_static", "em_sampled", "em_start", "em_any"), "em",
        ("date", "date_type"),
        "Answer the question as of the given date (paper Tables 5 and 6).",
        identification=False, partitions=("static", "sampled", "start"),
        partition_labels={"static": "Static", "sampled": "Sampled", "start": "Start"},
        partition_rules={
            "static": "the question's original date (date_type orig)",
            "sampled": "a date sampled for the question (date_type sampled_year or sampled_date)",
            "start": "the date an answer started to hold (date_type start)"},
        release=ReleaseFile("qa_data", "temp"), read=read_situated,
        partition_rule=temp_partitions, query=query_as_of, fine_tuned=True,
        plots=("years", "drift"),
        paper_partition_sizes={"test": {"sampled": 1472, "start": 923}},
        errors=ErrorRule(("outdated", "premature", "other_context", "unrelated"),
                         partial(dated_other_answers, date_field="date", which_field="which",
                                 timeline_sides=CURPREV_WHICH),
                         companion="curprev", horizon=True),
    ),
    "geo": TrackInfo(
        "geo", "Geographical SituatedQA",
        ("em", "em_common", "em_rare", "em_any", "em_us", "em_india", "em_other_common"), "em",
        ("location",),
        "Answer the question for the given location (paper Tables 5, 6 and 7).",
        identification=False, partitions=("common", "rare", "us", "india", "other_common"),
        partition_labels={"common": "Common", "rare": "Rare", "us": "US", "india": "India",
                          "other_common": "Other common"},
        partition_rules={
            "common": "a location among the 28 official common ones (after normalization)",
            "rare": "any other location",
            "us": "the location United States",
            "india": "the location India",
            "other_common": "the 26 other common locations (us and usa included)"},
        release=ReleaseFile("qa_data", "geo"), read=read_situated,
        partition_rule=geo_location_partitions, query=query_in_location, fine_tuned=True,
        plots=("groups",), groups=GroupPlot(
            "location group", ("em_us", "em_india", "em_other_common", "em_rare")),
        paper_partition_sizes={"test": {"common": 265, "us": 42}},
        errors=ErrorRule(("wrong_place", "us_default", "other_context", "unrelated"),
                         partial(located_other_answers, is_us=is_us_location,
                                 location_field="location"),
                         mark=Mark("us_answer", "US answer",
                                   partial(located_answers, marked=is_us_answer_location,
                                           location_field="location"))),
    ),
    "temp-id": TrackInfo(
        "temp-id", "Temporal dependence identification",
        _ID_METRICS, "f1", (),
        "Is the answer to this question time-dependent? (paper Table 4).",
        identification=True, partitions=_DEPENDENCE,
        partition_rules={k: v.format("time") for k, v in _DEPENDENCE_RULES.items()},
        release=ReleaseFile("id_data", "temp"), read=read_identification,
        partition_rule=dependence_partitions, source_labels=_ID_SOURCES,
    ),
    "geo-id": TrackInfo(
        "geo-id", "Geographical dependence identification",
        _ID_METRICS, "f1", (),
        "Is the answer to this question location-dependent? (paper Table 4).",
        identification=True, partitions=_DEPENDENCE,
        partition_rules={k: v.format("location") for k, v in _DEPENDENCE_RULES.items()},
        release=ReleaseFile("id_data", "geo"), read=read_identification,
        partition_rule=dependence_partitions,
    ),
    "present": TrackInfo(
        "present", "Present-day answers",
        ("em", "em_stable", "em_updated"), "em", (),
        "Answer as of the data collection (Feb 2021), split Stable / Updated (paper Table 9).",
        identification=False, partitions=("stable", "updated"),
        partition_labels={"stable": "Stable", "updated": "Updated"},
        partition_rules={"stable": "questions with a timeline started before 2019",
                         "updated": "questions whose every timeline started in 2019 or later"},
        release=ReleaseFile("raw_data", "temp"), read=read_present, plots=("drift",),
        errors=ErrorRule(("outdated", "unrelated"),
                         partial(listed_other_answers, class_of=lambda example: OUTDATED)),
    ),
    "curprev": TrackInfo(
        "curprev", "Current and previous answers",
        ("em", "em_current", "em_previous"), "em", ("which",),
        "Give the current or the previous answer of a changing fact (paper Table 8).",
        identification=False, partitions=CURPREV_WHICH,
        partition_labels={"current": "Current", "previous": "Previous"},
        partition_rules={"current": "the current answer (non-empty cur_answers)",
                         "previous": "the previous answer (non-empty prev_answers)"},
        release=ReleaseFile("raw_data", "temp"), read=read_curprev,
        partition_rule=curprev_partitions, context_values={"which": CURPREV_WHICH},
        query=query_previously, context_type_field="which", fine_tuned=True,
        errors=ErrorRule(("outdated", "premature", "unrelated"),
                         partial(listed_other_answers, class_of=curprev_error_class)),
    ),
}
QA_TRACKS: Final = tuple(t for t, info in TRACK_INFO.items() if not info.identification)
ID_TRACKS: Final = tuple(t for t, info in TRACK_INFO.items() if info.identification)
TRACKS: Final = tuple(TRACK_INFO)


def numbered_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of every JSON object of a release file; GoldError names a bad line."""
    if not path.is_file():
        raise GoldError(f"{path}: release file not found")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise GoldError(f"{path}:{number}: invalid JSON ({exc})") from None
            if not isinstance(record, dict):
                raise GoldError(f"{path}:{number}: expected a JSON object")
            yield number, record


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSON Lines file of the release."""
    return [record for _, record in numbered_records(path)]


def read_track(
    release_dir: Path, track: str, split: str, options: BuildOptions | None = None,
    *, cache: dict[Path, list[tuple[int, dict[str, Any]]]] | None = None,
) -> list[Example]:
    """A track's examples of one split, read from a release folder.

    `cache` keeps the records of each file read, for tracks that share one (present and
    curprev both read raw_data/temp). GoldError names the file, line and missing field.
    """
    info = track_info(track)
    path = info.release.path(release_dir, check_split(split))
    if cache is None:
        records = list(numbered_records(path))
    else:
        if path not in cache:
            cache[path] = list(numbered_records(path))
        records = cache[path]
    examples: list[Example] = []
    for line, record in records:
        try:
            examples.extend(info.read(info, record, options or BuildOptions()))
        except KeyError as exc:
            raise GoldError(f"{path}:{line}: record has no field {exc}") from None
        except (TypeError, ValueError, GoldError) as exc:
            raise GoldError(f"{path}:{line}: {exc}") from None
    return examples


#: Every metric's label on every track (TrackInfo.label gives one track's, per-source
#: metrics included).
METRIC_LABELS: Final[dict[str, str]] = {
    metric: info.label(metric) for info in TRACK_INFO.values()
    for metric in (*info.metrics, *info.lenient_metrics)}
METRIC_LABELS.update(SHARED_LABELS)
METRIC_LABELS.update(PROVENANCE_LABELS)
METRIC_LABELS.update(CUTOFF_LABELS)


for _info in TRACK_INFO.values():
    for _metric in (*_info.error_metrics, *_info.horizon_metrics):
        METRIC_LABELS.setdefault(_metric, _info.label(_metric))


class UnknownTrackError(ValueError):
    """Raised for a track or split name the benchmark does not have."""


def track_info(track: str) -> TrackInfo:
    """Return the description of a track, or raise UnknownTrackError."""
    try:
        return TRACK_INFO[track]
    except KeyError:
        raise UnknownTrackError(
            f"unknown track {track!r}; choose one of {', '.join(TRACKS)}"
        ) from None


def check_split(split: str) -> str:
    """Return the split name if it exists, or raise UnknownTrackError."""
    if split not in SPLITS:
        raise UnknownTrackError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    return split
