"""How deep brackets nest in text, found without parsing it (so without recursion): a reader
refuses text nested deeper than it can parse before it parses it."""

from __future__ import annotations

import json
import re

_BRACKETS = re.compile(r"[{}\[\]]")


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether brackets nest more than ``limit`` deep anywhere in ``text``, counting brackets inside
    strings too (a reader decides for itself where a broken string ends, so this errs on the side of
    refusing). Unbalanced closers are ignored."""
    if text.count("{") + text.count("[") <= limit:
        return False
    depth = 0
    for m in _BRACKETS.finditer(text):
        if m.group() in "{[":
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


_STRUCTURE = re.compile(r'[{}\[\],:"]')
_VALUE = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*))\s*(?=[,}])')


def top_level_scalar(text: str, key: str) -> str | int | None:
    """The value of ``key`` in the JSON object ``text`` when it is a string or an integer, read at
    the object's top level without parsing what nests inside it (so however deep that goes); the
    last of repeated keys, as Python's JSON reader takes it. None when ``text`` is no object, the
    key is absent, or its value is anything else. One pass: every character is looked at a bounded
    number of times, whatever the text holds (runs of escaped quotes included)."""
    text = text.lstrip()
    if not text.startswith("{"):
        return None
    found: object = None
    depth, key_next, pos = 0, False, 0
    while (m := _STRUCTURE.search(text, pos)) is not None:
        char, at = m.group(), m.start()
        pos = at + 1
        if char == '"':
            end = _string_end(text, at)
            if end is None:
                break
            if key_next and _decode(text[at:end + 1]) == key:  # a key of the top-level object
                value = _VALUE.match(text, end + 1)
                found = _decode(value.group(1)) if value else None
            key_next, pos = False, end + 1
        elif char in "{[":
            depth += 1
            key_next = depth == 1
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                break
        else:  # "," or ":"
            key_next = char == "," and depth == 1
    return found if isinstance(found, (str, int)) else None


def _string_end(text: str, start: int) -> int | None:
    """Where the JSON string opened at ``start`` closes (None: it does not): the next quote not
    escaped by an odd run of backslashes."""
    at = start
    while (at := text.find('"', at + 1)) != -1:
        slashes = 0
        while text[at - 1 - slashes] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return at
    return None


def _decode(token: str) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return None
