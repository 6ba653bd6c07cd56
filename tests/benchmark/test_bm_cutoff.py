"""A score after a model's knowledge cutoff: effective dates and figures by hand, the gold's
`answer_since` (update records, canonical JSON), and a synthetic model frozen at a year on
the real temp dev split."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from datetime import date, datetime

import numpy as np
import pytest
from bm_helpers import geo_example, temp_example

from benchmark import GoldSet, GoldSplit, Predictions, score
from benchmark.cutoff import NO_DATE, cutoff_values, effective_dates
from benchmark.error_classes import build_error_tables, error_tables
from benchmark.example import Example
from benchmark.metric_card import CUTOFF_DEFINITIONS, CUTOFF_LIMITATION, definition, markdown
from benchmark.tracks import CUTOFF_METRICS, TRACK_INFO, track_info
from benchmark.versions import UpdateError, apply_update, parse_update

CUTOFF = date(2015, 6, 30)


def hand_gold(q2_since: str | None = None) -> tuple[GoldSplit, GoldSplit]:
    """Six questions. Q0, Q1, Q2, Q5: an answer of 1990 replaced in 2005, 2012, 2018, 2019
    (the later context's `since` is that year; the 1990 ones have none). Q3: one context, no
    date. Q4: a campaign's answer, in effect since 2016-07-01 (answer_since)."""
    examples = []
    for number, year in ((0, 2005), (1, 2012), (2, 2018), (5, 2019)):
        examples += [temp_example(number, "1990", "start", (f"a{number}",)),
                     temp_example(number, str(year), "sampled_year", (f"b{number}",))]
    examples.append(temp_example(3, "2000", "orig", ("x3",)))
    examples.append(replace(temp_example(4, "2016", "sampled_year", ("c4",)),
                            answer_since="2016-07-01"))
    if q2_since is not None:
        examples = [replace(e, answer_since=q2_since) if e.key == "2|2018|sampled_year" else e
                    for e in examples]
    return GoldSplit("temp", "test", examples), GoldSplit("curprev", "test", [])


#: The predictions by key: after the cutoff Q2 and Q5 outdated, Q4 right; by it Q0 and Q1
#: right; the undated examples right (they count nowhere).
ANSWERS = {"0|2005|sampled_year": "b0", "1|2012|sampled_year": "b1",
           "2|2018|sampled_year": "a2", "5|2019|sampled_year": "a5",
           "4|2016|sampled_year": "c4", "3|2000|orig": "x3"}


def scored(gold: GoldSplit, companion: GoldSplit) -> tuple[np.ndarray, np.ndarray]:
    texts = tuple(ANSWERS.get(e.key, e.answers[0]) for e in gold.examples)
    result = score(gold, Predictions("temp", gold.split, "test", answers=texts,
                                     keys=gold.keys),
                   resamples=0, errors=build_error_tables(gold, companion))
    assert result.error_classes is not None
    return result.outcomes, result.error_classes


def test_effective_dates_by_hand() -> None:
    gold, companion = hand_gold()
    days = effective_dates(gold, build_error_tables(gold, companion))
    by_key = {e.key: (None if d == NO_DATE else date.fromordinal(int(d)))
              for e, d in zip(gold.examples, days, strict=True)}
    assert by_key == {
        "0|1990|start": None, "0|2005|sampled_year": date(2005, 1, 1),
        "1|1990|start": None, "1|2012|sampled_year": date(2012, 1, 1),
        "2|1990|start": None, "2|2018|sampled_year": date(2018, 1, 1),
        "5|1990|start": None, "5|2019|sampled_year": date(2019, 1, 1),
        "3|2000|orig": None, "4|2016|sampled_year": date(2016, 7, 1)}
    # Without tables only the gold's own dates are known.
    assert [int(d) for d in effective_dates(gold, None)] == [NO_DATE] * 9 + [
        date(2016, 7, 1).toordinal()]
    # The gold's date wins over the contexts' year.
    moved, companion = hand_gold("2014-03-01")
    assert date.fromordinal(int(effective_dates(
        moved, build_error_tables(moved, companion))[moved.index["2|2018|sampled_year"]])) \
        == date(2014, 3, 1)


def test_figures_by_hand() -> None:
    gold, companion = hand_gold()
    tables = build_error_tables(gold, companion)
    outcomes, classes = scored(gold, companion)
    values = cutoff_values(gold, tables, outcomes, classes, CUTOFF)
    assert list(values) == list(CUTOFF_METRICS)
    # After: Q2 (2018) outdated, Q5 (2019) outdated, Q4 (2016-07-01) right: 1 of 3.
    post = values["em_post_cutoff"]
    assert post.count == 3 and post.value == pytest.approx(100 / 3)
    # Wilson by hand: (k + z²/2 ± z sqrt(k(n-k)/n + z²/4)) / (n + z²), z = 1.959964.
    assert post.ci == pytest.approx((6.1492, 79.2340), abs=1e-4)
    stale = values["outdated_rate_post_cutoff"]
    assert stale.value == pytest.approx(200 / 3) and stale.count == 3
    assert stale.ci == pytest.approx((20.7660, 93.8508), abs=1e-4)
    # By it: Q0 (2005), Q1 (2012), both right; none outdated (Wilson at the ends).
    pre, pre_stale = values["em_pre_cutoff"], values["outdated_rate_pre_cutoff"]
    assert (pre.value, pre.count) == (100.0, 2)
    assert pre.ci == pytest.approx((34.2380, 100.0), abs=1e-4)
    assert (pre_stale.value, pre_stale.count) == (0.0, 2)
    assert pre_stale.ci == pytest.approx((0.0, 65.7620), abs=1e-4)


def test_the_sides_move_with_the_date_the_mask_and_the_gold() -> None:
    gold, companion = hand_gold()
    tables = build_error_tables(gold, companion)
    outcomes, classes = scored(gold, companion)
    # A date equal to the cutoff is by it: 2018-01-01 keeps Q2 on the early side.
    at = cutoff_values(gold, tables, outcomes, classes, date(2018, 1, 1))
    assert (at["em_post_cutoff"].count, at["em_pre_cutoff"].count) == (1, 4)
    assert at["em_post_cutoff"].value == 0.0 and at["em_pre_cutoff"].value == 75.0
    # Before every date: nothing by it (no value, count 0), all five after.
    early = cutoff_values(gold, tables, outcomes, classes, date(2000, 1, 1))
    assert early["em_pre_cutoff"].value is None and early["em_pre_cutoff"].count == 0
    assert early["em_pre_cutoff"].ci is None
    assert (early["em_post_cutoff"].count, early["em_post_cutoff"].value) == (5, 60.0)
    # The examples given: without Q5, 1 of 2 after.
    given = np.array([e.id != 5 for e in gold.examples], dtype=np.bool_)
    masked = cutoff_values(gold, tables, outcomes, classes, CUTOFF, given)
    assert (masked["em_post_cutoff"].count, masked["em_post_cutoff"].value) == (2, 50.0)
    # Without class codes, no outdated rates.
    assert list(cutoff_values(gold, tables, outcomes, None, CUTOFF)) == [
        "em_post_cutoff", "em_pre_cutoff"]
    # A campaign's date moves Q2 before the cutoff.
    moved, companion = hand_gold("2014-03-01")
    moved_outcomes, moved_classes = scored(moved, companion)
    values = cutoff_values(moved, build_error_tables(moved, companion), moved_outcomes,
                           moved_classes, CUTOFF)
    assert (values["em_post_cutoff"].count, values["em_pre_cutoff"].count) == (2, 3)
    with pytest.raises(ValueError, match="cover every example"):
        cutoff_values(gold, tables, outcomes[:3], classes, CUTOFF)


def test_no_dates_no_figures() -> None:
    """geo's release and an identification track have no effective date: {}. A geo example
    a campaign added has one, and no outdated rate (geo has no such class)."""
    geo = GoldSplit("geo", "dev", [geo_example(1, "India", ("a",)),
                                   geo_example(1, "Japan", ("b",))])
    tables = build_error_tables(geo)
    codes = np.zeros(len(geo), dtype=np.int64)
    assert cutoff_values(geo, tables, np.ones(2, dtype=np.int64), codes, CUTOFF) == {}
    dated = GoldSplit("geo", "dev", [geo.examples[0],
                                     replace(geo.examples[1], answer_since="2020-01-01")])
    values = cutoff_values(dated, build_error_tables(dated), np.ones(2, dtype=np.int64),
                           codes, CUTOFF)
    assert list(values) == ["em_post_cutoff", "em_pre_cutoff"]
    assert (values["em_post_cutoff"].value, values["em_post_cutoff"].count) == (100.0, 1)
    ident = GoldSplit("temp-id", "dev", [Example("1", 1, "q?", label=True,
                                                 partitions=("dependent",))])
    assert cutoff_values(ident, None, np.zeros(1, dtype=np.int64), None, CUTOFF) == {}


def test_names_labels_and_definitions() -> None:
    for name in CUTOFF_METRICS:
        assert "cutoff" in name
        assert TRACK_INFO["temp"].label(name) != name
        assert name not in TRACK_INFO["temp"].metrics  # never a ranking column
        assert definition("temp", name).startswith("Not in the paper, never ranks")
        assert name in CUTOFF_DEFINITIONS and f"`{name}`" in markdown()
    assert "Contamination cannot touch the post-cutoff figure" in CUTOFF_LIMITATION
    assert "closed-book model can only be outdated" in CUTOFF_LIMITATION
    assert "reads the present" in CUTOFF_LIMITATION
    assert f"Limitations: {CUTOFF_LIMITATION}" in markdown()


# --- the gold's answer_since ------------------------------------------------------------------


def test_answer_since_is_serialized_only_when_set() -> None:
    plain = temp_example(1, "2019", "sampled_year", ("a",))
    assert "answer_since" not in plain.to_json()
    assert json.dumps(Example.from_json(plain.to_json()).to_json()) == json.dumps(
        plain.to_json())
    dated = replace(plain, answer_since="2019-05-01")
    assert dated.to_json()["answer_since"] == "2019-05-01"
    assert Example.from_json(dated.to_json()) == dated
    assert "answer_since" not in dated.blank()


def test_update_records_carry_answer_since() -> None:
    gold, companion = hand_gold()
    parent = GoldSet([gold, companion])

    def record(**fields: object) -> str:
        return json.dumps({"track": "temp", "split": "test", "action": "update",
                           "reason": "r", **fields})

    records = parse_update("\n".join([
        record(key="2|2018|sampled_year", answer=["new 2"], answer_since="2018-03-04"),
        record(key="4|2016|sampled_year", answer=["new 4"]),
        record(key="0|2005|sampled_year", any_answer=["b0", "z"]),
        json.dumps({"track": "temp", "split": "test", "action": "add",
                    "key": "9|2020|sampled_year", "question": "q?",
                    "context": {"date": "2020", "date_type": "sampled_year"},
                    "answer": ["n9"], "answer_since": "2020-02-29"})]), parent)
    new = apply_update(parent, records).get("temp", "test")
    since = {e.key: e.answer_since for e in new.examples}
    assert since["2|2018|sampled_year"] == "2018-03-04"
    assert since["4|2016|sampled_year"] is None  # a new answer without a date clears it
    assert since["9|2020|sampled_year"] == "2020-02-29"
    kept = apply_update(GoldSet([apply_update(parent, records).get("temp", "test"),
                                 companion]),
                        parse_update(record(key="2|2018|sampled_year", any_answer=["q"]),
                                     GoldSet([new, companion])))
    assert kept.get("temp", "test").examples[new.index["2|2018|sampled_year"]].answer_since \
        == "2018-03-04"  # an update of any_answer alone keeps it
    for bad, message in ((record(key="1|2012|sampled_year", answer=["x"],
                                 answer_since="2018-02-30"), "YYYY-MM-DD"),
                         (record(key="1|2012|sampled_year", answer=["x"],
                                 answer_since="2018"), "YYYY-MM-DD"),
                         (record(key="1|2012|sampled_year", any_answer=["x"],
                                 answer_since="2018-01-01"), "give 'answer'")):
        with pytest.raises(UpdateError) as caught:
            parse_update(bad, parent)
        assert message in str(caught.value.problems[0].message)


# --- a model frozen at a year, on the real temp dev split ---------------------------------------


def start_year(text: str) -> int:
    """The year a release date starts in (read here, apart from the library)."""
    return int(text) if text.isdigit() else datetime.strptime(text, "%B %d, %Y").year


def frozen_at(gold: GoldSplit, since: np.ndarray, year: int) -> list[str]:
    """A model frozen at `year`: right where the answer took effect by then (or has no
    date), else the answer in effect at `year`: its question's latest context starting by
    then, the earliest context when none does (outdated)."""
    questions: dict[int, list[int]] = defaultdict(list)
    for position, example in enumerate(gold.examples):
        questions[example.id].append(position)
    texts = []
    for position, example in enumerate(gold.examples):
        if since[position] < 0 or since[position] <= year:
            texts.append(example.answers[0])
            continue
        contexts = sorted(questions[example.id],
                          key=lambda p: start_year(gold.examples[p].context["date"]))
        earlier = [p for p in contexts
                   if start_year(gold.examples[p].context["date"]) <= year] or contexts[:1]
        texts.append(gold.examples[earlier[-1]].answers[0])
    return texts


def test_a_model_frozen_at_a_year(release_gold: GoldSet) -> None:
    gold = release_gold.get("temp", "dev")
    tables = error_tables(release_gold, "temp", "dev")
    year = 2019  # temp dev's answers mostly took effect in 2016-2021
    texts = frozen_at(gold, tables.since, year)
    result = score(gold, Predictions("temp", "dev", "test", answers=tuple(texts),
                                     keys=gold.keys), resamples=0, errors=tables)
    assert result.error_classes is not None and track_info("temp").errors is not None
    before = cutoff_values(gold, tables, result.outcomes, result.error_classes,
                           date(year - 2, 12, 31))
    after = cutoff_values(gold, tables, result.outcomes, result.error_classes,
                          date(year, 12, 31))
    # Cutoff before Y: the side after it holds the answers of (Y-2, Y], which the model
    # knows, and the later ones, which it does not; after Y: only answers it cannot know.
    post_before, post_after = before["em_post_cutoff"], after["em_post_cutoff"]
    assert post_before.count > post_after.count >= 20
    assert post_before.value is not None and post_before.value > 50
    # (Some 12%: for a few questions the answer this helper reads from the contexts by
    # start year still matches the later gold.)
    assert post_after.value is not None and post_after.value < 20
    assert post_before.value - post_after.value > 30
    assert after["outdated_rate_post_cutoff"].value is not None
    assert after["outdated_rate_post_cutoff"].value > 60
    # By a cutoff after Y the model is right on nearly everything taken effect by Y.
    assert after["em_pre_cutoff"].value is not None and after["em_pre_cutoff"].value > 80
    # Every dated example is on one side; the undated on neither.
    dated = int((tables.since >= 0).sum())
    assert post_before.count + before["em_pre_cutoff"].count == dated < len(gold)
