"""Raw agreement and Cohen's kappa of two annotators, against hand-computed values."""

from __future__ import annotations

import pytest

from benchmark.agreement import (
    AMBIGUOUS,
    ANSWER,
    CHANGED,
    NO_SINGLE_ANSWER,
    UNCHANGED,
    Response,
    agree,
    category,
    cohen_kappa,
    raw_agreement,
)


def answer(*answers: str) -> Response:
    return Response(ANSWER, answers)


def test_agreement_is_after_normalization() -> None:
    assert agree(answer("The Beatles"), answer("beatles!"))
    assert agree(answer("Paris", "paris, france"), answer("Paris France", "the paris"))
    assert not agree(answer("Paris"), answer("Paris", "Lyon"))
    assert agree(Response(AMBIGUOUS), Response(AMBIGUOUS))
    assert not agree(Response(AMBIGUOUS), Response(NO_SINGLE_ANSWER))
    assert not agree(answer("x"), Response(NO_SINGLE_ANSWER))


def test_category_against_the_last_known_answer() -> None:
    assert category(answer("Joe Biden"), ["joe biden", "Biden"]) == UNCHANGED
    assert category(answer("Biden"), ["joe biden", "Biden"]) == UNCHANGED
    assert category(answer("Donald Trump"), ["Joe Biden"]) == CHANGED
    assert category(answer("Biden", "Trump"), ["Biden"]) == CHANGED
    assert category(answer("anything"), []) == CHANGED  # no last known answer
    assert category(Response(AMBIGUOUS), ["x"]) == AMBIGUOUS


def test_raw_agreement_by_hand() -> None:
    pairs = [(answer("a"), answer("A")),                     # agree
             (answer("a"), answer("b")),                     # disagree
             (Response(AMBIGUOUS), Response(AMBIGUOUS)),     # agree
             (Response(AMBIGUOUS), answer("a"))]             # disagree
    assert raw_agreement(pairs) == pytest.approx(0.5)
    assert raw_agreement([]) is None


def test_kappa_textbook_two_categories() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2 / 0.5 = 0.4.
    pairs = ([("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10
             + [("no", "no")] * 15)
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_four_categories_by_hand() -> None:
    # 10 tasks. Rater A: U U U C C C C N A A; rater B: U U C C C C N N A U.
    a = [UNCHANGED] * 3 + [CHANGED] * 4 + [NO_SINGLE_ANSWER] + [AMBIGUOUS] * 2
    b = ([UNCHANGED] * 2 + [CHANGED] * 4 + [NO_SINGLE_ANSWER] * 2 + [AMBIGUOUS]
         + [UNCHANGED])
    # Agreements: U,U, C,C,C, N, A = 7 -> p_o = 0.7.
    # Marginals A: U 3, C 4, N 1, A 2; B: U 3, C 4, N 2, A 1.
    # p_e = (3*3 + 4*4 + 1*2 + 2*1) / 100 = 29/100 = 0.29.
    # kappa = (0.7 - 0.29) / 0.71 = 0.41 / 0.71.
    assert cohen_kappa(list(zip(a, b, strict=True))) == pytest.approx(0.41 / 0.71)


def test_kappa_edge_cases() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([(CHANGED, CHANGED)] * 4) is None  # p_e = 1: undefined
    assert cohen_kappa([(CHANGED, UNCHANGED), (UNCHANGED, CHANGED)]) == pytest.approx(-1.0)
    assert cohen_kappa([(CHANGED, CHANGED), (UNCHANGED, UNCHANGED)]) == pytest.approx(1.0)
