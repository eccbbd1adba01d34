"""Scanning JSON text without trusting it: fences, balanced braces, nesting depth, surrogates.

The low-level pieces :mod:`helmdeck_dspy.decoding.parsing` builds on. Each is linear in the text
and never recurses, so hostile input (deep brackets, huge strings) cannot exhaust the stack.
"""

from __future__ import annotations

import re
from typing import Any

from helmdeck_dspy.io.jsonl import json_deeper_than

_STRUCTURAL = re.compile(r'[{}"\\]')


def fenced_bodies(text: str) -> list[str]:
    """Bodies of ``` fences, wherever they are (an unterminated last fence runs to the end)."""
    bodies = []
    pos = text.find("```")
    while pos != -1:
        line_end = text.find("\n", pos + 3)
        if line_end == -1:
            break
        close = text.find("```", line_end)
        body = text[line_end + 1 : close if close != -1 else len(text)].strip()
        if body:
            bodies.append(body)
        if close == -1:
            break
        pos = text.find("```", close + 3)
    return bodies


_JSON_FENCE_INFO = frozenset({"json", "jsonc", "json5", "jsonl"})
_ARRAY_OPEN = re.compile(r'\[\s*(?:[\[{"\]\d-]|true\b|false\b|null\b|$)')


def _opens_json(text: str) -> bool:
    """Whether ``text`` opens like a JSON object or array (``[`` then a JSON value, not a markdown link)."""
    return text.startswith("{") or (text.startswith("[") and _ARRAY_OPEN.match(text) is not None)


def json_shaped(text: str) -> bool:
    """Whether an answer is JSON-shaped: it opens with ``{`` or ``[`` once an enclosing fence is
    removed, or it holds a fenced JSON block (a fence tagged ``json``, or an untagged fence whose
    body opens with ``{`` or ``[``). Prose or code that merely contains braces (``f"{name}"``,
    ``\\boxed{4}``) is not; neither is a bare scalar."""
    text = text.strip()
    if _opens_json(text):
        return True
    pos = text.find("```")
    while pos != -1:
        line_end = text.find("\n", pos + 3)
        if line_end == -1:
            return False
        info = text[pos + 3 : line_end].strip().lower()
        close = text.find("```", line_end)
        body = text[line_end + 1 : close if close != -1 else len(text)].strip()
        if info in _JSON_FENCE_INFO or (not info and _opens_json(body)):
            return True
        if close == -1:
            return False
        pos = text.find("```", close + 3)
    return False


_SURROGATE_SOURCE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with unpaired UTF-16 surrogates replaced by U+FFFD, so it can be printed and stored."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def without_lone_surrogates(value: Any, text: str, notes: list[str]) -> Any:
    """``value`` with unpaired UTF-16 surrogates (from ``"\\udb19"`` escapes or raw in the text)
    replaced by U+FFFD, noted as ``lone_surrogate``: such strings cannot be encoded as UTF-8, so
    every consumer that prints or stores the plan would fail on them. ``value`` must already be
    known not to be deeper than ``domain.MAX_JSON_DEPTH``. A paired escape decodes to one character and
    is untouched; text without surrogate escapes or characters is not walked at all."""
    if ("\\u" not in text and text.isascii()) or _SURROGATE_SOURCE.search(text) is None:
        return value  # the first test is the common case, and much cheaper than the regex
    changed = False

    def clean(v: Any) -> Any:
        nonlocal changed
        if isinstance(v, str):
            if _SURROGATE.search(v):
                changed = True
                return _SURROGATE.sub("\ufffd", v)
            return v
        if isinstance(v, dict):
            return {clean(k): clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    out = clean(value)
    if changed and "lone_surrogate" not in notes:
        notes.append("lone_surrogate")
    return out if changed else value


def deeper_than(value: Any, limit: int, text: str | None = None) -> bool:
    """Whether ``value`` nests arrays/objects more than ``limit`` levels (iterative, no recursion).

    ``text`` is the JSON the value came from: with no more brackets than ``limit`` in it, the
    value cannot be that deep, and the walk is skipped (the common case, at C speed).
    """
    if text is not None and text.count("{") + text.count("[") <= limit:
        return False
    return json_deeper_than(value, limit)


def balanced_end(text: str, start: int) -> int:
    """End (exclusive) of the balanced ``{...}`` opening at ``start``, string- and escape-aware; -1 if none."""
    depth = 0
    in_string = False
    escaped = False
    for m in _STRUCTURAL.finditer(text, start):
        ch = m.group()
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                # An escape consumes the next character, structural or not.
                nxt = m.end()
                if nxt < len(text) and text[nxt] not in '{}"\\':
                    continue
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    return -1
