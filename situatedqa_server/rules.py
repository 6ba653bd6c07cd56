"""The rules of the upload's metadata fields, declared once: the form validates with them and
the OpenAPI description is generated from them (openapi.py), so the two cannot disagree.

Each rule is a regular expression in the subset that Python's `re` and ECMA-262 (JSON
Schema's `pattern`) read alike: no look-around, no named groups, no possessive quantifiers.
"""

from __future__ import annotations

import re

# --- knowledge date: a real calendar date as YYYY, YYYY-MM or YYYY-MM-DD ---------------------

#: The loose shape, to tell "wrong shape" from "not a date in the calendar" in messages.
DATE_SHAPE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
#: Years 0001 to 9999 (datetime.date has no year 0).
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
#: Leap years of the proleptic Gregorian calendar: divisible by 4, not by 100 unless by 400.
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DAY_1_28 = "(?:0[1-9]|1[0-9]|2[0-8])"
#: The calendar's days, YYYY-MM-DD (the alternatives of a full date below).
_DAYS = (f"{_YEAR}-(?:0[13578]|1[02])-(?:{_DAY_1_28}|29|30|31)"
         f"|{_YEAR}-(?:0[469]|11)-(?:{_DAY_1_28}|29|30)"
         f"|{_YEAR}-02-{_DAY_1_28}"
         f"|{_LEAP_YEAR}-02-29")
#: Exactly the dates datetime.date accepts (tests/server/test_rules.py compares them).
KNOWLEDGE_DATE_PATTERN = "^(?:" f"{_YEAR}(?:-(?:0[1-9]|1[0-2]))?|{_DAYS}" ")$"
KNOWLEDGE_DATE = re.compile(KNOWLEDGE_DATE_PATTERN)

# --- knowledge cutoff: one calendar day, YYYY-MM-DD (and not after today: the form) ----------

#: Exactly the days datetime.date.fromisoformat reads from ten characters.
KNOWLEDGE_CUTOFF_PATTERN = f"^(?:{_DAYS})$"
KNOWLEDGE_CUTOFF = re.compile(KNOWLEDGE_CUTOFF_PATTERN)

# --- parameter count: 1 to 1000T, written 770M, 11B or 1500000 -------------------------------

#: What the form reads: a number (decimals too), an optional unit, white space around.
PARAMETER_SHAPE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*$")
PARAMETER_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
#: The parameter counts accepted: 1 to 1000T (the column holds up to about 9.2e18).
MIN_PARAMETERS, MAX_PARAMETERS = 1, 10**15
#: Longest text of the field (the form's Length validator).
MAX_PARAMETER_TEXT = 32


def _whole_numbers_up_to(power: int) -> str:
    """A regex of the whole numbers 1 to 10**power, leading zeros allowed."""
    if power == 0:
        return "0*1"
    return f"0*(?:[1-9][0-9]{{0,{power - 1}}}|10{{{power}}})"


def _parameter_count_pattern() -> str:
    """The integer spellings the form accepts (every unit, both cases): each unit's
    mantissa runs from 1 to MAX_PARAMETERS / its scale."""
    alternatives = []
    for unit, scale in PARAMETER_SCALE.items():
        top = MAX_PARAMETERS // scale
        power = len(str(top)) - 1
        if top != 10**power or MIN_PARAMETERS != 1:
            raise ValueError("the parameter-count pattern needs bounds of 1 and a power of ten")
        cases = f"[{unit}{unit.upper()}]" if unit else ""
        alternatives.append(_whole_numbers_up_to(power) + cases)
    return "^(?:" + "|".join(alternatives) + ")$"


#: The whole-number spellings of an accepted count (the form also reads decimals, e.g.
#: 1.5B, and white space around: the API description documents this subset).
PARAMETER_COUNT_PATTERN = _parameter_count_pattern()
