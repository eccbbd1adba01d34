"""Tokenising catalog text for ranking (shared by the rankers and the entry models' caches)."""

from __future__ import annotations

import re

STOP_WORDS = frozenset(
    "a an the this that these those of in to for and with on is are was be by from as it its or if "
    "i me my do does want need can should would".split()
)
_SPLIT = re.compile(r"[^a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case ASCII tokens of length >= 2, split on anything not a letter or digit, no stop words."""
    return [t for t in _SPLIT.split(text.lower()) if len(t) >= 2 and t not in STOP_WORDS]


def token_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))
