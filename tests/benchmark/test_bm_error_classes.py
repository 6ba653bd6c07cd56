"""The situated error classes: hand-built gold/prediction pairs with hand-computed classes,
figures and tie rules; the bootstrap they share with EM; paired comparison; incremental
rescoring; the registry's declarations."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pytest
from bm_helpers import curprev_example, geo_example, temp_example

from benchmark import Example, GoldSplit, Predictions, score
from benchmark import incremental as inc
from benchmark.error_classes import (
    ERROR_CLASSES,
    build_error_tables,
    classify,
    compare_errors,
    error_metrics,
    possible_counts,
)
from benchmark.gold import question_key
from benchmark.metrics import count_interval, rng_for
from benchmark.normalize import normalize_answer
from benchmark.situations import (
    CORRECT_CLASS,
    EARLIER,
    LATER,
    OTHER_CONTEXT,
    OUTDATED,
    PREMATURE,
    UNORDERED,
    UNRELATED,
    US_DEFAULT,
    WRONG_PLACE,
    date_span,
    direction,
)
from benchmark.tracks import ID_TRACKS, METRIC_LABELS, QA_TRACKS, TRACK_INFO
from benchmark.versions import realign

C, OD, P, OC, WP, US, U = (CORRECT_CLASS, OUTDATED, PREMATURE, OTHER_CONTEXT, WRONG_PLACE,
                          US_DEFAULT, UNRELATED)


def ordinal(year: int, month: int = 1, day: int = 1) -> int:
    from datetime import date
    return date(year, month, day).toordinal()


# --- dates ------------------------------------------------------------------------------------


def test_date_spans_and_their_order() -> None:
    assert date_span("2018") == (ordinal(2018), ordinal(2018, 12, 31))
    assert date_span("March 04, 2018") == (ordinal(2018, 3, 4),) * 2
    assert date_span("March 4, 2018") == (ordinal(2018, 3, 4),) * 2
    for unreadable in ("February 30, 2015", "0000", "Smarch 3, 2015", "2015-03-04", ""):
        assert date_span(unreadable) is None
    year, day, later = date_span("2018"), date_span("March 04, 2018"), date_span("2019")
    assert direction(day, year) == UNORDERED == direction(year, day)  # a day inside the year
    assert direction(year, year) == UNORDERED  # the same date
    assert direction(year, later) == EARLIER and direction(later, day) == LATER
    assert direction(None, year) == UNORDERED == direction(year, None)


# --- temp: every class and tie rule -----------------------------------------------------------

TEMP = [  # (example, prediction, class) with the rule that gives it
    # Q1: Alice (2010), Bob (2015, 2018), Carol (March 2018, inside 2018), Alice again (2020)
    (temp_example(1, "2010", "sampled_year", ("Alice",)), "Bob", P),  # only later contexts
    (temp_example(1, "2015", "start", ("Bob",)), "Alice", OC),  # earlier AND later: came back
    (temp_example(1, "2018", "sampled_year", ("Bob",)), "Carol", OC),  # only an unordered one
    (temp_example(1, "March 03, 2018", "sampled_date", ("Carol",)), "Bob", OD),  # 2015 earlier;
    # the unordered 2018 context does not block outdated
    (temp_example(1, "2020", "start", ("Alice",)), "Carol", OD),
    # Q2: "1999" is listed beside "November 28, 1999" (2005): an alias of it
    (temp_example(2, "1990", "start", ("1986",)), "1999", P),
    (temp_example(2, "2000", "start", ("1999",)), "November 28, 1999", OC),  # alias
    (temp_example(2, "2005", "sampled_year", ("November 28, 1999", "1999")), "1986", OD),
    (temp_example(2, "2010", "sampled_year", ("November 28, 1999",)), "1999", OC),  # alias
    # Q3: the timeline's previous answer (curprev 3: current Joe, previous Don)
    (temp_example(3, "2019", "sampled_year", ("Joe",)), "Don", OD),
    # Q4: curprev 4 says previous Ann, but a later context also has Ann: earlier and later
    (temp_example(4, "2018", "start", ("Ben",)), "Ann", OC),
    (temp_example(4, "2020", "sampled_year", ("Ann",)), "Ben", OD),  # the timeline is not
    # used for an example whose answer is the previous one
    # Q5: "Lee" is both a current and a previous answer of curprev 5: not used
    (temp_example(5, "2019", "sampled_year", ("Kim",)), "Lee", U),
    # Q6: the example's answer is the timeline's previous one: no timeline rule
    (temp_example(6, "2015", "sampled_year", ("X0",)), "X1", U),
    # Q7: in any_answer, carried by no context
    (temp_example(7, "2019", "orig", ("P",), ("P", "Q")), "Q", OC),
    # Q8: "The" normalizes to "": right for an empty prediction there, never an other answer
    (temp_example(8, "2010", "sampled_year", ("The",)), "", C),
    (temp_example(8, "2015", "sampled_year", ("Z",)), "", U),
    # Q9: a date that cannot be read cannot be ordered
    (temp_example(9, "sometime", "sampled_year", ("M",)), "N", OC),
    (temp_example(9, "2015", "sampled_year", ("N",)), "M", OC),
    # Q10: the same date under two date types
    (temp_example(10, "2010", "sampled_year", ("R",)), "Paris", U),
    (temp_example(10, "2010", "start", ("S",)), "R", OC),
]
TIMELINE = [
    curprev_example(3, "current", ("Joe",), ("Don",)),
    curprev_example(3, "previous", ("Don",), ("Joe",)),
    curprev_example(4, "current", ("Ben",), ("Ann",)),
    curprev_example(4, "previous", ("Ann",), ("Ben",)),
    curprev_example(5, "current", ("Kim", "Lee"), ("Lee",)),
    curprev_example(5, "previous", ("Lee",), ("Kim", "Lee")),
    curprev_example(6, "current", ("X1",), ("X0",)),
    curprev_example(6, "previous", ("X0",), ("X1",)),
]


@pytest.fixture
def temp_gold() -> tuple[GoldSplit, GoldSplit]:
    return (GoldSplit("temp", "test", [example for example, _, _ in TEMP]),
            GoldSplit("curprev", "test", TIMELINE))


def predictions(gold: GoldSplit, texts: list[str]) -> Predictions:
    return Predictions(gold.track, gold.split, "test", answers=tuple(texts), keys=gold.keys)


def classes_of(gold: GoldSplit, companion: GoldSplit | None, texts: list[str]) -> list[int]:
    result = score(gold, predictions(gold, texts), resamples=0, lenient=False,
                   errors=build_error_tables(gold, companion))
    assert result.error_classes is not None
    return [int(code) for code in result.error_classes]


def test_temp_classes_by_hand(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    gold, timeline = temp_gold
    assert classes_of(gold, timeline, [text for _, text, _ in TEMP]) == [
        code for _, _, code in TEMP]


def test_temp_other_answers_and_since_by_hand(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    gold, timeline = temp_gold
    tables = build_error_tables(gold, timeline)
    expected: list[tuple[Mapping[str, int], int | None]] = [
        ({"bob": P, "carol": P}, None),
        ({"alice": OC, "carol": P}, 2015),
        ({"alice": OC, "carol": OC}, 2015),  # 2010 Alice is earlier, 2018 is unordered
        ({"alice": OC, "bob": OD}, 2018),
        ({"bob": OD, "carol": OD}, 2020),
        ({"1999": P, "november 28 1999": P}, None),
        ({"1986": OD, "november 28 1999": OC}, 2000),
        ({"1986": OD}, 2000),  # its run starts with the 2000 context of the alias "1999"
        ({"1986": OD, "1999": OC}, 2000),
        ({"don": OD}, None),  # the timeline gives a class, not a year
        ({"ann": OC}, None),
        ({"ben": OD}, 2020),
        ({}, None), ({}, None),
        ({"q": OC}, None),
        ({"z": P}, None),
        ({}, None),  # "the" normalizes to "": dropped
        ({"n": OC}, None), ({"m": OC}, None),
        ({"s": OC}, None), ({"r": OC}, None),
    ]
    assert [(dict(s.others), s.since) for s in tables.situated] == expected
    assert tables.since.tolist() == [-1 if year is None else year for _, year in expected]


def test_temp_figures_by_hand(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    gold, timeline = temp_gold
    result = score(gold, predictions(gold, [text for _, text, _ in TEMP]), resamples=0,
                   lenient=False, errors=build_error_tables(gold, timeline))
    m, counts = result.metrics, result.counts
    # All 21: right 1 (Q8), outdated 5, premature 2, other-context 9, unrelated 4.
    assert (m["outdated_rate"], m["premature_rate"]) == (100 * 5 / 21, 100 * 2 / 21)
    assert (m["other_context_rate"], m["unrelated_rate"]) == (100 * 9 / 21, 100 * 4 / 21)
    assert (m["outdated_share"], m["premature_share"]) == (25.0, 10.0)
    assert (m["other_context_share"], m["unrelated_share"]) == (45.0, 20.0)
    assert counts["outdated_rate"] == 21 and counts["outdated_share"] == 20
    rates = [m[f"{c}_rate"] for c in ("em", "outdated", "premature", "other_context",
                                       "unrelated") if c != "em"]
    assert math.isclose(sum(r for r in [m["em"], *rates] if r is not None), 100.0)
    # Start (6: 1b OC, 1e OD, 2a P, 2b OC, 4a OC, 10b OC), all wrong.
    assert m["outdated_rate_start"] == 100 / 6 == m["outdated_share_start"]
    assert m["other_context_rate_start"] == 400 / 6 and m["unrelated_rate_start"] == 0.0
    # Static (7a only, other-context); Sampled (14: right 1, OD 4, P 1, OC 4, U 4).
    assert m["other_context_rate_static"] == 100.0 == m["other_context_share_static"]
    assert m["outdated_rate_sampled"] == 400 / 14 and m["outdated_share_sampled"] == 400 / 13
    assert counts["unrelated_share_sampled"] == 13


def test_every_example_right_has_no_share(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    gold, timeline = temp_gold
    result = score(gold, predictions(gold, [e.answers[0] for e, _, _ in TEMP]),
                   resamples=50, errors=build_error_tables(gold, timeline))
    # 0 of 21: the Wilson interval (a bootstrap of 0 of 21 never varies: [0, 0]).
    assert result.metrics["outdated_rate"] == 0.0
    assert result.ci["outdated_rate"] == pytest.approx((0.0, 15.4639), abs=1e-4)
    assert result.metrics["outdated_share"] is None and result.ci["outdated_share"] is None
    assert result.counts["outdated_share"] == 0


def test_tables_need_the_declared_companion(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    gold, timeline = temp_gold
    with pytest.raises(ValueError, match="need the curprev/test split"):
        build_error_tables(gold)
    with pytest.raises(ValueError, match="need the curprev/test split"):
        build_error_tables(gold, GoldSplit("curprev", "dev", TIMELINE))
    with pytest.raises(ValueError, match="no error classes"):
        build_error_tables(GoldSplit("temp-id", "test", []))
    assert build_error_tables(gold, timeline) is build_error_tables(gold, timeline)  # cached


# --- geo ----------------------------------------------------------------------------------------

GEO = [
    # Q20: "Alpha" is the US's and Peru's, "Fox" the US's only (listed beside "Alpha"),
    # "Delta" is "usa"'s (Table 7 keeps "us" and "usa" in Other common), "Echo" that of a
    # second "india" record.
    (geo_example(20, "United States", ("Alpha", "Fox")), "Bravo", WP),
    (geo_example(20, "India", ("Bravo",)), "Fox", US),  # only a US location carries it
    (geo_example(20, "Canada", ("Charlie",)), "Alpha", WP),  # a US and a non-US location
    (geo_example(20, "usa", ("Delta",)), "fox", US),
    (geo_example(20, "india", ("Echo",)), "Bravo", OC),  # the same place (normalized)
    (geo_example(20, "Peru", ("Alpha",)), "Fox", OC),  # an alias: the US lists it beside Alpha
    (geo_example(21, "Ghana", ("cedi",), ("cedi", "naira")), "naira", OC),  # any_answer only
    (geo_example(22, "Japan", ("yen",)), "The Yen", C),
    (geo_example(22, "Kenya", ("shilling",)), "dollar", U),
]


@pytest.fixture
def geo_gold() -> GoldSplit:
    return GoldSplit("geo", "test", [example for example, _, _ in GEO])


def test_geo_classes_by_hand(geo_gold: GoldSplit) -> None:
    assert classes_of(geo_gold, None, [text for _, text, _ in GEO]) == [c for _, _, c in GEO]
    others = [dict(s.others) for s in build_error_tables(geo_gold).situated]
    assert others[0] == {"bravo": WP, "charlie": WP, "delta": WP, "echo": WP}
    assert others[1] == {"alpha": WP, "fox": US, "charlie": WP, "delta": WP, "echo": OC}
    assert others[5] == {"fox": OC, "bravo": WP, "charlie": WP, "delta": WP, "echo": WP}
    assert others[7] == {"shilling": WP} and others[8] == {"yen": WP}


def test_geo_figures_by_hand(geo_gold: GoldSplit) -> None:
    result = score(geo_gold, predictions(geo_gold, [text for _, text, _ in GEO]),
                   resamples=0, lenient=False, errors=build_error_tables(geo_gold))
    m = result.metrics
    # All 9, 8 wrong: wrong place 2 + US default 2 (a sub-class, counted in wrong place too),
    # other-context 3, unrelated 1.
    assert m["wrong_place_rate"] == 400 / 9 and m["us_default_rate"] == 200 / 9
    assert (m["wrong_place_share"], m["us_default_share"]) == (50.0, 25.0)
    assert (m["other_context_share"], m["unrelated_share"]) == (37.5, 12.5)
    # Common (US, India, Canada, usa, india, Japan): 5 wrong, 4 of them wrong place.
    assert m["wrong_place_rate_common"] == 400 / 6 and m["wrong_place_share_common"] == 80.0
    assert m["us_default_share_common"] == 40.0 and m["other_context_share_common"] == 20.0
    # Rare (Peru, Ghana, Kenya); Table 7 groups.
    assert m["other_context_rate_rare"] == 200 / 3 and m["wrong_place_rate_rare"] == 0.0
    assert m["wrong_place_rate_us"] == 100.0
    assert m["wrong_place_rate_india"] == 50.0 == m["us_default_rate_india"]
    assert m["wrong_place_share_other_common"] == 100.0
    assert m["us_default_share_other_common"] == 50.0


# --- present and curprev --------------------------------------------------------------------


def present(nq_id: int, partition: str, answers: tuple[str, ...],
            any_answers: tuple[str, ...]) -> Example:
    return Example(key=question_key(nq_id), id=nq_id, question="q?", answers=answers,
                   any_answers=any_answers, partitions=(partition,))


def test_present_and_curprev_classes_by_hand() -> None:
    gold = GoldSplit("present", "test", [
        present(30, "stable", ("Paris",), ("Paris", "Lutetia")),
        present(31, "updated", ("Joe Biden",), ("Joe Biden", "Donald Trump", "joe biden!")),
        present(32, "stable", ("London",), ("London",)),
    ])
    assert [dict(s.others) for s in build_error_tables(gold).situated] == [
        {"lutetia": OD}, {"donald trump": OD}, {}]
    assert classes_of(gold, None, ["Lutetia", "Joe Biden!", "Paris"]) == [OD, C, U]
    curprev = GoldSplit("curprev", "test", [
        curprev_example(40, "current", ("Biden",), ("Trump",)),
        curprev_example(40, "previous", ("Trump",), ("Biden",)),
        curprev_example(41, "current", ("Scholz",), ("Merkel",)),
    ])
    assert classes_of(curprev, None, ["Trump", "Biden", "Merkel"]) == [OD, P, OD]
    result = score(curprev, predictions(curprev, ["Trump", "Biden", "Scholz"]), resamples=0,
                   lenient=False, errors=build_error_tables(curprev))
    assert result.metrics["outdated_rate_current"] == 50.0
    assert result.metrics["premature_share_previous"] == 100.0
    assert result.metrics["premature_rate_current"] == 0.0
    assert result.metrics["outdated_share"] == 50.0


def test_possible_counts_by_hand(temp_gold: tuple[GoldSplit, GoldSplit],
                                 geo_gold: GoldSplit) -> None:
    gold, timeline = temp_gold
    counts = possible_counts(gold, build_error_tables(gold, timeline))
    # outdated possible: 1d 1e 2b 2c 2d 3a 4b; premature: 1a 1b 2a 8a; other-context:
    # 1b 1c 1d 2b 2d 4a 7a 9a 9b 10a 10b; no other answer: 5a 6a 8b; a `since` year:
    # 1b 1c 1d 1e 2b 2c 2d 4b.
    assert counts["all"] == {"examples": 21, "with_other_answers": 18, "outdated": 7,
                             "premature": 4, "other_context": 11, "horizon": 8}
    assert counts["static"] == {"examples": 1, "with_other_answers": 1, "outdated": 0,
                                "premature": 0, "other_context": 1, "horizon": 0}
    geo = possible_counts(geo_gold, build_error_tables(geo_gold))
    # Q22's Japan and Kenya have each other's answer: wrong place possible there too.
    assert geo["all"] == {"examples": 9, "with_other_answers": 9, "wrong_place": 8,
                          "us_default": 4, "other_context": 4}


# --- the bootstrap: EM's own resamples, split among the classes --------------------------------


def test_number_wrong_is_em_s_draw(geo_gold: GoldSplit) -> None:
    texts = ["zzz"] * 7 + ["The Yen", "dollar"]  # every error unrelated
    seed, resamples, n = 5, 400, len(geo_gold)
    result = score(geo_gold, predictions(geo_gold, texts), resamples=resamples, seed=seed,
                   errors=build_error_tables(geo_gold))
    wrong = rng_for(seed, "em").binomial(n, 8 / n, size=resamples)
    assert result.ci["em"] == count_interval(n - wrong, n)  # EM's CI, from these draws
    assert result.ci["unrelated_rate"] == count_interval(wrong, n)  # the very same draws
    # 8 of 8 wrong answers unrelated: the Wilson interval, not the bootstrap's point.
    assert result.ci["unrelated_share"] == pytest.approx((67.5592, 100.0), abs=1e-4)


def test_ci_agrees_with_an_index_bootstrap() -> None:
    # The hand-built temp classes, 20 times over (420 examples), against a plain bootstrap
    # of example indices, written here: equal within Monte-Carlo error.
    codes = np.array([code for _, _, code in TEMP] * 20, dtype=np.int64)
    repeated = GoldSplit("temp", "test", [
        temp_example(100 * k + e.id, e.context["date"], e.context["date_type"], e.answers,
                     e.any_answers) for k in range(20) for e, _, _ in TEMP])
    figures = error_metrics(repeated, codes, seed=11, resamples=4000)
    rng = np.random.default_rng(0)
    draws = codes[rng.integers(0, codes.size, size=(4000, codes.size))]
    for name, code in (("outdated", OD), ("other_context", OC), ("unrelated", U)):
        hits = (draws == code).sum(axis=1)
        wrong = (draws != C).sum(axis=1)
        rate = np.percentile(100 * hits / codes.size, [2.5, 97.5])
        share = np.percentile(100 * hits / wrong, [2.5, 97.5])
        rate_ci, share_ci = figures[f"{name}_rate"].ci, figures[f"{name}_share"].ci
        assert rate_ci is not None and share_ci is not None
        assert np.allclose(rate, rate_ci, atol=0.8) and np.allclose(share, share_ci, atol=0.9)


def test_codes_outside_the_track_are_refused(geo_gold: GoldSplit) -> None:
    with pytest.raises(ValueError, match="outside track 'geo'"):
        error_metrics(geo_gold, np.full(len(geo_gold), OUTDATED, dtype=np.int64))
    with pytest.raises(ValueError, match="class codes for"):
        error_metrics(geo_gold, np.zeros(3, dtype=np.int64))


# --- paired comparison --------------------------------------------------------------------------


def test_compare_errors_by_hand(geo_gold: GoldSplit) -> None:
    tables = build_error_tables(geo_gold)
    a = score(geo_gold, predictions(geo_gold, [t for _, t, _ in GEO]), resamples=0,
              errors=tables).error_classes
    b = score(geo_gold, predictions(geo_gold, ["zzz"] * 9), resamples=0,
              errors=tables).error_classes
    assert a is not None and b is not None
    diffs = compare_errors(geo_gold, a, b, resamples=500, seed=2)
    # A: wrong place 4/9, unrelated 1/9 (share 1/8); B: every example unrelated.
    assert diffs["wrong_place_rate"].difference == 400 / 9
    assert diffs["unrelated_rate"].difference == 100 / 9 - 100.0
    assert diffs["unrelated_share"].difference == 12.5 - 100.0
    assert diffs["unrelated_rate"].p_value is not None and diffs["unrelated_rate"].p_value < 0.01
    same = compare_errors(geo_gold, a, a, resamples=200)
    assert all(d.difference == 0.0 and d.p_value == 1.0 for name, d in same.items()
               if d.difference is not None)
    assert same["wrong_place_share_us"].difference == 0.0  # the US example is wrong in A
    right = score(geo_gold, predictions(geo_gold, [e.answers[0] for e, _, _ in GEO]),
                  resamples=0, errors=tables).error_classes
    assert right is not None
    assert compare_errors(geo_gold, right, b, resamples=100)["unrelated_share"].difference is None


# --- incremental rescoring ------------------------------------------------------------------


def test_rescore_reclassifies_siblings(temp_gold: tuple[GoldSplit, GoldSplit]) -> None:
    parent, timeline = temp_gold
    texts = [text for _, text, _ in TEMP]
    parent_result = score(parent, predictions(parent, texts),
                          errors=build_error_tables(parent, timeline))
    # Q1's 2020 context now answers "Carol": 1b's "Alice" is no longer a returning answer
    # (outdated now), and the 2020 example itself changed; Q10's start context is retired, a
    # new Q11 context is added (no prediction in the file: the empty answer, unrelated).
    examples = list(parent.examples)
    examples[4] = temp_example(1, "2020", "start", ("Carol",))
    del examples[20]
    examples.append(temp_example(11, "2012", "start", ("Y",)))
    new = GoldSplit("temp", "test", examples)
    new_tables = build_error_tables(new, timeline)
    stored = inc.decode_predictions(inc.encode_predictions(predictions(parent, texts), parent))
    redo = inc.error_redo(inc.plan(parent, new), build_error_tables(parent, timeline),
                          new_tables)
    # 1a keeps its other answers (Bob and Carol are later either way); 1b, 1c, 1d see Carol
    # or Alice move; 1e changed; 10a lost its sibling; Q11 is new.
    assert redo.tolist() == [1, 2, 3, 4, 19, 20]
    assert parent_result.error_classes is not None and parent_result.f1 is not None
    assert parent_result.f1_any is not None
    result = inc.rescore(parent, new, parent_result.outcomes, stored, parent.keys,
                         (parent_result.f1, parent_result.f1_any),
                         errors=(build_error_tables(parent, timeline), new_tables),
                         parent_error_classes=parent_result.error_classes)
    full = score(new, realign(predictions(parent, texts), new), errors=new_tables)
    assert result.error_classes is not None and full.error_classes is not None
    assert result.error_classes.tolist() == full.error_classes.tolist()
    assert result.error_classes[1] == OD and result.error_classes[20] == U
    assert result.metrics == full.metrics and result.ci == full.ci
    assert result.counts == full.counts and result.horizon == full.horizon
    with pytest.raises(ValueError, match="no error classes"):
        inc.rescore(parent, new, parent_result.outcomes, stored, parent.keys,
                    (parent_result.f1, parent_result.f1_any),
                    errors=(build_error_tables(parent, timeline), new_tables))


# --- the registry -------------------------------------------------------------------------------


def test_every_qa_track_declares_its_error_classes() -> None:
    for track in QA_TRACKS:
        info = TRACK_INFO[track]
        assert info.errors is not None and info.errors.classes[-1] == "unrelated"
        assert set(info.errors.classes) <= set(ERROR_CLASSES) - {"correct"}
        names = info.error_metrics
        # Two figures per class and partition, and two for the mark (geo's US answer).
        assert len(set(names)) == len(names) == 2 * len(info.errors.figures) * len(
            info.error_partitions)
        assert info.errors.figures[:len(info.errors.classes)] == info.errors.classes
        assert not set(names) & (set(info.metrics) | set(info.lenient_metrics))
        assert all(name in METRIC_LABELS for name in names)
        assert "" in info.error_partitions and "_any" not in info.error_partitions
    assert [rule.horizon for t in QA_TRACKS if (rule := TRACK_INFO[t].errors)] == [
        t == "temp" for t in QA_TRACKS]
    for track in ID_TRACKS:
        assert TRACK_INFO[track].errors is None and TRACK_INFO[track].error_metrics == ()


def test_score_checks_the_tables_belong_to_the_split(
        temp_gold: tuple[GoldSplit, GoldSplit], geo_gold: GoldSplit) -> None:
    gold, timeline = temp_gold
    with pytest.raises(ValueError, match="cannot classify"):
        score(geo_gold, predictions(geo_gold, ["x"] * len(geo_gold)),
              errors=build_error_tables(gold, timeline))
    text = [normalize_answer(t) for _, t, _ in TEMP]
    with pytest.raises(ValueError, match="one normalized prediction"):
        classify(build_error_tables(gold, timeline), text[:-1],
                 np.zeros(len(gold), dtype=np.bool_))
