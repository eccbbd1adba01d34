"""``helmdeck.route`` without an LM: the ranker's best entry of the budget-fitted catalog.

For a single-intent request an agent asks "which one tool?". The catalog is fitted to the model's
budget exactly as a plan call fits it (:func:`~helmdeck_dspy.catalog.select.select_catalog`, no
LLM filter), the kept entries are ranked by their full-catalog scores, and the top entry is recommended with
up to :data:`~.names.ROUTE_ALTERNATIVES` runners-up. Nothing matching any request term is a gap.
"""

from __future__ import annotations

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import first_sentence
from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide
from helmdeck_dspy.catalog.ranking import RANKERS, Ranked, high_confidence
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.catalog.text import token_set
from helmdeck_dspy.domain import DEFAULT_RANKER, PIPELINE_RUN_TOOL
from helmdeck_dspy.serve.names import ROUTE_ALTERNATIVES
from helmdeck_dspy.serve.wire import GapWarning, RouteChoice, RouteWire

GAP_MESSAGE = ("no pack or pipeline in the catalog shares a term with the request: ask the user for detail, "
               "or call helmdeck.plan to decompose it")


def margin(ranked: list[Ranked]) -> float:
    """How far the top score clears the runner-up, as a share of the top: 1 with no runner-up
    scoring, 0 with no match. :func:`~helmdeck_dspy.catalog.ranking.high_confidence` compares the
    same ratio with its threshold."""
    if not ranked or ranked[0].score <= 0:
        return 0.0
    second = ranked[1].score if len(ranked) > 1 else 0.0
    return round(max(0.0, (ranked[0].score - second) / ranked[0].score), 4)


def _choice(entry: Pack | Pipeline, ranked: Ranked, intent_terms: frozenset[str]) -> RouteChoice:
    matched = sorted(intent_terms & set(entry.features.counts))
    does = first_sentence(entry.description).strip()
    why = f"matches {', '.join(matched)}" + (f"; {does}" if does else "")
    if isinstance(entry, Pipeline):
        return RouteChoice(kind="pipeline", id=entry.id, tool=PIPELINE_RUN_TOOL, args={"id": entry.id},
                           score=ranked.score, why=why)
    return RouteChoice(kind="pack", id=entry.name, tool=entry.name, score=ranked.score, why=why)


def route(catalog: RoutingGuide, budget: Budget, intent: str, *, ranker: str = DEFAULT_RANKER,
          alternatives: int = ROUTE_ALTERNATIVES) -> RouteWire:
    """Recommend one catalog entry for ``intent`` under ``budget``.

    Args:
        catalog: The full catalog.
        budget: The model's budget (its byte cap and tier fit the catalog first).
        intent: The request.
        ranker: A name in :data:`~helmdeck_dspy.catalog.ranking.RANKERS`.
        alternatives: How many runners-up (with a non-zero score) to list.
    """
    selected, _ = select_catalog(catalog, budget, intent, ranker=ranker)
    kept = selected.id_set
    # Scores over the whole catalog (as selection ranks it), restricted to the entries the budget kept.
    ranked = [r for r in RANKERS[ranker](catalog, intent) if r.id in kept]
    matched = [r for r in ranked if r.score > 0]
    if not matched:
        return RouteWire(recommendation=None, alternatives=[], confidence=0.0, confident=False, model=budget.model,
                         gap_warning=GapWarning(missing_capability=intent.strip(), message=GAP_MESSAGE))
    every: list[Pack | Pipeline] = [*catalog.packs, *catalog.pipelines]
    entries = {e.entry_id: e for e in every}
    terms = token_set(intent)
    choices = [_choice(entries[r.id], r, terms) for r in matched[: alternatives + 1]]
    return RouteWire(recommendation=choices[0], alternatives=choices[1:], confidence=margin(ranked),
                     confident=high_confidence(ranked), model=budget.model)
