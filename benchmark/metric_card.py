"""The metric definitions, written once: the metric card (benchmark/README.md) and the
server's metrics pages are both made from here.

`markdown()` is the card's "Metric definitions" section, verbatim between its markers (a
test compares them; `python -m benchmark.metric_card` prints it);
`definition(track, metric)` is one column's sentence (the leaderboards' header tooltips and
the metrics pages).
"""

from __future__ import annotations

from typing import Final

from .equivalence import lenient_family
from .metrics import DEFAULT_RESAMPLES, DEFAULT_SEED
from .tracks import (
    CUTOFF_LABELS,
    CUTOFF_METRICS,
    EM_POST_CUTOFF,
    EM_PRE_CUTOFF,
    FRESH,
    GAP,
    HORIZON,
    OUTDATED_POST_CUTOFF,
    OUTDATED_PRE_CUTOFF,
    RELEASED,
    TRACK_INFO,
    TRACKS,
    UNRELEASED,
    US_ANSWER_LOCATIONS,
    US_LOCATIONS,
    is_window,
)

NORMALIZATION: Final = (
    "Answers are compared after the SQuAD / DrQA normalization: Unicode NFD, lower-case, every "
    "ASCII punctuation character deleted, the words a, an and the replaced by a space, white "
    "space collapsed. EM counts a prediction right when its normalized form equals the "
    "normalized form of any gold answer of its context.")
CI_METHOD: Final = (
    "Every metric is a percentage (0-100) with a 95% confidence interval, a percentile "
    "bootstrap unless a share is at 0% or 100%: the examples of the metric's partition are "
    f"resampled with replacement ({DEFAULT_RESAMPLES:,} resamples offline; the server's count "
    f"is on its metrics pages), seeded (seed {DEFAULT_SEED}, one stream per metric name), so "
    "an interval is reproducible. A share (EM, em_equiv, accuracy, precision, recall, an "
    "error-class rate or share, unreleased, released; token F1 when every example's F1 is 0, "
    "or every one 1) at 0% or 100% takes the Wilson score interval instead: no resample of "
    "0 right in n can hold a right one, so the bootstrap's interval would be a point, as "
    "narrow on 3 examples as on 3,000. The contamination gap takes Newcombe's hybrid score "
    "interval (method 10, from the two sides' Wilson intervals) when either side is at 0% or "
    "100%. A metric over an empty partition is undefined (null), never 0.")
RANK_GROUPS: Final = (
    "Walking down a board ranked by its primary metric, an entry joins the group of the entry "
    "directly above it when the two-sided paired bootstrap test of their difference (same "
    "examples, same resamples) gives p >= 0.05; otherwise it starts a new group. Entries in one "
    "group are not separated by the test.")

#: The lenient families in a few words (LENIENT_RULES has each rule in full).
LENIENT_NAMES: Final = {
    "em_equiv": "EM, or the same date, year range or number written another way",
    "f1": "SQuAD token F1 after the same normalization, partial credit",
}
_ID_STATISTICS: Final = {
    "accuracy": "the share of questions labelled right",
    "precision": "of the questions labelled dependent, the share that are (0 when none is)",
    "recall": "of the dependent questions, the share labelled dependent",
    "f1": "the harmonic mean of precision and recall, positive = context-dependent (ranks "
          "the board)",
    "auc": "ROC AUC of the scores (Mann-Whitney U with average ranks for ties), when a file "
           "gives scores",
}


#: Each error class in a few words (benchmark/situations.py has every tie rule).
ERROR_CLASS_NAMES: Final = {
    "outdated": "the answer of an earlier context or the previous answer",
    "premature": "the answer of a later context or the current answer",
    "other_context": "the answer of a context that cannot be ordered against this one",
    "wrong_place": "the answer of another location",
    "us_default": "the answer of another location, a US one",
    "unrelated": "none of the question's other answers",
}
#: Each mark (a figure beside the classes, tracks.Mark) in a few words: what it marks, and
#: the examples it counts.
MARK_NAMES: Final = {
    "us_answer": "the answer of a record of the question located in the US, whether or not "
                 "another location shares it",
}
MARK_EXAMPLES: Final = {"us_answer": "the examples whose location is not the US"}
#: The CLI's footnote to a mark's rows.
MARK_NOTES: Final = {
    "us_answer": "no class (a US default, wrong-place or other-context answer alike): "
                 "among the examples not located in the US, the share whose wrong prediction "
                 "is an answer of a US record of the question; see the metric card.",
}


def _quoted(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names)


US_FIGURES: Final = (
    "`us_default_rate` and `us_answer_rate` (geo; not in the paper, never rank) both count "
    "wrong answers that are a United States answer, by two rules. **US default** is an error "
    "class: an other location's answer that only US locations give, a US location being one "
    f"that normalizes to {_quoted(US_LOCATIONS)} (the US partition's rule, which reproduces "
    "Table 7's counts); an answer a non-US location also gives is wrong place, and so is the "
    "answer of a location written `US` or `USA`. With the other classes it sums to the wrong "
    "answers. **US answer** is the paper's US bias (Section 5.2, Table 7: a model assumes "
    "the US when it answers as if the question were asked there): over the examples whose "
    "location is not the US, the share whose wrong prediction equals (after EM's "
    "normalization) an answer of a record of the same question located in the US, whether or "
    "not another location shares it and whatever its class (US default, wrong place, "
    "other-context); `us_answer_share` is its share of those examples' wrong answers. Here a "
    f"location is the US when it normalizes to one of {_quoted(US_ANSWER_LOCATIONS)} (the "
    "release writes United States, the united states, United states, us, US, USA, usa, "
    "america, United States of America); regions and continents (`Southern United States`, "
    "`Vermont, U.S.`, `North America`) are not. It is no class and sums with none. Both "
    "exist because they answer two questions: US default counts the errors that nothing but "
    "a US answer explains, a lower bound of the bias; US answer counts how often a model "
    "answers as the US would, the paper's reading, including an answer the US shares with "
    "another location (the gold cannot say which of the two the model assumed). Read as the "
    "US bias, `us_default_rate` underestimates it.")

#: The outdated figures' bound on temp dev, as `error-classes --earlier` counts it (a test
#: compares these with the command).
OUTDATED_BOUND_SPLIT: Final = "dev"
OUTDATED_BOUND_COUNTS: Final = {"earlier_answers": 1657, "other_context": 206}
OUTDATED_BOUND: Final = (
    "`outdated_rate` (temp; not in the paper, never ranks) is a lower bound of the stale "
    "answers: an answer an earlier context gives is other-context, not outdated, when some "
    "context lists it beside the example's own answer (an alias) or a later context gives it "
    "again (it came back). On temp "
    f"{OUTDATED_BOUND_SPLIT}, {OUTDATED_BOUND_COUNTS['other_context']:,} of the "
    f"{OUTDATED_BOUND_COUNTS['earlier_answers']:,} earlier answers (the other answers an "
    "earlier context or the timeline's previous answer carries, one per example and answer), "
    f"{100 * OUTDATED_BOUND_COUNTS['other_context'] / OUTDATED_BOUND_COUNTS['earlier_answers']:.1f}"
    "%, are other-context under these two rules: `python -m benchmark error-classes --track "
    f"temp --split {OUTDATED_BOUND_SPLIT} --earlier`. A stale answer among them counts in "
    "`other_context_rate`, not in `outdated_rate`.")

HORIZON_DEFINITION: Final = (
    "Not in the paper, never ranks: the knowledge horizon, the latest year up to which the "
    "answers track the gold (the change point of EM by the year an answer took effect), "
    "with a bootstrap CI; empty when the data cannot place it.")


PROVENANCE_DEFINITIONS: Final = {
    UNRELEASED: "Not in the paper, never ranks: {statistic} on the test examples whose gold "
                "answer was never published (added or changed by a gold version after the "
                "release); what to trust when contamination matters.",
    RELEASED: "Not in the paper, never ranks: {statistic} on the test examples whose gold "
              "answer is the public release's.",
    GAP: "Not in the paper, never ranks: released minus unreleased {statistic}, in points, "
         "its CI from resampling the two example sets apart (Newcombe's hybrid score interval "
         "when either side is at 0% or 100%); its n is the two counts it compares "
         "(released's and unreleased's), never the split's. An indication of contamination, "
         "not a proof: the new examples may simply be harder.",
}


#: The figures after and by a submission's declared knowledge cutoff (benchmark.cutoff).
CUTOFF_DEFINITIONS: Final = {
    EM_POST_CUTOFF: "Not in the paper, never ranks: {statistic} on the examples whose answer "
                    "took effect after the submission's declared knowledge cutoff (a "
                    "campaign's answer: the date its annotators gave, else the campaign's "
                    "as-of date; temp: January 1 of the year its answer replaced an earlier "
                    "one), with its count and its Wilson score interval; absent without a "
                    "declared cutoff.",
    OUTDATED_POST_CUTOFF: "Not in the paper, never ranks: the share of the examples whose "
                          "answer took effect after the declared cutoff answered with an "
                          "outdated answer, with its Wilson score interval.",
    EM_PRE_CUTOFF: "Not in the paper, never ranks: {statistic} on the examples whose answer "
                   "took effect on or before the declared cutoff, with its count and its "
                   "Wilson score interval.",
    OUTDATED_PRE_CUTOFF: "Not in the paper, never ranks: the share of the examples whose "
                         "answer took effect on or before the declared cutoff answered with "
                         "an outdated answer, with its Wilson score interval.",
}
CUTOFF_RULE: Final = (
    "A submission may declare its model's knowledge cutoff (`knowledge_cutoff`, a date). An "
    "example's answer took effect on the date an annotation campaign gave it (the "
    "annotators' date in effect, else the campaign's as-of date); else, on temp, on "
    "January 1 of the year its answer replaced an earlier, different one (the year the "
    "knowledge horizon bins by). An example without such a date (an answer that never "
    "replaced another, whose start nothing records; geo's release) is on neither side: it "
    "would blur a side's meaning. The figures count the examples the submission was given; "
    "their intervals are the Wilson score interval at every count, as the sets are small.")
CUTOFF_LIMITATION: Final = (
    "Contamination cannot touch the post-cutoff figure: those answers did not exist when the "
    "training data was collected. A closed-book model can only be outdated there (a "
    "right answer from one is a guess, or its cutoff was declared too early); a retrieval "
    "system's figure shows whether it reads the present. The figures are only as good as "
    "the declared date (the server checks that it is a past date, not that it is true) "
    "and the dates the gold gives: a year-only date counts from January 1, and a change "
    "between two sampled contexts is dated by the later one.")


WINDOW_DEFINITIONS: Final = {
    FRESH: "Not in the paper, never ranks the board: {statistic} on the fresh test examples "
           "of every published input release (inputs a gold version added after the "
           "release), for an entry that answered all of them; its CI the Wilson score "
           "interval at every count. An entry that did not answer them shows —, never 0.",
    "fresh_<release>": "Not in the paper, never ranks the board: {statistic} on the fresh "
                       "test examples of one input release, for the entries that answered "
                       "it (— for the others), with its count and its Wilson score "
                       "interval; sorted by it, a board ranks only those entries.",
}


def definition(track: str, metric: str) -> str:
    """One sentence defining a metric column of a track."""
    info = TRACK_INFO[track]
    if is_window(metric):
        key = FRESH if metric == FRESH else "fresh_<release>"
        return WINDOW_DEFINITIONS[key].format(
            statistic="accuracy" if info.identification else "EM")
    if metric == HORIZON and metric in info.horizon_metrics:
        return HORIZON_DEFINITION
    if metric in PROVENANCE_DEFINITIONS:
        return PROVENANCE_DEFINITIONS[metric].format(
            statistic="accuracy" if info.identification else "EM")
    if metric in CUTOFF_DEFINITIONS:
        return CUTOFF_DEFINITIONS[metric].format(
            statistic="accuracy" if info.identification else "EM")
    if metric in info.error_metrics:
        for kind, whole in (("_rate", "of the examples"), ("_share", "of the wrong answers")):
            name, found, suffix = metric.partition(kind)
            if found and name in MARK_NAMES:
                whole = ("of " if kind == "_rate" else "of the wrong answers of ") + (
                    MARK_EXAMPLES[name])
                return (f"Not in the paper, never ranks, no error class: the share {whole} "
                        f"whose prediction is {MARK_NAMES[name]} ({info.label(name + kind)})"
                        f"{_where(track, suffix.removeprefix('_'))}.")
            if found:
                return (f"Not in the paper, never ranks: the share {whole} whose prediction "
                        f"is {ERROR_CLASS_NAMES[name]} ({info.label(name + kind)})"
                        f"{_where(track, suffix.removeprefix('_'))}.")
    if info.identification:
        statistic, _, source = metric.partition("_")
        text = _ID_STATISTICS.get(statistic, metric)
        return (f"{text[0].upper()}{text[1:]}, on the questions from {source}." if source
                else f"{text[0].upper()}{text[1:]}.")
    family = lenient_family(metric)
    suffix = metric.removeprefix(family or "em").removeprefix("_")
    if family is not None:
        return f"Not in the paper, never ranks: {LENIENT_NAMES[family]}{_where(track, suffix)}."
    if suffix == "any":
        return ("EM against the answers of every context of the question (any_answer): right "
                "in some context, not necessarily the asked one.")
    lead = "Exact match (the paper's EM, ranks the board)" if not suffix else "Exact match"
    return f"{lead}{_where(track, suffix)}."


def _where(track: str, suffix: str) -> str:
    if suffix == "any":
        return ", against the answers of every context of the question"
    if not suffix:
        return ", over every example"
    info = TRACK_INFO[track]
    rule = info.partition_rules.get(suffix)
    return f", over {rule}" if rule else f", over the partition {info.label('em_' + suffix)}"


def markdown() -> str:
    """The metric card's "Metric definitions" section."""
    lines = ["### Metric definitions", "", NORMALIZATION, "", CI_METHOD, "", RANK_GROUPS, ""]
    for track in TRACKS:
        info = TRACK_INFO[track]
        lines += [f"**{track}** ({info.title}):", ""]
        for metric in info.metrics:
            lines.append(f"- `{metric}` ({info.label(metric)}): "
                         f"{definition(track, metric)}")
        if info.identification:
            lines.append("- `{statistic}_{source}`: each statistic on the questions of one "
                         "source dataset")
        else:
            lines.append("- `em_equiv*`, `f1*` (not in the paper, never rank): "
                         + "; ".join(f"`{family}`: {text}" for family, text in
                                     LENIENT_NAMES.items()) + "; on each partition of EM")
        lines.append("")
    lines += ["**US default and US answer:**", "", US_FIGURES, "",
              "**Outdated, a lower bound:**", "", OUTDATED_BOUND, "",
              "**After a model's cutoff:**", "", CUTOFF_RULE, ""]
    lines += [f"- `{metric}` ({CUTOFF_LABELS[metric]}): "
              f"{CUTOFF_DEFINITIONS[metric].format(statistic='EM')}"
              for metric in CUTOFF_METRICS]
    lines += ["", f"Limitations: {CUTOFF_LIMITATION}", ""]
    lines.append("The paper's partition sizes where the release's differ:")
    lines.append("")
    for track in TRACKS:
        info = TRACK_INFO[track]
        for split, sizes in info.paper_partition_sizes.items():
            lines.append(f"- {track} {split}: " + ", ".join(
                f"{info.label('em_' + name)} {size:,} in the paper"
                for name, size in sizes.items()))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
