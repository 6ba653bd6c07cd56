"""URL converters: path ids that cannot name a row match no route (404), never a DB error."""

from __future__ import annotations

from werkzeug.routing.converters import IntegerConverter

#: The largest id an Integer primary key holds on PostgreSQL (int4) and SQLite alike.
MAX_ID = 2**31 - 1


def up_to(limit: int) -> str:
    """A regex of the decimal numbers 0..limit, without leading zeros."""
    digits = str(limit)
    shorter = ["0"] + ([rf"[1-9]\d{{0,{len(digits) - 2}}}"] if len(digits) > 1 else [])
    same_length = []
    for position, digit in enumerate(digits):
        low = "1" if position == 0 else "0"
        if int(digit) > int(low):
            rest = len(digits) - position - 1
            same_length.append(f"{digits[:position]}[{low}-{int(digit) - 1}]"
                               + (rf"\d{{{rest}}}" if rest else ""))
    return "|".join([*shorter, *same_length, digits])


class IdConverter(IntegerConverter):
    """`<int:…>` that matches 0..MAX_ID only.

    A bound in the regex rather than `max=`: Werkzeug checks methods before converters, so
    a value over `max` on a path another method accepts would answer 405 instead of 404.
    """

    regex = f"(?:{up_to(MAX_ID)})"
