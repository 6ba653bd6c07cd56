"""Answer-equivalence metrics beside the paper's EM: token F1 and date- and number-aware EM.

Neither is in the paper; both are secondary columns and never rank a board.

* **Token F1** (SQuAD): the normalized prediction and a normalized gold answer as bags of
  white-space tokens; F1 of their overlap, the best over the gold answers. Two empty bags
  score 1 (SQuAD 2.0's rule), so F1 is 1 wherever EM holds.
* **em_equiv**: EM, or the prediction and a gold answer name the same date at the gold's
  granularity, the same year range, or the same number with the same words around it. The
  answer as a whole must be the date, range or number: nothing is searched inside longer
  text. Every rule only adds matches to EM, so em_equiv >= em on every file.

The rules are a small grammar of our own (regular expressions over the raw answer text). It
was chosen over dateparser and dateutil on every gold answer of the release:
docs/answer-equivalence.md has the measurements. Each answer becomes a set of *match keys*;
a prediction matches when its keys meet the gold's. A gold answer yields the key of its own
granularity only ("d:1945-07" for "July 1945"), a prediction the keys of its granularity and
every coarser one ("July 5, 1945" gives d:1945, d:1945-07 and d:1945-07-05): a finer
prediction can match a coarser gold, never the reverse.
"""

from __future__ import annotations

import calendar
import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from decimal import Decimal, InvalidOperation
from typing import Final

import numpy as np
import numpy.typing as npt

from .normalize import normalize_answer

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: What each lenient family accepts, in one sentence: the server's tooltips and the CLI.
LENIENT_RULES: Final[dict[str, str]] = {
    "em_equiv": (
        "Not in the paper. EM, or prediction and a gold answer are the same date at the gold's "
        "granularity (July 5, 1945 = 5 July 1945 = 1945-07-05 = the 5th of July 1945; a full "
        "date also matches a gold month or year), the same year range (1939-1945 = 1939 to "
        "1945 = 1939-45), or the same number (1,000 = 1000 = one thousand; 5 million = "
        "5,000,000) with the same words around it."),
    "f1": (
        "Not in the paper. SQuAD token F1 after the paper's normalization: the overlap of "
        "prediction and gold words, the best over the gold answers; partial credit."),
}


def lenient_family(metric: str) -> str | None:
    """The lenient family (em_equiv or f1) of a QA metric name, None for the paper's ones."""
    for family in LENIENT_RULES:
        if metric == family or metric.startswith(family + "_"):
            return family
    return None


# --- text clean-up before parsing ----------------------------------------------------------

#: UTF-8 read as cp1252 ("mojibake"), as in some gold answers, and dash and space variants.
_REPAIRS: Final = (
    ("\u00e2\u20ac\u201c", "-"), ("\u00e2\u20ac\u201d", "-"), ("\u00c2\u00a0", " "),
    ("\u2013", "-"), ("\u2014", "-"), ("\u2012", "-"), ("\u2212", "-"), ("\u2010", "-"),
    ("\u00a0", " "), ("\u2009", " "), ("\u202f", " "),
)
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|" \
    r"thur|thurs|fri|sat|sun)\.?,?\s+"
_LEAD = re.compile(rf"^(?:(?:in|on)\s+)?(?:the\s+)?(?:{_WEEKDAY})?")


def _clean(text: str) -> str:
    """Lower-case, dashes and spaces unified, a leading in/on/the/weekday and trailing
    punctuation (a dot, comma, semicolon, colon, opening bracket or dash) off."""
    text = text.lower()
    if not text.isascii():
        for bad, good in _REPAIRS:
            text = text.replace(bad, good)
    text = " ".join(text.split()).rstrip(" .,;:(-")
    return _LEAD.sub("", text, count=1)


# --- dates -----------------------------------------------------------------------------------

_MONTHS: Final[dict[str, int]] = {}
for _number, _names in enumerate((
        ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
        ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
        ("september", "sept", "sep"), ("october", "oct"), ("november", "nov"),
        ("december", "dec")), start=1):
    for _name in _names:
        _MONTHS[_name] = _number

_M = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_Y = r"(?P<year>[1-9]\d{2,3})(?:\s*(?P<era>ad|ce|bce?|a\.d\.?|b\.c\.?))?"
#: A year of one to four digits with its era written out: 44 BC, AD 79.
_ERA_YEAR = r"(?P<year>[1-9]\d{0,3})\s*(?P<era>ad|ce|bce?|a\.d\.?|b\.c\.?)"
_DATE_PATTERNS: Final = (
    rf"{_M},?\s+{_D}(?:,\s*|\s+)(?:of\s+)?{_Y}",          # July 5, 1945 / jul. 5th 1945
    rf"{_D}(?:\s+of)?\s+{_M},?\s+{_Y}",                   # 5 July 1945 / 5th of July, 1945
    rf"{_D}-{_M}-{_Y}",                                   # 5-Jul-1945
    rf"{_Y},?\s+{_M}\s+{_D}",                             # 1945 July 5
    r"(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})",  # 1945-07-05 (ISO 8601)
    r"(?P<year>\d{4})/(?P<month>\d{1,2})/(?P<day>\d{1,2})",  # 1945/07/05
    rf"{_M},?\s+(?:of\s+)?{_Y}",                          # July 1945 / July, 1945
    rf"{_Y},?\s+{_M}",                                    # 1945 July
    rf"(?:year\s+)?{_Y}",                                 # 1945 / the year 1945 / 410 AD
    _ERA_YEAR,                                            # 44 BC
    r"(?P<era>ad|ce|a\.d\.?)\s*(?P<year>[1-9]\d{0,3})",   # AD 79
)
#: Every form in one pattern, tried in order; each form's groups are numbered (year0 ...).
_GROUP = re.compile(r"\(\?P<([a-z]+)>")
_DATE_FORMS: Final = re.compile("|".join(
    f"(?P<form{i}>" + _GROUP.sub(rf"(?P<\g<1>{i}>", pattern) + ")"
    for i, pattern in enumerate(_DATE_PATTERNS)))
#: Each form's group names (year, month, day, era; None where the form has none).
_FIELDS: Final = tuple(
    tuple(f"{name}{i}" if f"(?P<{name}>" in pattern else None
          for name in ("year", "month", "day", "era"))
    for i, pattern in enumerate(_DATE_PATTERNS))
_RANGE = re.compile(
    r"(?:from\s+|between\s+)?(?P<start>\d{3,4})\s*(?:-|/|to|until|till|through|and)\s*"
    r"(?P<end>\d{4}|\d{2})")


_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in(year: int, month: int) -> int:
    """Days in a month of the proleptic Gregorian calendar (BC years as 4: leap is all)."""
    if month == 2 and calendar.isleap(year if year > 0 else 4):
        return 29
    return _DAYS[month - 1]


def date_keys(text: str, *, finer: bool) -> frozenset[str]:
    """Match keys of an answer that is a date or a year range (empty when it is neither).

    finer=False (a gold answer): the key of its own granularity; finer=True (a prediction):
    also the keys of every coarser granularity.
    """
    text = _clean(text)
    if not text or not text[0].isalnum():
        return frozenset()
    match = _DATE_FORMS.fullmatch(text)
    if match is not None:
        # The form's own group closes after the groups inside it: it is the last group.
        names = _FIELDS[int((match.lastgroup or "form0")[4:])]
        year_text, month_text, day_text, era = (
            match[name] if name else None for name in names)
        year = int(year_text or 0)
        if era and era.startswith("b"):
            year = -year
        if year == 0:
            return frozenset()
        if month_text is None:
            return frozenset({f"d:{year}"})
        month = int(month_text) if month_text.isdigit() else _MONTHS[month_text]
        if not 1 <= month <= 12:
            return frozenset()
        if day_text is None:
            keys = {f"d:{year}-{month:02d}"}
            return frozenset(keys | {f"d:{year}"} if finer else keys)
        day = int(day_text)
        if not 1 <= day <= _days_in(year, month):
            return frozenset()
        full = f"d:{year}-{month:02d}-{day:02d}"
        return frozenset({full, f"d:{year}-{month:02d}", f"d:{year}"} if finer else {full})
    match = _RANGE.fullmatch(text)
    if match is not None:
        start, end_text = int(match["start"]), match["end"]
        # "1939-45": the end shares the start's century.
        end = start - start % 100 + int(end_text) if len(end_text) == 2 else int(end_text)
        if start < end:
            return frozenset({f"r:{start}-{end}"})
    return frozenset()


# --- numbers ---------------------------------------------------------------------------------

_UNITS: Final[dict[str, int]] = {word: value for value, word in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen"))}
_TENS: Final[dict[str, int]] = {word: 10 * value for value, word in enumerate((
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), start=2)}
_SCALES: Final[dict[str, int]] = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
_NUMBER_WORDS: Final = frozenset(_UNITS) | frozenset(_TENS) | {"hundred"} | frozenset(_SCALES)
#: A token: digits (with valid thousands separators and decimals, not glued to letters), a
#: word (hyphens inside kept), or one other character.
_TOKEN = re.compile(
    r"(?P<digits>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\w])|[a-z]+(?:-[a-z]+)*|\S")


_PLAIN_NUMBER: Final = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def _word_number(words: Sequence[str]) -> int | None:
    """The value of number words ("one hundred and five", "twenty-one"); None if not one."""
    total, current, last_scale = 0, 0, None
    seen = False
    for word in words:
        parts = word.split("-")
        if len(parts) == 2 and parts[0] in _TENS and parts[1] in _UNITS and _UNITS[parts[1]] < 10:
            current += _TENS[parts[0]] + _UNITS[parts[1]]
        elif word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            if not 1 <= current <= 9:
                return None
            current *= 100
        elif word in _SCALES:
            scale = _SCALES[word]
            if current == 0 or (last_scale is not None and scale >= last_scale):
                return None
            total += current * scale
            current, last_scale = 0, scale
        elif word == "and" and seen:
            continue
        else:
            return None
        seen = True
    return total + current if seen else None


def number_keys(text: str) -> frozenset[str]:
    """The match key of an answer holding one number (digits or words), with its context.

    The key is the number's value and the normalized words before and after it, so that
    "5 million people" and "5,000,000 people" match but "5 million" and "5 people" do not.
    """
    plain = _PLAIN_NUMBER.fullmatch(text)
    if plain is not None:  # "1,638,000", "3.1": no words to parse
        return frozenset({f"n:{Decimal(text.replace(',', '')).normalize():f}||"})
    tokens = list(_TOKEN.finditer(_clean_number_text(text)))
    spans = []  # (first token, last token + 1, value) of each number in the answer
    i = 0
    while i < len(tokens):
        match = tokens[i]
        if match["digits"]:
            try:
                value = Decimal(match["digits"].replace(",", ""))
            except InvalidOperation:  # unreachable for the token pattern; be safe
                return frozenset()
            j = i + 1
            if j < len(tokens) and tokens[j][0] in _SCALES:
                value *= _SCALES[tokens[j][0]]
                j += 1
            spans.append((i, j, value))
            i = j
            continue
        if match[0] in _NUMBER_WORDS or match[0].split("-")[0] in _TENS:
            j = i
            while j < len(tokens) and (tokens[j][0] in _NUMBER_WORDS or tokens[j][0] == "and"
                                       or tokens[j][0].split("-")[0] in _TENS):
                j += 1
            while j > i + 1 and tokens[j - 1][0] == "and":  # "two and" → "two"
                j -= 1
            number = _word_number([t[0] for t in tokens[i:j]])
            if number is None:
                i += 1
                continue
            spans.append((i, j, Decimal(number)))
            i = j
            continue
        i += 1
    if len(spans) != 1:
        return frozenset()
    first, end, value = spans[0]
    before = normalize_answer(" ".join(t[0] for t in tokens[:first]))
    after = normalize_answer(" ".join(t[0] for t in tokens[end:]))
    value = value.normalize()
    return frozenset({f"n:{value:f}|{before}|{after}"})


def _clean_number_text(text: str) -> str:
    text = text.lower()
    if not text.isascii():
        for bad, good in _REPAIRS:
            text = text.replace(bad, good)
    return text


#: Text that can hold neither a date (they all have a year in digits) nor a number.
_MAYBE: Final = re.compile(r"\d|\b(?:" + "|".join(sorted(_NUMBER_WORDS | frozenset(_TENS)))
                          + r")", re.IGNORECASE)


def gold_keys(text: str) -> frozenset[str]:
    """Match keys of a gold answer: its date or range at its own granularity, its number."""
    if not _MAYBE.search(text):
        return frozenset()
    return date_keys(text, finer=False) | number_keys(text)


#: Gold key kinds: a date or year range, a number.
DATES, NUMBERS = 1, 2


def prediction_keys(text: str, kinds: int = DATES | NUMBERS) -> frozenset[str]:
    """Match keys of a prediction: its date at every granularity it fixes, range, number.

    kinds limits the parse to what the gold side can match (DATES, NUMBERS or both).
    """
    if text.isdigit() and text.isascii():  # the commonest short answer: a year or a count
        year = f"d:{text}" if kinds & DATES and 3 <= len(text) <= 4 and text[0] != "0" else None
        number = f"n:{int(text)}||" if kinds & NUMBERS else None
        return frozenset(k for k in (year, number) if k)
    if not _MAYBE.search(text):
        return frozenset()
    keys = date_keys(text, finer=True) if kinds & DATES else frozenset()
    return keys | number_keys(text) if kinds & NUMBERS else keys


def key_kinds(keys: frozenset[str]) -> int:
    """DATES and/or NUMBERS: the kinds of match keys in a set."""
    return ((DATES if any(k[0] in "dr" for k in keys) else 0)
            | (NUMBERS if any(k[0] == "n" for k in keys) else 0))


#: Every run of ASCII letters a date or year range can hold once lower-cased: month names,
#: weekdays, day suffixes, eras (a.d. gives "a" and "d"), and the words of the lead and of
#: the range patterns. A text holding another run is no date and no range (see could_be).
_DATE_WORDS: Final = frozenset(_MONTHS) | frozenset(
    _WEEKDAY.split("(?:", 1)[1].split(")", 1)[0].split("|")) | frozenset((
        "st", "nd", "rd", "th", "of", "year", "ad", "ce", "bc", "bce", "a", "d", "b", "c",
        "in", "on", "the", "from", "between", "to", "until", "till", "through", "and"))
#: Runs a number's key never needs in its context: the number's own words, and the articles
#: that the context's normalization removes.
_NUMBER_SPAN_WORDS: Final = _NUMBER_WORDS | frozenset(_TENS) | {"and", "a", "an", "the"}
_LETTER_RUN = re.compile(r"[a-z]+")


def could_be(text: str) -> tuple[bool, tuple[str, ...]]:
    """What a prediction's letters allow, before any parse: (whether it may be a date or
    range, the letter runs that a number key's context words must then hold).

    Both are necessary conditions, never sufficient. A date or range fullmatches its
    patterns on the lower-cased text (clean-up only drops characters at the ends or
    replaces non-ASCII ones), so each of its letter runs is one of _DATE_WORDS. A number key
    "n:V|before|after" is made of one number span (number words and "and" only) and the
    normalized words around it: normalization drops punctuation, white space and articles
    but never an ASCII letter of another word, so each other run of the text is a substring
    of before or after.
    """
    runs = frozenset(_LETTER_RUN.findall(text.lower()))
    return runs <= _DATE_WORDS, tuple(runs - _NUMBER_SPAN_WORDS)


# --- per-example metrics ---------------------------------------------------------------------


#: A gold answer's token bag as the F1 count reads it: the bag, its length, and whether no
#: token repeats (the overlap is then the bag's keys met, one C intersection).
Bag = tuple[Counter[str], int, bool]

_NO_GROUPS: Final[frozenset[int]] = frozenset()
#: GoldForms.f1_of of an example without alternates (never written to).
_NO_ALTERNATES: Final[dict[str, float]] = {}


class GoldForms:
    """The gold side of the lenient metrics for one list of gold-answer sets, built once."""

    def __init__(self, answer_sets: Sequence[Sequence[str]],
                 alternates: Sequence[Collection[str]] | None = None) -> None:
        """answer_sets: each example's gold answers; alternates: per example, normalized
        answer texts a wrong prediction often is (the question's answers in every context),
        whose F1 against the example's answers is computed here once (see f1_of)."""
        distinct = {a for answers in answer_sets for a in answers}
        keys = {a: gold_keys(a) for a in distinct}
        tokens = {a: normalize_answer(a).split() for a in distinct}
        #: Per example: the number of its gold-answer set (examples with the same set, as the
        #: contexts of one question often are, share it: their results are computed once).
        numbers: dict[frozenset[str], int] = {}
        sets = [frozenset(answers) for answers in answer_sets]
        self.group: list[int] = [numbers.setdefault(answers, len(numbers)) for answers in sets]
        # Everything below is built once per distinct answer set (and each token bag once per
        # distinct answer) and shared by the examples holding that set: a worker keeps these
        # for every dev and test split, so per-example copies would cost it ~20 MiB.
        bag_of: dict[str, Bag] = {
            a: (bag, len(tokens[a]), len(bag) == len(tokens[a]))
            for a in distinct for bag in (Counter(tokens[a]),)}
        set_keys = {answers: frozenset().union(*(keys[a] for a in answers)) for answers in numbers}
        set_kinds = {answers: key_kinds(k) for answers, k in set_keys.items()}
        set_years = {answers: None if set_kinds[answers] & NUMBERS else
                     tuple({k[2:].lstrip("-").split("-")[0] for k in set_keys[answers]})
                     for answers in numbers}
        set_bags = {answers: tuple({tuple(tokens[a]): bag_of[a] for a in answers}.values())
                    for answers in numbers}
        set_vocab = {answers: frozenset(t for a in answers for t in tokens[a])
                     for answers in numbers}
        # Every gold answer text of the split read as a prediction: wrong answers are often
        # another context's gold answer (the paper's outdated answers), so each is matched
        # here once against every gold set, through the sets holding each key.
        groups_of_key: dict[str, set[int]] = {}
        for answers, number in numbers.items():
            for key in set_keys[answers]:
                groups_of_key.setdefault(key, set()).add(number)
        #: Every gold answer text of the split: the numbers of the gold sets it matches as a
        #: prediction (em_equiv beyond EM), so that such a prediction needs no parse.
        self.known_groups: dict[str, frozenset[int]] = {}
        for a in distinct:
            matched = set().union(*(groups_of_key.get(k, ()) for k in prediction_keys(a)))
            self.known_groups[a] = frozenset(matched) if matched else _NO_GROUPS
        #: Per example: whether it has a gold answer at all (none: em_equiv and F1 are 0, as
        #: for the answers any_answer adds to most examples: nothing to read there).
        self.answered: BoolArray = np.array([bool(a) for a in sets], dtype=np.bool_)
        #: Per example: the union of the gold answers' match keys.
        self.keys: tuple[frozenset[str], ...] = tuple(set_keys[a] for a in sets)
        #: Per example: the kinds of its gold keys (DATES | NUMBERS), 0 for none.
        self.kinds: npt.NDArray[np.int64] = np.array([set_kinds[a] for a in sets],
                                                     dtype=np.int64)
        #: Per example whose keys are all dates or ranges: their years (as written in digits),
        #: one of which a matching prediction must contain; None when a number key exists.
        self.years: tuple[tuple[str, ...] | None, ...] = tuple(set_years[a] for a in sets)
        #: Per example: each distinct gold answer's token bag (see Bag).
        self.bags: tuple[tuple[Bag, ...], ...] = tuple(set_bags[a] for a in sets)
        #: Per example: every gold token, to skip predictions sharing none.
        self.vocab: tuple[frozenset[str], ...] = tuple(set_vocab[a] for a in sets)
        #: Per example: the context words of its gold number keys ("before after", joined),
        #: which every letter run of a matching prediction outside its number must be in.
        set_context = {answers: " | ".join(
            " ".join(k.split("|", 2)[1:]) for k in sorted(set_keys[answers]) if k[0] == "n")
            for answers in numbers}
        self.number_context: tuple[str, ...] = tuple(set_context[a] for a in sets)
        #: Per example: normalized alternate -> its best token F1 against the example's
        #: answers, the value the count gives (empty without alternates); one table per
        #: distinct (gold set, alternates), shared. A wrong prediction found there needs no
        #: count.
        self.f1_of: tuple[dict[str, float], ...]
        if alternates is None:
            self.f1_of = (_NO_ALTERNATES,) * len(sets)
        else:
            if len(alternates) != len(sets):
                raise ValueError("one list of alternates per gold-answer set is needed")
            tables: dict[tuple[int, frozenset[str]], dict[str, float]] = {}
            f1_of = []
            for position, texts in enumerate(alternates):
                number = self.group[position]
                forms = texts if isinstance(texts, frozenset) else frozenset(texts)
                table = tables.get((number, forms))
                if table is None:
                    # The example's own answers are left out: a prediction equal to one
                    # after normalization is an exact match, never looked up.
                    own = {" ".join(tokens[a]) for a in sets[position]}
                    bags = self.bags[position]
                    table = tables[(number, forms)] = {
                        text: best_token_f1(text.split(), bags) for text in forms
                        if text not in own}
                f1_of.append(table)
            self.f1_of = tuple(f1_of)


_forms: weakref.WeakKeyDictionary[object, dict[str, GoldForms]] = weakref.WeakKeyDictionary()
_forms_lock = threading.Lock()


def gold_forms(owner: object, which: str,
               answer_sets: Callable[[], Sequence[Sequence[str]]],
               alternates: Callable[[], Sequence[Collection[str]]] | None = None) -> GoldForms:
    """GoldForms of a gold split's answers (which: "answers" or "any"), cached per split.

    A server worker keeps its gold splits for its lifetime, so the gold side is parsed once
    per worker; the cache goes with the split. answer_sets and alternates (GoldForms's) are
    called on a miss only.
    """
    with _forms_lock:  # one build per split, even when a worker's threads start together
        cached = _forms.setdefault(owner, {})
        if which not in cached:
            cached[which] = GoldForms(answer_sets(),
                                      alternates() if alternates is not None else None)
        return cached[which]


def token_f1(prediction_tokens: Sequence[str], bag: Counter[str], length: int) -> float:
    """SQuAD token F1 of prediction tokens against one gold bag (both empty: 1)."""
    if not prediction_tokens or not length:
        return float(not prediction_tokens and not length)
    # The multiset overlap, counted down a copy of the gold bag (answers are a few tokens:
    # cheaper than building and intersecting two Counters).
    remaining = dict(bag)
    common = 0
    for token in prediction_tokens:
        left = remaining.get(token)
        if left:
            remaining[token] = left - 1
            common += 1
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction_tokens), common / length
    return 2 * precision * recall / (precision + recall)


def best_token_f1(words: list[str], bags: tuple[Bag, ...]) -> float:
    """The best token F1 of prediction tokens over gold bags (0 without a bag).

    token_f1's value, in its float operations: where the gold tokens are distinct the
    overlap is the number of distinct prediction tokens among them, one set intersection.
    """
    best = 0.0
    for bag, length, distinct in bags:
        if not distinct or not words or not length:
            value = token_f1(words, bag, length)
        else:
            common = len(bag.keys() & words)
            if common == 0:
                continue
            precision, recall = common / len(words), common / length
            value = 2 * precision * recall / (precision + recall)
        if value > best:
            best = value
    return best


def lenient_outcomes(
    predictions: Sequence[str], normalized: Sequence[str], em: BoolArray, forms: GoldForms,
    key_cache: dict[tuple[str, int], frozenset[str]],
    shapes: dict[str, tuple[bool, tuple[str, ...]]] | None = None,
) -> tuple[BoolArray, FloatArray]:
    """Per-example em_equiv and best token F1 of predictions against one gold side.

    Work is spent only where EM failed (F1 is 1 and em_equiv holds wherever EM holds) and
    the gold has an answer. em_equiv: only where the gold is a date, range or number; a
    prediction that is a gold answer of the split is matched in GoldForms; any other is
    parsed only when its letters allow a match (could_be, once per distinct prediction),
    once per (gold set, prediction). F1's count only where the prediction shares a token
    with the gold, once per (gold set, normalized prediction). key_cache maps a prediction
    to its match keys and shapes a prediction to could_be's answer, both shared between the
    gold sides.
    """
    equiv = em.copy()
    f1 = em.astype(np.float64)
    wrong = np.flatnonzero(~em & forms.answered)
    if not wrong.size:
        return equiv, f1
    group = forms.group
    kinds_of, years_of, gold_keys_of = forms.kinds, forms.years, forms.keys
    known, contexts = forms.known_groups, forms.number_context
    matched: dict[tuple[int, str], bool] = {}
    if shapes is None:
        shapes = {}
    for i in wrong[kinds_of[wrong] > 0].tolist():
        text = predictions[i]
        groups = known.get(text)
        if groups is not None:
            if group[i] in groups:
                equiv[i] = True
            continue
        years = years_of[i]
        # A date or range matches only a prediction holding one of its years (tested first,
        # uncached: a few substring searches cost less than the cache's lookup).
        if years is not None and not any(map(text.__contains__, years)):
            continue
        pair = (group[i], text)
        hit = matched.get(pair)
        if hit is None:
            kinds = int(kinds_of[i])
            shape = shapes.get(text)
            if shape is None:
                shape = shapes[text] = could_be(text)
            if not ((kinds & DATES and shape[0]) or (
                    kinds & NUMBERS and all(map(contexts[i].__contains__, shape[1])))):
                hit = matched[pair] = False
            else:
                entry = (text, kinds)
                keys = key_cache.get(entry)
                if keys is None:
                    keys = key_cache[entry] = prediction_keys(*entry)
                hit = matched[pair] = not gold_keys_of[i].isdisjoint(keys)
        if hit:
            equiv[i] = True
    # Token F1: looked up where the prediction is an alternate of the example (another
    # context's answer, as wrong predictions often are); elsewhere 0 without a shared token
    # (an empty gold bag needs an empty prediction), as most other wrong predictions are:
    # tested first, uncached (most pairs are distinct); then counted once per (gold set,
    # normalized prediction). Plain loops: cheaper here than C loops over built lists (a
    # whole-file test over token ids, one sorted search, cost more than this loop).
    alternate_f1, vocab, bags = forms.f1_of, forms.vocab, forms.bags
    scores: dict[tuple[int, str], float] = {}
    for i in wrong.tolist():
        text = normalized[i]
        value = alternate_f1[i].get(text)
        if value is None:
            words = text.split()
            if words and vocab[i].isdisjoint(words):
                continue
            pair = (group[i], text)
            value = scores.get(pair)
            if value is None:
                value = scores[pair] = best_token_f1(words, bags[i])
        if value:
            f1[i] = value
    return equiv, f1
