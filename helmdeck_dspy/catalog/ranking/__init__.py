"""Ranking catalog entries against an intent; :data:`RANKERS` names every ranker.

- ``lexical`` — helmdeck's scorer: weighted overlap of intent tokens with keyword phrases,
  accepts/produces, names, ids, supersedes and descriptions (:mod:`.lexical`).
- ``bm25`` — Okapi BM25 over the same fields, one document per entry (:mod:`.bm25`).
- ``embedding`` — cosine similarity of sentence embeddings; its model loads on first use and
  needs the ``embed`` extra (:mod:`.embedding`).

A new ranker is a function with the :data:`~.base.Ranker` signature in its own module, added to
:data:`RANKERS` here.
"""

from __future__ import annotations

from helmdeck_dspy.catalog.ranking.base import (
    Ranked,
    Ranker,
    high_confidence,
    should_escalate,
    sort_ranked,
    top_k,
)
from helmdeck_dspy.catalog.ranking.bm25 import rank_bm25
from helmdeck_dspy.catalog.ranking.embedding import rank_embedding
from helmdeck_dspy.catalog.ranking.lexical import rank_lexical
from helmdeck_dspy.catalog.text import STOP_WORDS, tokenize

RANKERS: dict[str, Ranker] = {"lexical": rank_lexical, "bm25": rank_bm25, "embedding": rank_embedding}

__all__ = [
    "RANKERS",
    "Ranked",
    "Ranker",
    "STOP_WORDS",
    "high_confidence",
    "rank_bm25",
    "rank_embedding",
    "rank_lexical",
    "should_escalate",
    "sort_ranked",
    "tokenize",
    "top_k",
]
