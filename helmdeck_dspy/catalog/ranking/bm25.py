"""Okapi BM25 over each entry's text fields, one document per entry (beyond helmdeck).

Catalog text and the request go through the same analyser
(:func:`~helmdeck_dspy.catalog.text.terms`: identifiers split into words, stems), and the request
is expanded with synonyms (:mod:`.synonyms`): each request term scores the best of its own match
and its synonyms' matches at :data:`~.synonyms.SYNONYM_WEIGHT`; a term found in the entry's id
adds :data:`NAME_BOOST` idf units (BM25F-like: the id is a short field of its own).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from helmdeck_dspy.catalog.models import EntryKind, Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.ranking.base import Ranked, sort_ranked
from helmdeck_dspy.catalog.ranking.synonyms import Concept, expand
from helmdeck_dspy.catalog.text import term_set

NAME_BOOST = 1.0
"""What a request term found in an entry's id adds, in units of the term's idf (see :func:`concept_scores`)."""


def rank_bm25(
    catalog: RoutingGuide,
    intent: str,
    prior: Mapping[str, float] | None = None,
    *,
    k1: float = 1.5,
    b: float = 0.75,
    synonyms: bool = True,
    name_boost: float = NAME_BOOST,
) -> list[Ranked]:
    """Rank every entry by Okapi BM25 of the intent against the entry's text fields.

    One document per entry: id (twice, so naming a tool outweighs a passing mention),
    description, keywords, accepts/produces, argument names and descriptions and, for pipelines,
    name and supersedes. ``synonyms=False`` scores the request's own terms only.
    """
    entries: list[tuple[Pack | Pipeline, EntryKind]] = [(p, "pack") for p in catalog.packs]
    entries += [(p, "pipeline") for p in catalog.pipelines]
    query = term_set(intent, camel=False)
    concepts = expand(query) if synonyms else [{t: 1.0} for t in sorted(query)]
    scores = concept_scores([e.features.term_counts for e, _ in entries],
                            [len(e.features.terms) for e, _ in entries], concepts, k1=k1, b=b,
                            names=[e.features.id_terms for e, _ in entries], name_boost=name_boost)
    items = [Ranked(entry.entry_id, kind, round(score, 6)) for (entry, kind), score in zip(entries, scores)]
    return sort_ranked(items, prior)


def bm25_scores(docs: Sequence[Mapping[str, int]], lengths: Sequence[int], query: frozenset[str], *,
                k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 of ``query`` against each document (its term counts and its length in tokens)."""
    return concept_scores(docs, lengths, [{t: 1.0} for t in query], k1=k1, b=b)


def concept_scores(docs: Sequence[Mapping[str, int]], lengths: Sequence[int], concepts: Sequence[Concept], *,
                   k1: float = 1.5, b: float = 0.75, names: Sequence[frozenset[str]] | None = None,
                   name_boost: float = 0.0) -> list[float]:
    """BM25 where each query concept adds the best weighted BM25 term score among its terms.

    With ``names`` (one term set per document), a term that is also in the document's name adds
    ``name_boost`` times its idf, whatever the document's length: a tool named for what the request
    asks is the likeliest pick, however long its description runs.
    """
    n = len(docs)
    avg_len = (sum(lengths) / n) if n else 0.0
    wanted = {t for c in concepts for t in c}
    df = Counter(t for d in docs for t in wanted if t in d)
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    out = []
    for i, (doc, length) in enumerate(zip(docs, lengths)):
        norm = k1 * (1 - b + b * length / (avg_len or 1.0))
        name = names[i] if names is not None else frozenset()
        score = 0.0
        for concept in concepts:
            best = 0.0
            for t, weight in concept.items():
                tf = doc.get(t, 0)
                if tf:
                    bonus = name_boost if t in name else 0.0
                    best = max(best, weight * idf[t] * (tf * (k1 + 1) / (tf + norm) + bonus))
            score += best
        out.append(score)
    return out
