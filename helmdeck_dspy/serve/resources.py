"""The JSON documents behind the ``helmdeck://`` resources.

- ``context-budgets``: every budget row and the fallback, and the policy for unknown models;
- ``models``: per tier, what the tier changes in a plan call (derived from the table and the
  rules that read it, never written out by hand);
- ``routing-guide``: the catalog the server plans over, in its wire shape;
- ``my-plans``: the caller's plan_history, as hashes, tools, outcomes and times (no user text).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.budgets import (
    Budget,
    BudgetFields,
    BudgetTable,
    resolve_prompt_variant,
)
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.select import top_n_for
from helmdeck_dspy.domain import TIERS, default_variant
from helmdeck_dspy.planning.history import MY_PLANS_LIMIT, HistoryStore, PlanGroup

FALLBACK_LABEL = "(fallback: any unknown model)"
HISTORY_OFF_NOTE = "plan history is off on this server (serve --no-history): no plans are recorded"
_OPTIONAL_FLAGS = ("allows_llm_filter", "filter_model", "is_hybrid_reasoning", "wants_strict_json",
                   "supports_prefix_cache", "tool_list_strategy", "cached_input_cost_usd_per_mtok")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _entry(model: str, fields: BudgetFields) -> dict[str, Any]:
    """One budget as ``context-budgets`` lists it: the always-present fields, then the flags and
    cost only when set."""
    out: dict[str, Any] = {
        "model": model, "tier": fields.tier, "input_tokens": fields.input_tokens,
        "output_tokens": fields.output_tokens, "max_catalog_bytes": fields.max_catalog_bytes,
        "prompt_variant": resolve_prompt_variant(fields.tier, fields.prompt_variant),
    }
    out.update((k, getattr(fields, k)) for k in _OPTIONAL_FLAGS if getattr(fields, k))
    return out


def unknown_model_policy(table: BudgetTable) -> str:
    """The sentence saying what a model no row matches gets."""
    fb = table.fallback
    cap = f"a {fb.max_catalog_bytes}-byte catalog cap" if fb.max_catalog_bytes else "the untrimmed catalog"
    return (f"Rows match a model id exactly, else by their longest matching prefix; any other model gets the "
            f"fallback: Tier {fb.tier}, {fb.input_tokens} input tokens, {fb.output_tokens} output tokens, {cap} "
            f"and {resolve_prompt_variant(fb.tier, fb.prompt_variant)} plans.")


def context_budgets(table: BudgetTable) -> dict[str, Any]:
    """``helmdeck://context-budgets``: the fallback (model ""), every row in table order, the policy."""
    return {
        "fetched_at": _now(),
        "fallback": _entry("", table.fallback),
        "budgets": [_entry(row.match, row) for row in table.rows],
        "policy": unknown_model_policy(table),
    }


def _span(values: list[int]) -> dict[str, int]:
    return {"min": min(values), "max": max(values)} if values else {}


def _range(values: list[int]) -> str:
    return f"{min(values)}" if min(values) == max(values) else f"{min(values)}-{max(values)}"


def _tier_changes(tier: str, budgets: list[Budget]) -> list[str]:
    """What a plan call for a model of ``tier`` does differently, one sentence per knob."""
    n = len(budgets)
    variant = default_variant(tier)
    out = [f"plans default to {variant}: " + (
        "one step per call; call helmdeck.plan again with prior_steps until more_steps_likely is absent"
        if variant == "single_pick" else "the whole plan in one call")]
    forced = [b for b in budgets if b.resolved_prompt_variant != variant]
    if forced:
        out.append(f"{len(forced)} of {n} rows force {forced[0].resolved_prompt_variant} instead")
    caps = [b.max_catalog_bytes for b in budgets]
    if not any(caps):
        out.append("the catalog is sent untrimmed")
    else:
        capped = [c for c in caps if c]
        out.append(f"the catalog is compacted to {_range(capped)} bytes on {len(capped)} of {n} rows, "
                   f"then cut to the {top_n_for(tier)} best-ranked entries when compaction is not enough")
    outs = [b.output_tokens for b in budgets]
    out.append(f"output is capped at {_range(outs)} tokens")
    strict = sum(b.json_object_format for b in budgets)
    out.append(f"a JSON-object response format is requested on {strict} of {n} rows" if strict
               else "no JSON-object response format is requested")
    filtered = sum(b.allows_llm_filter for b in budgets)
    if filtered:
        out.append(f"an unsure catalog ranking may be refined by an LLM filter call on {filtered} of {n} rows")
    cached = sum(b.supports_prefix_cache for b in budgets)
    if cached:
        out.append(f"the catalog goes in a cacheable system message on {cached} of {n} rows")
    return out


def models(table: BudgetTable) -> dict[str, Any]:
    """``helmdeck://models``: per tier, its rows and what the tier changes; and where unknown models go."""
    tiers = []
    for tier in TIERS:
        rows = [r for r in table.rows if r.tier == tier]
        budgets = [table.lookup(r.match) for r in rows]
        if tier == table.fallback.tier:
            budgets.append(Budget(model="", matched="fallback", **table.fallback.model_dump()))
        if not budgets:
            continue
        tiers.append({
            "tier": tier,
            "models": [r.match for r in rows] + ([FALLBACK_LABEL] if tier == table.fallback.tier else []),
            "default_prompt_variant": default_variant(tier),
            "output_tokens": _span([b.output_tokens for b in budgets]),
            "max_catalog_bytes": _span([b.max_catalog_bytes for b in budgets]),
            "ranking_keeps_at_least": top_n_for(tier),
            "ranking_fill": "then every further entry, in rank order, that still fits max_catalog_bytes",
            "changes": _tier_changes(tier, budgets),
        })
    return {"fetched_at": _now(), "tiers": tiers, "unknown_models": unknown_model_policy(table)}


def routing_guide(catalog: RoutingGuide) -> dict[str, Any]:
    """``helmdeck://routing-guide``: the catalog in its wire shape."""
    return catalog.to_wire()


class PlanRow(BaseModel):
    """One plan in ``my-plans``: hashes and tool ids only, never the request's text."""

    intent_sha: str
    complexity: str
    tools: list[str] = Field(description="The plan's tools in step order.")
    outcome: str
    model: str
    at_unix: int
    duration_ms: int


class MyPlans(BaseModel):
    scope: str
    fetched_at: str
    history: bool
    groups: list[PlanGroup] = Field(default_factory=list, description="Plans grouped by intent hash.")
    plans: list[PlanRow] = Field(default_factory=list, description="The newest plans, newest first.")
    note: str | None = None


def my_plans(store: HistoryStore | None, caller: str) -> dict[str, Any]:
    """``helmdeck://my-plans`` for ``caller``: grouped by intent hash and the newest plans."""
    if store is None:
        return MyPlans(scope=f"caller={caller}", fetched_at=_now(), history=False,
                       note=HISTORY_OFF_NOTE).model_dump(mode="json", exclude_none=True)
    grouped = store.my_plans(caller)
    rows = [PlanRow(intent_sha=r.intent_sha, complexity=r.complexity, tools=[s.tool for s in r.steps],
                    outcome=r.outcome, model=r.model, at_unix=r.at_unix, duration_ms=r.duration_ms)
            for r in store.rows(caller)[:MY_PLANS_LIMIT]]
    view = MyPlans(scope=grouped.scope, fetched_at=grouped.fetched_at, history=True, groups=grouped.groups,
                   plans=rows, note=grouped.note)
    return view.model_dump(mode="json", exclude_none=True)
