"""Span decoding never leaves the passage (input: [CLS] question [SEP] title [SEP] text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from baselines.spans import best_span, extend_to_words, passage_bounds

CLS, SEP, PAD = 2, 3, 0
#         0    1   2   3    4   5   6    7   8   9  10  11   12
IDS = [CLS, 10, 11, SEP, 20, 21, SEP, 30, 31, 32, 33, PAD, PAD]
STOP = frozenset({PAD, CLS})


def logits_with_peaks(peaks: dict[int, float], n: int = len(IDS)) -> list[float]:
    """Zero logits except at the given positions."""
    return [peaks.get(i, 0.0) for i in range(n)]


def test_passage_starts_after_second_sep_and_stops_at_padding() -> None:
    assert passage_bounds(IDS, SEP, STOP) == (7, 10)


def test_huge_logits_in_question_and_title_are_ignored() -> None:
    start = logits_with_peaks({1: 100.0, 4: 90.0, 6: 80.0, 8: 1.0})
    end = logits_with_peaks({2: 100.0, 5: 90.0, 3: 95.0, 9: 1.0})
    assert best_span(start, end, (7, 10), 10)[:2] == (8, 9)


def test_span_crossing_from_title_into_text_is_impossible() -> None:
    # best unrestricted span would start in the title (5) and end in the text (8)
    start = logits_with_peaks({5: 50.0, 7: 0.5})
    end = logits_with_peaks({8: 50.0})
    first, last, _ = best_span(start, end, (7, 10), 10)
    assert 7 <= first <= last <= 10 and (first, last) == (7, 8)


def test_padding_and_max_length_respected() -> None:
    start = logits_with_peaks({7: 5.0})
    end = logits_with_peaks({12: 100.0, 10: 4.0, 8: 1.0})
    assert best_span(start, end, (7, 10), 10)[:2] == (7, 10)
    assert best_span(start, end, (7, 10), 2)[:2] == (7, 8)


def test_no_second_sep_means_no_passage() -> None:
    assert passage_bounds([CLS, 10, SEP, 11, PAD], SEP, STOP) is None
    assert passage_bounds([CLS, 10, SEP, 11, SEP, PAD], SEP, STOP) is None


def test_trailing_sep_is_not_part_of_the_passage() -> None:
    assert passage_bounds([CLS, 1, SEP, 2, SEP, 5, 6, SEP, PAD], SEP, STOP) == (5, 6)


def test_extend_to_words_stays_in_passage() -> None:
    tokens = ["[CLS]", "q", "[SEP]", "t", "[SEP]", "##x", "ab", "##cd", "##ef", "g"]
    assert extend_to_words(tokens, 7, 7, (5, 9)) == (6, 8)
    assert extend_to_words(tokens, 5, 5, (5, 9)) == (5, 5)


def test_decode_answer_with_a_real_reader_tokenizer(dpr_models: dict[str, Path]) -> None:
    transformers = pytest.importorskip("transformers")
    from baselines.dpr import decode_answer

    tok = transformers.DPRReaderTokenizer.from_pretrained(str(dpr_models["reader"]))
    enc = tok(questions=["who is the president"], titles=["president of india"],
              texts=["modi is the prime minister"], padding="max_length", max_length=24)
    ids = enc["input_ids"][0]
    tokens = tok.convert_ids_to_tokens(ids)
    second_sep = [i for i, t in enumerate(tokens) if t == "[SEP]"][1]
    n = len(ids)
    start = [0.0] * n
    end = [0.0] * n
    start[1] = end[3] = 100.0  # "who is the" in the question
    start[second_sep - 1] = end[second_sep + 1] = 99.0  # title word + [SEP] + text word
    start[second_sep + 1] = 1.0
    end[second_sep + 1] = 0.5
    answer = decode_answer(tok, ids, start, end, 10)
    assert answer is not None and answer[0] == "modi"


def test_best_span_property_never_leaves_the_passage() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(
        question=st.integers(1, 6), title=st.integers(0, 4), text=st.integers(1, 12),
        pad=st.integers(0, 5), max_len=st.integers(1, 12), data=st.data())
    def check(question: int, title: int, text: int, pad: int, max_len: int,
              data: hypothesis.strategies.DataObject) -> None:
        ids = [CLS, *[10] * question, SEP, *[20] * title, SEP, *[30] * text, *[PAD] * pad]
        logits = st.lists(st.floats(-1e3, 1e3), min_size=len(ids), max_size=len(ids))
        start, end = data.draw(logits), data.draw(logits)
        bounds = passage_bounds(ids, SEP, STOP)
        assert bounds == (question + title + 3, question + title + 2 + text)
        first, last, _ = best_span(start, end, bounds, max_len)
        assert bounds[0] <= first <= last <= bounds[1] and last - first < max_len

    check()
