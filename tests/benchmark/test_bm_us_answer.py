"""geo's US-answer mark beside US default: hand-built gold/prediction pairs with hand-computed
classes, mark states and figures (a US answer another location shares; locations written
"USA", "US", "america"), the location variants, the bootstrap, the paired comparison, the
stored byte, the incremental rescore; and temp's earlier answers (the outdated bound)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bm_helpers import curprev_example, geo_example, jsonl, temp_example
from click.testing import CliRunner

from benchmark import GoldSet, GoldSplit, Predictions, score
from benchmark import cli as cli_module
from benchmark import incremental as inc
from benchmark.cli import main
from benchmark.error_classes import (
    MARK_COUNTED,
    MARK_HIT,
    MARK_OUTSIDE,
    build_error_tables,
    compare_errors,
    earlier_counts,
    error_metrics,
    pack_codes,
    unpack_codes,
)
from benchmark.scoring import result_from_outcomes
from benchmark.situations import (
    CORRECT_CLASS,
    OTHER_CONTEXT,
    UNRELATED,
    US_DEFAULT,
    WRONG_PLACE,
    located_answers,
)
from benchmark.tracks import (
    TRACK_INFO,
    US_ANSWER_LOCATIONS,
    is_us_answer_location,
    is_us_location,
)
from benchmark.versions import realign

C, OC, WP, USD, U = CORRECT_CLASS, OTHER_CONTEXT, WRONG_PLACE, US_DEFAULT, UNRELATED
OUT, K, H = MARK_OUTSIDE, MARK_COUNTED, MARK_HIT

US = [  # (example, prediction, class, mark state) with the rule that gives them
    # Q50: "Ant" is the United States' and Peru's, "Bee" USA's only (USA is no US location by
    # Table 7's rule, so its answer is wrong place, never US default).
    (geo_example(50, "United States", ("Ant",)), "Bee", WP, OUT),  # a US example: outside
    (geo_example(50, "USA", ("Bee",)), "Ant", WP, OUT),  # "USA" is the US for the mark: outside
    (geo_example(50, "India", ("Cat",)), "Ant", WP, H),  # shared with Peru: wrong place, a hit
    (geo_example(50, "Peru", ("Ant",)), "Bee", WP, H),  # USA's answer: wrong place, a hit
    (geo_example(50, "Kenya", ("Dog",)), "Cat", WP, K),  # India's answer: counted, no hit
    (geo_example(50, "america", ("Eel",)), "Dog", WP, OUT),  # "america" is the US: outside
    # Q51: "US" lists "Yak" beside Chile's "Xu".
    (geo_example(51, "US", ("Xu", "Yak")), "zzz", U, OUT),
    (geo_example(51, "Chile", ("Xu",)), "Yak", OC, H),  # an alias, still the US's answer
    (geo_example(51, "Fiji", ("Zed",)), "Xu", WP, H),  # US and Chile: wrong place, a hit
    (geo_example(51, "Japan", ("Wren",)), "Wren", C, K),  # right: counted, never a hit
    # Q52: only the United States gives "Moth".
    (geo_example(52, "United States", ("Moth",)), "Moth", C, OUT),
    (geo_example(52, "Ghana", ("Newt",)), "Moth", USD, H),  # US default, and a hit
]


@pytest.fixture
def us_gold() -> GoldSplit:
    return GoldSplit("geo", "test", [example for example, _, _, _ in US])


def predictions(gold: GoldSplit, texts: list[str]) -> Predictions:
    return Predictions(gold.track, gold.split, "test", answers=tuple(texts), keys=gold.keys)


def us_texts() -> list[str]:
    return [text for _, text, _, _ in US]


def test_us_answer_classes_and_marks_by_hand(us_gold: GoldSplit) -> None:
    result = score(us_gold, predictions(us_gold, us_texts()), resamples=0, lenient=False,
                   errors=build_error_tables(us_gold))
    assert result.error_classes is not None and result.error_marks is not None
    assert result.error_classes.tolist() == [code for _, _, code, _ in US]
    assert result.error_marks.tolist() == [state for _, _, _, state in US]
    marked = build_error_tables(us_gold).marked
    assert marked[2] == frozenset({"ant", "bee", "eel"}) and marked[6] is None  # India; "US"
    assert marked[7] == frozenset({"yak"})  # Chile: "xu" is its own answer


def test_us_answer_figures_beside_us_default_by_hand(us_gold: GoldSplit) -> None:
    result = score(us_gold, predictions(us_gold, us_texts()), resamples=0, lenient=False,
                   errors=build_error_tables(us_gold))
    m, counts = result.metrics, result.counts
    # US default: Ghana alone, of 12 examples. US answer: of the 7 examples not located in
    # the US (India, Peru, Kenya, Chile, Fiji, Japan, Ghana), 5 hits (India, Peru, Chile,
    # Fiji, Ghana); 6 of the 7 are wrong (Japan is right).
    assert m["us_default_rate"] == 100 / 12 and m["us_default_share"] == 100 / 10
    assert m["us_answer_rate"] == 500 / 7 and counts["us_answer_rate"] == 7
    assert m["us_answer_share"] == 500 / 6 and counts["us_answer_share"] == 6
    # Common (United States, USA, India, US, Japan, United States): India and Japan counted,
    # India a hit. Rare (Peru, Kenya, america, Chile, Fiji, Ghana; "america" is none of the
    # 28 common names): america outside, 4 hits of 5, all wrong.
    assert m["us_answer_rate_common"] == 50.0 and m["us_answer_share_common"] == 100.0
    assert m["us_default_rate_common"] == 0.0
    assert m["us_answer_rate_rare"] == 80.0 == m["us_answer_share_rare"]
    assert m["us_default_rate_rare"] == 100 / 6
    # The US partition (United States) has no example the mark counts.
    assert m["us_answer_rate_us"] is None and counts["us_answer_rate_us"] == 0
    assert m["us_answer_share_us"] is None
    assert m["us_answer_rate_india"] == 100.0
    # Other common (USA, US, Japan): Japan only, right.
    assert m["us_answer_rate_other_common"] == 0.0 and counts["us_answer_rate_other_common"] == 1
    assert m["us_answer_share_other_common"] is None
    # The classes' figures are the same as ever: the mark sums with none.
    rates = [m[f"{c}_rate"] for c in ("wrong_place", "other_context", "unrelated")]
    assert math.isclose(sum(r for r in [m["em"], *rates] if r is not None), 100.0)


def test_the_location_variants_are_the_declared_ones() -> None:
    for written in ("United States", "the united states", "United states", "United States ",
                    "us", "US", "US ", "U.S.", "USA", "usa", "U.S.A.", "america",
                    "United States of America", "the United States of America"):
        assert is_us_answer_location(written), written
    for other in ("Southern United States", "Vermont, U.S.", "North America", "Americas",
                  "India", "Russia", "Australia", "Most obese state in USA"):
        assert not is_us_answer_location(other), other
    # The US partition keeps Table 7's rule: "united states" alone.
    assert is_us_location("the United States") and not is_us_location("USA")
    assert not is_us_location("us") and not is_us_location("america")
    # Every declared variant marks: a US record written that way gives its answer to India.
    for variant in US_ANSWER_LOCATIONS:
        examples = [geo_example(60, variant, ("Ant",)), geo_example(60, "India", ("Bee",))]
        assert located_answers(examples, marked=is_us_answer_location,
                               location_field="location") == [None, frozenset({"ant"})], variant
    examples = [geo_example(61, "Southern United States", ("Ant",)),
                geo_example(61, "India", ("Bee",))]
    assert located_answers(examples, marked=is_us_answer_location,
                           location_field="location") == [frozenset(), frozenset()]


def test_the_mark_ci_agrees_with_an_index_bootstrap() -> None:
    # The hand-built examples, 30 times over (360), against a plain bootstrap of example
    # indices, written here: equal within Monte-Carlo error.
    copies = 30
    examples = [geo_example(1000 * k + e.id, e.context["location"], e.answers)
                for k in range(copies) for e, _, _, _ in US]
    gold = GoldSplit("geo", "test", examples)
    codes = np.array([code for _, _, code, _ in US] * copies, dtype=np.int64)
    marks = np.array([state for _, _, _, state in US] * copies, dtype=np.int64)
    figures = error_metrics(gold, codes, marks=marks, seed=13, resamples=4000)
    rng = np.random.default_rng(0)
    at = rng.integers(0, codes.size, size=(4000, codes.size))
    hits = (marks[at] == H).sum(axis=1)
    counted = (marks[at] != OUT).sum(axis=1)
    wrong = ((marks[at] != OUT) & (codes[at] != C)).sum(axis=1)
    rate_ci, share_ci = figures["us_answer_rate"].ci, figures["us_answer_share"].ci
    assert rate_ci is not None and share_ci is not None
    assert np.allclose(np.percentile(100 * hits / counted, [2.5, 97.5]), rate_ci, atol=1.0)
    assert np.allclose(np.percentile(100 * hits / wrong, [2.5, 97.5]), share_ci, atol=1.0)
    # The classes' CIs do not move for the mark: the same as without it.
    plain = error_metrics(gold, codes, seed=13, resamples=4000)
    assert all(figures[name] == value for name, value in plain.items())
    assert "us_answer_rate" not in plain


def test_compare_errors_of_the_mark_by_hand(us_gold: GoldSplit) -> None:
    tables = build_error_tables(us_gold)
    a = score(us_gold, predictions(us_gold, us_texts()), resamples=0, errors=tables)
    b = score(us_gold, predictions(us_gold, ["zzz"] * len(us_gold)), resamples=0,
              errors=tables)
    diffs = compare_errors(us_gold, a.error_classes, b.error_classes,  # type: ignore[arg-type]
                           marks_a=a.error_marks, marks_b=b.error_marks, resamples=500, seed=3)
    # B: every example wrong and unrelated, no hit.
    assert diffs["us_answer_rate"].difference == 500 / 7
    assert diffs["us_answer_share"].difference == 500 / 6 - 0.0
    assert diffs["us_answer_rate"].p_value is not None and diffs["us_answer_rate"].p_value < 0.05
    assert diffs["us_answer_rate_us"].difference is None  # no counted example
    assert "us_answer_rate" not in compare_errors(
        us_gold, a.error_classes, b.error_classes, resamples=50)  # type: ignore[arg-type]


def test_the_stored_byte_and_a_row_stored_before_the_mark(us_gold: GoldSplit) -> None:
    tables = build_error_tables(us_gold)
    result = score(us_gold, predictions(us_gold, us_texts()), resamples=0, errors=tables)
    assert result.error_classes is not None
    packed = pack_codes(result.error_classes, result.error_marks)
    assert int(packed.max()) < 256
    classes, marks = unpack_codes(packed.astype(np.uint8))
    assert classes.tolist() == result.error_classes.tolist()
    assert marks is not None and result.error_marks is not None
    assert marks.tolist() == result.error_marks.tolist()
    # Bytes without a state (stored before the mark): no mark figures, the rest unchanged.
    old_classes, old_marks = unpack_codes(result.error_classes.astype(np.uint8))
    assert old_marks is None
    old = result_from_outcomes(us_gold, result.outcomes, result.f1, result.f1_any,
                               resamples=0, errors=tables, error_classes=old_classes)
    assert not any(name.startswith("us_answer") for name in old.metrics)
    assert {k: v for k, v in result.metrics.items() if not k.startswith("us_answer")} == (
        old.metrics)


def test_rescore_remarks_when_a_sibling_location_becomes_the_us() -> None:
    parent = GoldSplit("geo", "test", [geo_example(70, "United States", ("Ant",)),
                                       geo_example(70, "India", ("Bee",)),
                                       geo_example(70, "Peru", ("Cat",))])
    texts = ["Ant", "Cat", "zzz"]
    parent_tables = build_error_tables(parent)
    parent_result = score(parent, predictions(parent, texts), errors=parent_tables)
    assert parent_result.error_marks is not None
    assert parent_result.error_marks.tolist() == [OUT, K, K]  # Peru's "Cat" is no US answer
    # Peru's record becomes USA's with the same answer: India's other answers are the same
    # (wrong place either way), but "Cat" is now a US answer.
    new = GoldSplit("geo", "test", [parent.examples[0], parent.examples[1],
                                    geo_example(70, "USA", ("Cat",))])
    new_tables = build_error_tables(new)
    assert new_tables.situated[1].others == parent_tables.situated[1].others
    stored = inc.decode_predictions(inc.encode_predictions(predictions(parent, texts), parent))
    assert parent_result.f1 is not None and parent_result.f1_any is not None
    result = inc.rescore(parent, new, parent_result.outcomes, stored, parent.keys,
                         (parent_result.f1, parent_result.f1_any),
                         errors=(parent_tables, new_tables),
                         parent_error_classes=parent_result.error_classes,
                         parent_error_marks=parent_result.error_marks)
    full = score(new, realign(predictions(parent, texts), new), errors=new_tables)
    assert result.error_marks is not None and full.error_marks is not None
    assert result.error_marks.tolist() == full.error_marks.tolist() == [OUT, H, OUT]
    assert result.metrics == full.metrics and result.ci == full.ci
    with pytest.raises(ValueError, match="no mark states"):
        inc.rescore(parent, new, parent_result.outcomes, stored, parent.keys,
                    (parent_result.f1, parent_result.f1_any),
                    errors=(parent_tables, new_tables),
                    parent_error_classes=parent_result.error_classes)


def test_only_geo_declares_a_mark() -> None:
    marks = {track: info.errors.mark.name for track, info in TRACK_INFO.items()
             if info.errors is not None and info.errors.mark is not None}
    assert marks == {"geo": "us_answer"}
    info = TRACK_INFO["geo"]
    assert info.label("us_answer_rate_common") == "US answer % of examples Common"
    assert {f"us_answer_{kind}{suffix}" for kind in ("rate", "share")
            for suffix in info.error_partitions} <= set(info.error_metrics)


# --- temp: the earlier answers, the outdated figures' bound -----------------------------------


def test_earlier_counts_by_hand() -> None:
    # Q1: Alice (2010), Bob (2015), Bob (2018), Carol (March 2018), Alice (2020); Q2: an
    # alias "1999" beside "November 28, 1999"; Q3: the timeline's previous answer Don.
    gold = GoldSplit("temp", "test", [
        temp_example(1, "2010", "sampled_year", ("Alice",)),
        temp_example(1, "2015", "start", ("Bob",)),
        temp_example(1, "2018", "sampled_year", ("Bob",)),
        temp_example(1, "March 03, 2018", "sampled_date", ("Carol",)),
        temp_example(1, "2020", "start", ("Alice",)),
        temp_example(2, "2000", "start", ("1999",)),
        temp_example(2, "2010", "sampled_year", ("November 28, 1999", "1999")),
        temp_example(2, "2015", "sampled_year", ("November 28, 1999",)),
        temp_example(3, "2019", "orig", ("Joe",)),
    ])
    timeline = GoldSplit("curprev", "test", [curprev_example(3, "current", ("Joe",), ("Don",)),
                                             curprev_example(3, "previous", ("Don",), ("Joe",))])
    tables = build_error_tables(gold, timeline)
    assert [sorted(s.earlier) for s in tables.situated] == [
        [], ["alice"], ["alice"], ["alice", "bob"], ["bob", "carol"],
        [], [], ["1999"], ["don"]]
    counts = earlier_counts(gold, tables)
    # Other-context among them: Alice came back (2015, 2018, March 2018: earlier 2010 and
    # later 2020); "1999" is an alias of "November 28, 1999" (2015).
    assert counts["all"] == {"examples": 9, "with_earlier": 6, "earlier_answers": 8,
                             "other_context": 4}
    assert counts["start"] == {"examples": 3, "with_earlier": 2, "earlier_answers": 3,
                               "other_context": 1}
    assert counts["static"] == {"examples": 1, "with_earlier": 1, "earlier_answers": 1,
                                "other_context": 0}


def test_the_score_table_and_compare_show_the_mark(us_gold: GoldSplit, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_module, "open_gold", lambda data: GoldSet([us_gold]))
    path = tmp_path / "us.jsonl"
    path.write_bytes(jsonl({"key": e.key, "prediction": t} for (e, t, _, _) in US))
    other = tmp_path / "none.jsonl"
    other.write_bytes(jsonl({"key": e.key, "prediction": "zzz"} for (e, _, _, _) in US))
    runner = CliRunner()
    table = runner.invoke(main, ["score", "--track", "geo", "--split", "test", str(path),
                                 "--resamples", "0"])
    assert table.exit_code == 0, table.output
    us_row = next(line for line in table.output.splitlines() if "US answer*" in line)
    assert f"{500 / 7:.2f}" in us_row and f"{500 / 6:.2f}" in us_row
    assert "* US answer: no class" in table.output
    compared = runner.invoke(main, ["compare", "--track", "geo", "--split", "test", str(path),
                                    str(other), "--resamples", "50", "--json"])
    assert compared.exit_code == 0, compared.output
    assert '"us_answer_rate"' in compared.output
