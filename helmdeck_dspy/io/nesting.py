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


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')
_SCALAR = re.compile(r'\s*("(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*))\s*(?=[,}])')


def top_level_scalar(text: str, key: str) -> str | int | None:
    """The value of ``key`` in the JSON object ``text`` when it is a string or an integer, read at
    the object's top level without parsing what nests inside it (so however deep that goes); the
    last of repeated keys, as Python's JSON reader takes it. None when ``text`` is no object, the
    key is absent, or its value is anything else."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return None
    found: object = None
    depth, key_next = 0, False
    for m in _TOKEN.finditer(stripped):
        token = m.group()
        if token in "{[":
            depth += 1
            key_next = depth == 1
        elif token in "}]":
            depth -= 1
            if depth <= 0:
                break
        elif token == ",":
            key_next = depth == 1
        elif token == ":":
            key_next = False
        elif key_next:  # a key of the top-level object
            key_next = False
            if _decode(token) == key:
                colon = re.compile(r"\s*:").match(stripped, m.end())
                value = _SCALAR.match(stripped, colon.end()) if colon else None
                found = _decode(value.group(1)) if value else None
    return found if isinstance(found, (str, int)) else None


def _decode(token: str) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return None
