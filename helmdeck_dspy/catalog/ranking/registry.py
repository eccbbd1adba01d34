"""Ranking catalog entries against an intent.

Three rankers with one signature, ``(catalog, intent, prior=None) -> list[Ranked]``:

- :func:`rank_lexical` — helmdeck's scorer: weighted overlap of intent tokens with keyword
  phrases, accepts/produces, names, ids, supersedes and descriptions.
- :func:`rank_bm25` — Okapi BM25 over the same fields, one document per entry.
- :func:`rank_embedding` — cosine similarity of sentence embeddings; needs the ``embed`` extra
  and is imported only when used.

Both keep zero scores and sort by score descending, then id ascending. ``prior`` adds a per-id
bonus (for example from plan history) before sorting.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from helmdeck_dspy.catalog.models import EntryKind, Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.text import STOP_WORDS, token_set, tokenize

__all__ = [
    "RANKERS",
    "Ranked",
    "STOP_WORDS",
    "high_confidence",
    "rank_bm25",
    "rank_embedding",
    "rank_lexical",
    "should_escalate",
    "tokenize",
    "top_k",
]

W_KEYWORD = 3.0
W_ACCEPTS_PRODUCES = 2.0
W_NAME = 2.0
W_ID = 2.0
W_DESCRIPTION = 1.0
W_SUPERSEDES = 2.5

HIGH_CONFIDENCE_THRESHOLD = 0.4
ESCALATE_MIN_ENTRIES = 3


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked entry."""

    id: str
    kind: EntryKind
    score: float


Ranker = Callable[..., list["Ranked"]]


def _score(entry: Pack | Pipeline, intent: frozenset[str]) -> float:
    f = entry.features
    score = W_KEYWORD * sum(1 for k in f.keywords if k <= intent)
    score += W_ACCEPTS_PRODUCES * sum(len(a & intent) for a in f.io)
    score += W_NAME * len(f.name & intent)
    score += W_DESCRIPTION * len(f.description & intent)
    if isinstance(entry, Pipeline):
        score += W_SUPERSEDES * sum(len(s & intent) for s in f.supersedes)
        score += W_ID * len(f.entry_id & intent)
    return score


def sort_ranked(items: list[Ranked], prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Add the optional per-id prior, then sort by score descending, id ascending."""
    if prior:
        items = [Ranked(r.id, r.kind, r.score + prior.get(r.id, 0.0)) for r in items]
    return sorted(items, key=lambda r: (-r.score, r.id))


def rank_lexical(catalog: RoutingGuide, intent: str, prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Rank every entry with helmdeck's weighted token-overlap scorer.

    Pack score: 3 per keyword phrase whose tokens all occur in the intent, 2 per intent token in
    each accepts/produces entry, 2 per token of the name, 1 per token of the description.
    Pipelines add 2.5 per token of each superseded pack and 2 per token of the id.
    """
    tokens = token_set(intent)
    items = [Ranked(p.name, "pack", _score(p, tokens) if tokens else 0.0) for p in catalog.packs]
    items += [Ranked(p.id, "pipeline", _score(p, tokens) if tokens else 0.0) for p in catalog.pipelines]
    return sort_ranked(items, prior)


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
    docs = [e.features.counts for e, _ in entries]
    query = token_set(intent)
    n = len(docs)
    avg_len = (sum(len(e.features.document) for e, _ in entries) / n) if n else 0.0
    df = Counter(t for d in docs for t in query if t in d)
    items = []
    for (entry, kind), doc in zip(entries, docs):
        length = len(entry.features.document)
        score = 0.0
        for t in query:
            tf = doc.get(t, 0)
            if not tf:
                continue
            idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / (avg_len or 1.0)))
        items.append(Ranked(entry.entry_id, kind, round(score, 6)))
    return sort_ranked(items, prior)


def rank_embedding(catalog: RoutingGuide, intent: str, prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Cosine similarity of sentence embeddings (optional extra; see :mod:`helmdeck_dspy.catalog.ranking.embedding`)."""
    from helmdeck_dspy.catalog.ranking.embedding import rank_embedding as rank

    return rank(catalog, intent, prior)


RANKERS: dict[str, Ranker] = {"lexical": rank_lexical, "bm25": rank_bm25, "embedding": rank_embedding}


def top_k(ranked: list[Ranked], k: int) -> list[Ranked]:
    """The first ``k`` entries; ``k <= 0`` or ``k >= len`` keeps all."""
    return ranked if k <= 0 or k >= len(ranked) else ranked[:k]


def high_confidence(ranked: list[Ranked], threshold: float = HIGH_CONFIDENCE_THRESHOLD) -> bool:
    """Whether the top entry clearly beats the runner-up: ``(top - second) / top >= threshold``."""
    if len(ranked) < 2:
        return True
    top, second = ranked[0].score, ranked[1].score
    if top == 0:
        return False
    if second == 0:
        return True
    return (top - second) / top >= threshold


def should_escalate(ranked: list[Ranked], min_entries: int = ESCALATE_MIN_ENTRIES) -> bool:
    """Whether a low-confidence ranking should go to the LLM filter pass."""
    return len(ranked) >= min_entries and not high_confidence(ranked, HIGH_CONFIDENCE_THRESHOLD)
