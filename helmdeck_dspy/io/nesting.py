"""How deep brackets nest in text, found without parsing it (so without recursion): a reader
refuses text nested deeper than it can parse before it parses it."""

from __future__ import annotations

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
