"""helmdeck's lexical ranker: weighted overlap of intent tokens with an entry's fields (and, beyond
helmdeck, with a pack's argument names)."""

from __future__ import annotations

from collections.abc import Mapping

from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.ranking.base import Ranked, sort_ranked
from helmdeck_dspy.catalog.text import token_set

W_KEYWORD = 3.0
W_ACCEPTS_PRODUCES = 2.0
W_NAME = 2.0
W_ID = 2.0
W_DESCRIPTION = 1.0
W_SUPERSEDES = 2.5
W_ARGUMENT = 1.0


def _score(entry: Pack | Pipeline, intent: frozenset[str]) -> float:
    f = entry.features
    score = W_KEYWORD * sum(1 for k in f.keywords if k <= intent)
    score += W_ACCEPTS_PRODUCES * sum(len(a & intent) for a in f.io)
    score += W_NAME * len(f.name & intent)
    score += W_DESCRIPTION * len(f.description & intent)
    score += W_ARGUMENT * len(f.arguments & intent)
    if isinstance(entry, Pipeline):
        score += W_SUPERSEDES * sum(len(s & intent) for s in f.supersedes)
        score += W_ID * len(f.entry_id & intent)
    return score


def rank_lexical(catalog: RoutingGuide, intent: str, prior: Mapping[str, float] | None = None) -> list[Ranked]:
    """Rank every entry with helmdeck's weighted token-overlap scorer.

    Pack score: 3 per keyword phrase whose tokens all occur in the intent, 2 per intent token in
    each accepts/produces entry, 2 per token of the name, 1 per token of the description.
    Pipelines add 2.5 per token of each superseded pack and 2 per token of the id. Beyond
    helmdeck (whose catalog has no argument schemas): 1 per token of the pack's argument names.
    """
    tokens = token_set(intent)
    items = [Ranked(p.name, "pack", _score(p, tokens) if tokens else 0.0) for p in catalog.packs]
    items += [Ranked(p.id, "pipeline", _score(p, tokens) if tokens else 0.0) for p in catalog.pipelines]
    return sort_ranked(items, prior)
