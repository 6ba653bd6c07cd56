"""A machine's file paths kept out of what is published: a path becomes its last component.

A harness writes the paths it was given into its files (lm-eval's `pretrained=/models/mine`
lands in every document our task writes; Inspect records `model_args.model_path`), and a
runner's sidecar could name the folders it read. Such a path says nothing about the run that
the file name and its hash do not, and it tells the world the layout of someone's machine:
every string stored or shown from such a file goes through `public_text` first.

Pure and cheap: imports nothing beyond the standard library (the server, the runners and the
tasks all use it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ABSOLUTE_PATH", "public_text", "public_value"]

#: An absolute path inside a text: POSIX (`/a/b`), home-relative (`~/a`), a Windows drive
#: (`C:\a`, `C:/a`) or a UNC share (`\\host\share`). Not matched: a relative path (`org/model`,
#: Inspect's `hf/org/model`), a URL (`https://host/a`: the `//` follows a colon) and a word
#: with a slash (`and/or`, `1/2`). A component stops at whitespace, quotes, brackets, commas,
#: semicolons and `=` (so `pretrained=/a/b,dtype=x` keeps its other options).
ABSOLUTE_PATH: Final = re.compile(
    r"(?<![\w:/\\.~-])"
    r"(?:~|[A-Za-z]:|\\\\[^\s\\/,;'\"()\[\]{}=<>]+)?"
    r"(?:[/\\][^\s\\/,;'\"()\[\]{}=<>]*)+")


def _last_component(match: re.Match[str]) -> str:
    found = match.group(0)
    if found in ("/", "\\") or not any(part for part in re.split(r"[/\\]", found)[1:]):
        return found  # a lone slash (or `//`) is punctuation, not a path
    return [part for part in re.split(r"[/\\]", found) if part][-1]


def public_text(text: str) -> str:
    """TEXT with every absolute path in it replaced by the path's last component."""
    if "/" not in text and "\\" not in text:
        return text
    return ABSOLUTE_PATH.sub(_last_component, text)


def public_value(value: Any) -> Any:
    """A JSON value with `public_text` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return public_text(value)
    if isinstance(value, Mapping):
        return {public_text(str(k)) if isinstance(k, str) else k: public_value(v)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [public_value(item) for item in value]
    return value
