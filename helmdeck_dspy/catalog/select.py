"""Budget-fitted catalog selection: compaction, then ranking when compaction is not enough.

:func:`select_catalog` follows helmdeck's cascade:

1. no cap (``max_catalog_bytes <= 0``): the catalog passes through;
2. compaction (:func:`compact_catalog`); if it fits, done;
3. otherwise rank the catalog against the intent and cut it (:func:`cut_ranked`), packs first then
   pipelines, each in rank order, marking ``<ranker>.top_n`` and, when the ranking is not
   confident, ``<ranker>.low_confidence`` (the trigger for the optional LLM filter pass).

The cut: helmdeck keeps a fixed top N (25 on tier B, 12 otherwise); a budget row's
``max_catalog_entries`` still fixes N that way. By default (``max_catalog_entries = 0``) the
byte cap decides: the top N always, then every further entry, in rank order, that still fits
``max_catalog_bytes``. Compact entries (signatures instead of argument schemas) so buy more tools.

Beyond helmdeck: a pipeline whose ``supersedes`` lists a pack the intent names verbatim always
survives the cut, so "use blog.rewrite_for_audience ..." still offers the pipeline that replaces it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from helmdeck_dspy.domain import DEFAULT_RANK_SOURCE, DEFAULT_RANKER
from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import Trim, compact_catalog
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking import RANKERS, Ranked, should_escalate

TOP_N_TIER_B = 25
TOP_N_DEFAULT = 12
TOP_N = "top_n"
LOW_CONFIDENCE = "low_confidence"
"""Selection markers in ``Trim.dropped``, each after the ranker's name (``bm25.top_n``,
``lexical.low_confidence``: helmdeck's spelling for its lexical ranker)."""
FILTERED = "llm_filter"
"""The ``Trim.dropped`` entry of the LLM filter pass: ``llm_filter(picks=N,kept=M)``."""


def marked(trim_dropped: list[str] | tuple[str, ...], mark: str) -> bool:
    """Whether a selection's ``dropped`` list holds ``mark`` (:data:`TOP_N` or
    :data:`LOW_CONFIDENCE`) under any ranker's name."""
    return any(d.endswith(f".{mark}") and "(" not in d for d in trim_dropped)


def top_n_for(tier: str) -> int:
    """How many entries survive the ranking cut for a tier."""
    return TOP_N_TIER_B if tier == "B" else TOP_N_DEFAULT


def _names_pack(intent: str, name: str) -> bool:
    """Whether ``intent`` names ``name`` as a whole identifier (not inside a longer one)."""
    return re.search(r"(?<![\w.-])" + re.escape(name.lower()) + r"(?![\w-])", intent) is not None


def _superseding_for_named_packs(catalog: RoutingGuide, intent: str) -> list[str]:
    text = intent.lower()
    named = {p.name for p in catalog.packs if p.name.lower() in text and _names_pack(text, p.name)}
    return [p.id for p in catalog.pipelines if named.intersection(p.metadata.supersedes)]


def cut_ranked(
    ranked: list[Ranked], catalog: RoutingGuide, n: int, *, max_bytes: int = 0, must_keep: Sequence[str] = ()
) -> list[Ranked]:
    """The entries a ranking cut keeps, by score then id.

    The first ``n`` are kept, with ``must_keep`` ids present in ``ranked`` taking the places of the
    lowest-ranked others. With ``max_bytes > 0`` every further entry, in rank order, whose wire
    form still fits the catalog under ``max_bytes`` (sized as ``catalog`` renders it) is kept too.
    """
    by_id = {r.id: r for r in ranked}
    protected_ids = set(must_keep)
    order = [by_id[i] for i in dict.fromkeys(must_keep) if i in by_id]
    order += [r for r in ranked if r.id not in protected_ids]
    kept = order[:n]
    if max_bytes > 0:
        sizes = {e.entry_id: e.wire_bytes for e in (*catalog.packs, *catalog.pipelines)}
        pack_sizes = [sizes[r.id] for r in kept if r.kind == "pack"]
        pipe_sizes = [sizes[r.id] for r in kept if r.kind != "pack"]
        for r in order[n:]:
            group = pack_sizes if r.kind == "pack" else pipe_sizes
            group.append(sizes[r.id])
            if RoutingGuide.rendered_bytes(pack_sizes, pipe_sizes) <= max_bytes:
                kept.append(r)
            else:
                group.pop()
    return sorted(kept, key=lambda r: (-r.score, r.id))


def restrict_catalog(catalog: RoutingGuide, ordered_ids: list[str]) -> RoutingGuide:
    """Keep only ``ordered_ids``: packs then pipelines, each in the given order; unknown ids ignored."""
    packs = {p.name: p for p in catalog.packs}
    pipes = {p.id: p for p in catalog.pipelines}
    ordered_ids = list(dict.fromkeys(ordered_ids))
    return RoutingGuide(
        packs=tuple(packs[i] for i in ordered_ids if i in packs),
        pipelines=tuple(pipes[i] for i in ordered_ids if i in pipes),
    )


def select_catalog(
    catalog: RoutingGuide,
    budget: Budget,
    intent: str,
    *,
    ranker: str = DEFAULT_RANKER,
    prior: Mapping[str, float] | None = None,
    rank_source: Literal["compacted", "full"] = DEFAULT_RANK_SOURCE,
    signatures: bool = True,
) -> tuple[RoutingGuide, Trim]:
    """Fit ``catalog`` to ``budget`` for ``intent``.

    Args:
        catalog: The full catalog (never mutated).
        budget: The model's budget (``max_catalog_bytes`` and ``tier`` are used).
        intent: The user's request, used for ranking.
        ranker: ``bm25`` (the default), ``lexical`` (helmdeck's scorer) or ``embedding``.
        prior: Optional per-id score bonus added before ranking (e.g. plan history).
        rank_source: Rank the full entries (the default; the kept entries are still the compacted
            ones) or the compacted entries (helmdeck's behaviour: pack keywords are already gone).
        signatures: Argument schemas as compact signature lines (the default), or as JSON Schema
            without descriptions (helmdeck's rendering, kept for comparisons).

    Returns:
        The selected catalog and the :class:`Trim` describing what was dropped.
    """
    if ranker not in RANKERS:
        raise ValueError(f"unknown ranker {ranker!r}; expected one of {sorted(RANKERS)}")
    compacted, trim = compact_catalog(catalog, budget, signatures=signatures)
    if budget.max_catalog_bytes <= 0 or not any(d.startswith("still_over_budget(") for d in trim.dropped):
        return compacted, trim

    ranked = RANKERS[ranker](compacted if rank_source == "compacted" else catalog, intent, prior)
    fixed = budget.max_catalog_entries
    kept = cut_ranked(ranked, compacted, fixed or top_n_for(budget.tier),
                      max_bytes=0 if fixed else budget.max_catalog_bytes,
                      must_keep=_superseding_for_named_packs(catalog, intent))
    selected = restrict_catalog(compacted, [r.id for r in kept])
    dropped = [*trim.dropped, f"{ranker}.{TOP_N}"]
    if should_escalate(ranked):
        dropped.append(f"{ranker}.{LOW_CONFIDENCE}")
    return selected, Trim(before_bytes=trim.before_bytes, after_bytes=selected.size_bytes(), dropped=dropped)
