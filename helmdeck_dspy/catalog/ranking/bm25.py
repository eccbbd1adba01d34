"""Okapi BM25 over each entry's text fields, one document per entry (beyond helmdeck)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from helmdeck_dspy.catalog.models import EntryKind, Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.ranking.base import Ranked, sort_ranked
from helmdeck_dspy.catalog.text import token_set


def rank_bm25(
    catalog: RoutingGuide,
    intent: str,
    prior: Mapping[str, float] | None = None,
    *,
    k1: float = 1.5,
    b: float = 0.75,
) -> list[Ranked]:
    """Rank every entry by Okapi BM25 of the intent against the entry's text fields.

    One document per entry: id (twice, so naming a tool outweighs a passing mention),
    description, keywords, accepts/produces and, for pipelines, name and supersedes.
    """
    entries: list[tuple[Pack | Pipeline, EntryKind]] = [(p, "pack") for p in catalog.packs]
    entries += [(p, "pipeline") for p in catalog.pipelines]
    scores = bm25_scores([e.features.counts for e, _ in entries], [len(e.features.document) for e, _ in entries],
                         token_set(intent), k1=k1, b=b)
    items = [Ranked(entry.entry_id, kind, round(score, 6)) for (entry, kind), score in zip(entries, scores)]
    return sort_ranked(items, prior)


def bm25_scores(docs: Sequence[Mapping[str, int]], lengths: Sequence[int], query: frozenset[str], *,
                k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 of ``query`` against each document (its term counts and its length in tokens)."""
    n = len(docs)
    avg_len = (sum(lengths) / n) if n else 0.0
    df = Counter(t for d in docs for t in query if t in d)
    out = []
    for doc, length in zip(docs, lengths):
        score = 0.0
        for t in query:
            tf = doc.get(t, 0)
            if not tf:
                continue
            idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / (avg_len or 1.0)))
        out.append(score)
    return out
