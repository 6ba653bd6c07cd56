"""Tiny gold/prediction pairs with hand-computed scores, in every accepted format."""

from __future__ import annotations

import json
import random
import unicodedata
from typing import Any

import numpy as np
import pytest
from bm_helpers import csv_bytes, gz, id_example, jsonl, parse, score_bytes

from benchmark import GoldSplit, normalize_answer, score
from benchmark.gold import geo_partitions
from benchmark.metrics import roc_auc

NFC_BEYONCE = unicodedata.normalize("NFC", "Beyoncé")
NFD_BEYONCE = unicodedata.normalize("NFD", "Beyoncé")


# --- normalization: the true behaviour of NFD + SQuAD normalization -------------------------


def test_nfd_keeps_accents_as_combining_marks() -> None:
    # NFD only decomposes "é" into "e" + U+0301; U+0301 is not in string.punctuation, so it
    # stays: "Beyonce" does NOT match "Beyoncé".
    assert normalize_answer(NFC_BEYONCE) == "beyonce\u0301"
    assert normalize_answer("Beyonce") == "beyonce"
    assert normalize_answer("Beyonce") != normalize_answer(NFC_BEYONCE)
    # NFC and NFD input of the same word normalize identically.
    assert NFC_BEYONCE != NFD_BEYONCE
    assert normalize_answer(NFC_BEYONCE) == normalize_answer(NFD_BEYONCE)


@pytest.mark.parametrize(("text", "expected"), [
    ("The Beatles", "beatles"),            # article removed
    ("an apple a day", "apple day"),       # a / an removed as whole words
    ("theater", "theater"),                # ... but not inside words
    ("U.S.A.", "usa"),                     # ASCII punctuation dropped, not replaced
    ("Jay-Z", "jayz"),
    ("Jay\u2013Z", "jay\u2013z"),          # an en dash is not ASCII punctuation: kept
    ("\u00abHi\u00bb", "\u00abhi\u00bb"),  # guillemets kept too
    ("  New \t York\n", "new york"),       # white space collapsed and stripped
    ("New\u00a0York", "new york"),         # a no-break space is white space
    ("Stra\u00dfe", "stra\u00dfe"),        # lower() does not fold sharp s
    ("", ""),
    ("The", ""),                           # an answer can normalize to nothing
    (")", ""),
    ("Th\u00e9", "\u0301"),                # quirk: NFD "the"+U+0301, \b before U+0301
])
def test_normalization_cases(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


# --- QA tracks: hand-computed EM, every partition -------------------------------------------

# tiny_temp (see bm_helpers): 1|2019|orig "Beyoncé" (Static), 2|2010|sampled_year
# "The Beatles" (Sampled), 2|2010|start "U.S.A." (Start), 3|March 3, 2015|sampled_date
# "New  York" (Sampled); each also has one alternate-context answer in any_answers.
TEMP_A = {
    "1|2019|orig": "Beyonce",               # no accent: wrong (see above); not an alternate
    "2|2010|sampled_year": "beatles!",      # "beatles" == "beatles": right
    "2|2010|start": "Canada",               # wrong, but the alternate context's answer
    "3|March 3, 2015|sampled_date": " new york ",  # right
}
# EM 2/4 = 50; Static 0/1 = 0; Sampled 2/2 = 100; Start 0/1 = 0; EM Any 3/4 = 75.
TEMP_A_SCORES = {"em": 50.0, "em_static": 0.0, "em_sampled": 100.0, "em_start": 0.0,
                 "em_any": 75.0}

TEMP_B = {
    "1|2019|orig": NFD_BEYONCE,             # NFD input vs NFC gold: right
    "2|2010|sampled_year": "A Beatles",     # article "a" dropped: right
    "2|2010|start": "USA",                  # "usa" == "usa": right
    "3|March 3, 2015|sampled_date": "",     # empty prediction: wrong
}
# EM 3/4 = 75; Static 1/1 = 100; Sampled 1/2 = 50; Start 1/1 = 100; EM Any 3/4 = 75.
TEMP_B_SCORES = {"em": 75.0, "em_static": 100.0, "em_sampled": 50.0, "em_start": 100.0,
                 "em_any": 75.0}

# tiny_geo: 10|United States "Washington" (Common, US), 11|India "Delhi" (Common, India),
# 12|usa "Joe Biden" (Common, Other common), 12|Peru "Pedro Castillo" (Rare), 13|Ghana "cedi"
# (Rare).
GEO = {
    "10|United States": "washington",  # right
    "11|India": "Washington",          # wrong (alternate: EM Any right)
    "12|usa": "joe  biden.",           # right
    "12|Peru": "Joe Biden",            # wrong (alternate: EM Any right)
    "13|Ghana": "the cedi",            # right
}
# EM 3/5 = 60; Common 2/3 = 66.67; Rare 1/2 = 50; US 1/1 = 100; India 0/1 = 0;
# Other common 1/1 = 100; EM Any 5/5 = 100.
GEO_SCORES = {"em": 60.0, "em_common": 200 / 3, "em_rare": 50.0, "em_any": 100.0,
              "em_us": 100.0, "em_india": 0.0, "em_other_common": 100.0}

# tiny_present: 30 "Paris" (Stable), 31 "London" (Stable), 32 "Joe Biden" (Updated).
PRESENT = {"30": "paris", "31": "Paris", "32": "Biden"}
# EM 1/3 = 33.33; Stable 1/2 = 50; Updated 0/1 = 0.
PRESENT_SCORES = {"em": 100 / 3, "em_stable": 50.0, "em_updated": 0.0}

# tiny_curprev: 40|current "Joe Biden", 40|previous "Donald Trump", 41|current "Olaf Scholz".
CURPREV = {"40|current": "Joe Biden", "40|previous": "Joe Biden", "41|current": "olaf scholz"}
# EM 2/3 = 66.67; Current 2/2 = 100; Previous 0/1 = 0.
CURPREV_SCORES = {"em": 200 / 3, "em_current": 100.0, "em_previous": 0.0}

QA_CASES = [
    ("temp", TEMP_A, TEMP_A_SCORES),
    ("temp", TEMP_B, TEMP_B_SCORES),
    ("geo", GEO, GEO_SCORES),
    ("present", PRESENT, PRESENT_SCORES),
    ("curprev", CURPREV, CURPREV_SCORES),
]


def official_records(gold: GoldSplit, predictions: dict[str, str]) -> list[dict[str, Any]]:
    """The official layout: id, the context fields, pred_answer (and ignored extras)."""
    return [{"id": e.id, "question": e.question, **e.context,
             "answer": ["not trusted"], "pred_answer": predictions[e.key]}
            for e in gold.examples]


def qa_formats(gold: GoldSplit, predictions: dict[str, str]) -> dict[str, bytes]:
    """The same predictions in every accepted layout."""
    official = official_records(gold, predictions)
    compact = [{"key": k, "prediction": v} for k, v in predictions.items()]
    shuffled = list(official)
    random.Random(7).shuffle(shuffled)
    files = {
        "official-jsonl": jsonl(official),
        "official-json-list": json.dumps(official).encode(),
        "official-shuffled": jsonl(shuffled),
        "official-reversed-crlf": jsonl(reversed(official)).replace(b"\n", b"\r\n"),
        "compact-jsonl": jsonl(compact),
        "compact-jsonl-reversed": jsonl(reversed(compact)),
        "json-map": json.dumps(predictions, ensure_ascii=False).encode(),
        "json-map-pretty": json.dumps(predictions, indent=2).encode(),
        "csv": csv_bytes(("key", "prediction"), predictions.items()),
        "bom-jsonl": b"\xef\xbb\xbf" + jsonl(compact),
        "bom-csv": b"\xef\xbb\xbf" + csv_bytes(("key", "prediction"), predictions.items()),
        "blank-lines-jsonl": b"\n\n" + jsonl(compact).replace(b"\n", b"\n  \n"),
    }
    files.update({f"{name}.gz": gz(data) for name, data in list(files.items())})
    return files


@pytest.mark.parametrize(("track", "predictions", "expected"), QA_CASES)
def test_qa_hand_scores_in_every_format(tiny_golds: dict[str, GoldSplit], track: str,
                                        predictions: dict[str, str],
                                        expected: dict[str, float]) -> None:
    gold = tiny_golds[track]
    for name, data in qa_formats(gold, predictions).items():
        result = score_bytes(data, gold)
        assert result.metrics == pytest.approx(expected), name
        assert list(result.metrics) == list(expected)  # the track's metrics, in order


def test_format_names(tiny_temp: GoldSplit) -> None:
    files = qa_formats(tiny_temp, TEMP_A)
    assert parse(files["official-jsonl"], tiny_temp).format == "jsonl"
    assert parse(files["official-json-list"], tiny_temp).format == "json-records"
    assert parse(files["json-map.gz"], tiny_temp).format == "json-map"
    assert parse(files["csv"], tiny_temp).format == "csv"


def test_predictions_aligned_to_gold_order(tiny_temp: GoldSplit) -> None:
    records = [{"key": k, "prediction": v} for k, v in reversed(TEMP_A.items())]
    predictions = parse(jsonl(records), tiny_temp)
    assert predictions.keys == tuple(e.key for e in tiny_temp.examples)
    assert predictions.answers == tuple(TEMP_A[e.key] for e in tiny_temp.examples)


def test_temp_official_format_matches_on_date_type(tiny_temp: GoldSplit) -> None:
    # Examples 2|2010|sampled_year and 2|2010|start share id and date: only date_type tells
    # them apart, so swapping the date types swaps the predictions.
    swapped = dict(TEMP_A)
    swapped["2|2010|sampled_year"], swapped["2|2010|start"] = (
        TEMP_A["2|2010|start"], TEMP_A["2|2010|sampled_year"])
    # Now Sampled: "Canada" wrong + "new york" right = 1/2; Start: "beatles!" vs "U.S.A." wrong.
    # EM 1/4 = 25; EM Any: example 1 wrong, "Canada" is not an answer of 2|2010|sampled_year,
    # "beatles!" is not an answer of 2|2010|start, "new york" right -> 1/4 = 25.
    result = score_bytes(jsonl(official_records(tiny_temp, swapped)), tiny_temp)
    assert result.metrics == pytest.approx(
        {"em": 25.0, "em_static": 0.0, "em_sampled": 50.0, "em_start": 0.0, "em_any": 25.0})


def test_empty_prediction_matches_empty_normalized_gold() -> None:
    # True behaviour of EM: a gold answer that normalizes to "" (the release has one: ")" in
    # temp test) is matched by an empty prediction.
    from bm_helpers import temp_example

    gold = GoldSplit("temp", "test", [temp_example(5, "2000", "orig", (")",)),
                                      temp_example(6, "2000", "orig", ("x",))])
    result = score_bytes(json.dumps({"5|2000|orig": "", "6|2000|orig": ""}).encode(), gold)
    assert result.metrics["em"] == 50.0  # 1/2


def test_geo_partitions_rule() -> None:
    assert geo_partitions("United States") == ("common", "us")
    assert geo_partitions("united states") == ("common", "us")
    assert geo_partitions("India") == ("common", "india")
    for other in ("usa", "US", "U.S.", "UK", "New York City", "Georgia"):
        assert geo_partitions(other) == ("common", "other_common"), other
    for rare in ("Peru", "United States of America", "Kerala"):
        assert geo_partitions(rare) == ("rare", "rare"), rare


# --- identification: hand-computed confusion metrics, per source, AUC -----------------------

# tiny_id gold (index: label source): 0 T p, 1 T p, 2 T w, 3 T w, 4 T w, 5 F p, 6..9 F w
# (p = nq_passage.open, w = webq).
ID_PREDICTED = [True, True, True, False, False, True, False, False, False, False]
# 0-2 TP (3), 3-4 FN (2), 5 FP (1), 6-9 TN (4).
# accuracy (3+4)/10 = 70; precision 3/(3+1) = 75; recall 3/(3+2) = 60;
# F1 2*3/(2*3+1+2) = 6/9 = 66.67.
# nq_passage (0, 1, 5): TP 2, FP 1 -> accuracy 2/3 = 66.67, precision 2/3 = 66.67,
#   recall 2/2 = 100, F1 4/(4+1) = 80.
# webq (2, 3, 4, 6-9): TP 1, FN 2, TN 4 -> accuracy 5/7 = 71.43, precision 1/1 = 100,
#   recall 1/3 = 33.33, F1 2/(2+2) = 50.
ID_EXPECTED = {
    "accuracy": 70.0, "precision": 75.0, "recall": 60.0, "f1": 200 / 3,
    "accuracy_nq_passage": 200 / 3, "precision_nq_passage": 200 / 3,
    "recall_nq_passage": 100.0, "f1_nq_passage": 80.0,
    "accuracy_webq": 500 / 7, "precision_webq": 100.0, "recall_webq": 100 / 3,
    "f1_webq": 50.0,
}
# Scores whose >= 0.5 labels are ID_PREDICTED, with ties across classes:
ID_SCORES = [0.9, 0.8, 0.6, 0.4, 0.4, 0.6, 0.4, 0.2, 0.1, 0.1]
# AUC = P(score of a positive > score of a negative), ties count 1/2; 5 x 5 = 25 pairs:
#   0.9: beats all 5 -> 5;  0.8 -> 5;  0.6: ties 0.6, beats 0.4 0.2 0.1 0.1 -> 4.5;
#   0.4: loses to 0.6, ties 0.4, beats 0.2 0.1 0.1 -> 3.5; the other 0.4 -> 3.5.
#   (5 + 5 + 4.5 + 3.5 + 3.5) / 25 = 21.5 / 25 = 86%.
ID_AUC = 86.0


def id_formats(gold: GoldSplit) -> dict[str, bytes]:
    keys = [e.key for e in gold.examples]
    pairs = list(zip(keys, ID_PREDICTED, strict=True))
    files = {
        "official-bool": jsonl({"id": int(k), "label": v} for k, v in pairs),
        "official-yes-no": jsonl({"id": int(k), "label": "yes" if v else "no"} for k, v in pairs),
        "official-Yes-No-str-id": jsonl({"id": k, "label": "Yes" if v else "No"}
                                        for k, v in pairs),
        "official-1-0": jsonl({"id": int(k), "label": int(v)} for k, v in pairs),
        "compact-label": jsonl({"key": k, "label": v} for k, v in pairs),
        "compact-prediction": jsonl({"key": k, "prediction": v} for k, v in pairs),
        "json-map": json.dumps(dict(pairs)).encode(),
        "json-map-yes-no": json.dumps({k: "yes" if v else "no" for k, v in pairs}).encode(),
        "csv-label": csv_bytes(("key", "label"), ((k, "true" if v else "false")
                                                  for k, v in pairs)),
        "csv-prediction": csv_bytes(("key", "prediction"), ((k, int(v)) for k, v in pairs)),
    }
    files.update({f"{name}.gz": gz(data) for name, data in list(files.items())})
    return files


def test_identification_hand_scores_in_every_format(tiny_id: GoldSplit) -> None:
    for name, data in id_formats(tiny_id).items():
        result = score_bytes(data, tiny_id)
        assert result.metrics == pytest.approx(ID_EXPECTED), name
        assert result.counts["accuracy"] == 10
        assert result.counts["f1_nq_passage"] == 3
        assert result.counts["f1_webq"] == 7


def test_identification_scores_give_auc(tiny_id: GoldSplit) -> None:
    keys = [e.key for e in tiny_id.examples]
    files = {
        "official-score": jsonl({"id": int(k), "score": s}
                                for k, s in zip(keys, ID_SCORES, strict=True)),
        "compact-score": jsonl({"key": k, "score": s}
                               for k, s in zip(keys, ID_SCORES, strict=True)),
        "csv-score": csv_bytes(("key", "score"), zip(keys, ID_SCORES, strict=True)),
    }
    for name, data in {**files, **{f"{n}.gz": gz(d) for n, d in files.items()}}.items():
        result = score_bytes(data, tiny_id)
        # A score-only file is labelled at score >= 0.5, which gives ID_PREDICTED.
        assert result.metrics == pytest.approx({**ID_EXPECTED, "auc": ID_AUC}), name


def test_label_and_score_together(tiny_id: GoldSplit) -> None:
    # The label decides the confusion metrics; the score only feeds AUC.
    keys = [e.key for e in tiny_id.examples]
    inverted = [{"key": k, "label": not p, "score": s}
                for k, p, s in zip(keys, ID_PREDICTED, ID_SCORES, strict=True)]
    result = score_bytes(jsonl(inverted), tiny_id)
    # Inverted labels: TP 2 (3, 4), FN 3 (0-2), FP 4 (6-9), TN 1 (5): accuracy 3/10 = 30,
    # precision 2/6 = 33.33, recall 2/5 = 40, F1 4/(4+4+3) = 36.36.
    assert result.metrics["accuracy"] == pytest.approx(30.0)
    assert result.metrics["precision"] == pytest.approx(100 / 3)
    assert result.metrics["recall"] == pytest.approx(40.0)
    assert result.metrics["f1"] == pytest.approx(400 / 11)
    assert result.metrics["auc"] == pytest.approx(ID_AUC)


def test_no_predicted_positive_gives_zero_precision(tiny_geo_id: GoldSplit) -> None:
    # tiny_geo_id: 4 questions, labels T F T F, no sources -> no per-source metrics.
    data = json.dumps({e.key: False for e in tiny_geo_id.examples}).encode()
    result = score_bytes(data, tiny_geo_id)
    # TP 0, FP 0, FN 2, TN 2: accuracy 50; precision 0/0 -> 0 (zero_division=0); recall 0; F1 0.
    assert result.metrics == {"accuracy": 50.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}


@pytest.mark.parametrize(("scores", "labels", "expected"), [
    # All scores tied: every pair is a tie -> 50.
    ([0.5, 0.5, 0.5, 0.5], [True, False, True, False], 50.0),
    # Perfect separation -> 100; reversed -> 0.
    ([0.9, 0.1, 0.8, 0.2], [True, False, True, False], 100.0),
    ([0.1, 0.9, 0.2, 0.8], [True, False, True, False], 0.0),
    # Positives 0.7, 0.3; negatives 0.3, 0.3, 0.1: 0.7 beats 3 -> 3; 0.3 ties 2 (1), beats 0.1
    # (1) -> 2; (3 + 2) / 6 = 83.33.
    ([0.7, 0.3, 0.3, 0.3, 0.1], [True, True, False, False, False], 500 / 6),
])
def test_roc_auc_with_ties(scores: list[float], labels: list[bool], expected: float) -> None:
    assert roc_auc(np.array(scores), np.array(labels)) == pytest.approx(expected)


def test_auc_undefined_with_one_class() -> None:
    gold = GoldSplit("geo-id", "test", [id_example(1, True), id_example(2, True)])
    result = score(gold, parse(jsonl([{"key": "1", "score": 0.2}, {"key": "2", "score": 0.9}]),
                               gold), resamples=50)
    assert result.metrics["auc"] is None
    assert result.ci["auc"] is None
