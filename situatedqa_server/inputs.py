"""Central checks of text input: control characters, over-long URLs, and names shown to others.

Every request's path, query string, form fields, file names and JSON strings pass
`check_request` before any view runs, so no NUL byte reaches the database (PostgreSQL
refuses it in text) and every view can trust that its text is printable.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from flask import Flask, request

from benchmark.limits import MAX_JSON_DEPTH, json_depth_exceeds

from .services.errors import InvalidJson, InvalidQuery, InvalidRequest, NotFound, UriTooLong

#: C0 controls except tab, newline and carriage return, and DEL: never valid in text input.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: The words a yes/no field takes, and what each means (case is ignored; empty: no).
YES_WORDS = {"yes": True, "true": True, "1": True, "on": True,
             "no": False, "false": False, "0": False, "off": False, "": False}
#: Longest request target (path and query) the app answers; gunicorn's own cap is higher.
MAX_URL_LENGTH = 4096
#: Categories refused in names: controls, format characters (bidi, zero-width), unassigned,
#: private use, surrogates, line and paragraph separators.
NAME_REFUSED = {"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"}


def control_problem(text: str) -> str | None:
    """Why text cannot be accepted (a NUL or control character), or None."""
    match = CONTROL.search(text)
    if match is None:
        return None
    char = match.group()
    if char == "\x00":
        return "contains a NUL character (U+0000); remove it"
    return f"contains a control character (U+{ord(char):04X}); remove it"


def name_problem(text: str) -> str | None:
    """Why a name shown to others is refused (invisible or direction-changing), or None."""
    for char in text:
        if unicodedata.category(char) in NAME_REFUSED:
            kind = ("a control" if unicodedata.category(char) == "Cc"
                    else "an invisible or direction-changing")
            return (f"contains {kind} character (U+{ord(char):04X} "
                    f"{unicodedata.name(char, 'unnamed')}); remove it")
    return None


def clean_name(text: str) -> str:
    """A name in NFC with runs of white space made one space, so equal names compare equal."""
    return " ".join(unicodedata.normalize("NFC", text).split())


#: Shown for a multipart part whose Content-Disposition has no name (Werkzeug keeps it
#: under the name None, which no view expects).
NAMELESS = "(a part without a name)"


def _problems(pairs: Any) -> dict[str, str]:
    """Field name → problem for every (name, values) pair with a bad name or value."""
    problems = {}
    for name, values in pairs:
        if not isinstance(name, str):
            problems[NAMELESS] = ("has no name in its Content-Disposition header; give every "
                                  "part a name (form-data; name=\"...\")")
            continue
        if problem := control_problem(name):
            problems["(a field name)"] = problem
            continue
        for text in values:
            if isinstance(text, str) and (problem := control_problem(text)):
                problems[name] = problem
    return problems


def _json_problems(value: Any, where: str = "body") -> dict[str, str]:
    """Problems of every string (keys included) in a parsed JSON document."""
    if isinstance(value, str):
        problem = control_problem(value)
        return {where: problem} if problem else {}
    problems: dict[str, str] = {}
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        path = f"{where}.{key}"
        if isinstance(key, str) and (problem := control_problem(key)):
            problems[where] = f"a key {problem}"
        problems.update(_json_problems(item, path))
    return problems


def check_request() -> None:
    """400 naming the field for a control character in any text input (404 in the path);
    414 for long URLs."""
    target = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI") or (
        request.full_path)
    if len(target) > MAX_URL_LENGTH:
        raise UriTooLong(
            f"the URL is longer than the server's limit of {MAX_URL_LENGTH} characters")
    if problem := control_problem(request.path):
        # No route has such a path: "not found", naming the reason.
        raise NotFound(f"no such page: the URL path {problem}")
    if problems := _problems(request.args.lists()):
        raise InvalidQuery(_message("query parameter", problems), {"fields": problems})
    problems = _problems(request.form.lists()) if request.form else {}
    problems.update(_problems((name, [f.filename for f in files])
                              for name, files in request.files.lists()))
    if request.is_json:
        problems.update(_json_problems(_json_body()))
    if problems:
        raise InvalidRequest(_message("field", problems), {"fields": problems})


def _json_body() -> Any:
    """The request's JSON body (None when it is not JSON); 400 when it nests deeper than
    limits.MAX_JSON_DEPTH, checked on the bytes before decoding: Python's decoder raises
    RecursionError on about 1,000 levels, which no view would catch."""
    if json_depth_exceeds(request.get_data(cache=True)):
        raise InvalidJson(f"the JSON body nests deeper than "
                       f"{MAX_JSON_DEPTH} levels; no request of this server needs that")
    try:
        return request.get_json(silent=True)
    except RecursionError:  # deep nesting the bracket count did not see: still refused
        raise InvalidJson("the JSON body nests too deeply") from None


def _message(kind: str, problems: dict[str, str]) -> str:
    """'the field 'x' contains …' for the first problem, so pages name the field too."""
    name, problem = next(iter(problems.items()))
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"the {kind} {name!r} {problem}{more}"


def init_app(app: Flask) -> None:
    """Run the check before every request."""
    app.before_request(check_request)
