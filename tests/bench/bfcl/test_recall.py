"""Selection recall on BFCL-shaped catalogs."""

from __future__ import annotations

import pytest

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.catalog.models import Pack
from helmdeck_dspy.bench.bfcl.load import (
    BfclQuestion,
    BfclSet,
    GoldCall,
    load_bfcl,
)
from helmdeck_dspy.bench.bfcl.recall import measure_recall, tier_budgets


def _pack(i: int) -> Pack:
    return Pack(name=f"tool_{i:03d}", description=f"Handles chore number {i} " + "with a great deal of care " * 16 + ".",
                parameters={"type": "object", "properties": {"x": {"type": "string", "description": "an input " * 5}}})


def _synthetic(n_tools: int = 80) -> BfclSet:
    """Questions whose gold tool is named in the request, among many filler tools."""
    packs = tuple(_pack(i) for i in range(n_tools))
    qs = tuple(
        BfclQuestion(id=f"q{i}", category="parallel", intent=f"please run tool_{i:03d} for chore number {i}",
                     functions=packs, gold=(GoldCall(name=f"tool_{i:03d}"),))
        for i in range(0, n_tools, 8)
    )
    return BfclSet(questions=qs, files={"parallel": ("q", "a")})


@pytest.fixture(scope="module")
def budgets():
    return tier_budgets(load_budget_table())


def test_tier_budgets_use_each_tiers_common_cap(budgets):
    assert {t: b.tier for t, b in budgets.items()} == {"A": "A", "B": "B", "C": "C"}
    assert budgets["A"].max_catalog_bytes == 0
    assert budgets["B"].max_catalog_bytes == 22000 and budgets["C"].max_catalog_bytes == 10000


def _fixed_cut(budgets):
    """helmdeck's fixed top N (25 on tier B, 12 otherwise) instead of the default cut that fills the byte cap."""
    return {t: b.model_copy(update={"max_catalog_entries": 25 if t == "B" else 12}) for t, b in budgets.items()}


def test_pooled_catalog_is_cut_and_named_gold_tools_survive(budgets):
    data = _synthetic()
    assert data.pool()[0].size_bytes() > 22000
    result = measure_recall(data, _fixed_cut(budgets), ["lexical", "bm25"], pool=True)
    assert result.catalog_entries == 80 and result.n_questions == 10
    for r in result.rankers.values():
        a, b, c = r.tiers["A"], r.tiers["B"], r.tiers["C"]
        assert a.top_n is None and a.mean_kept == 80 and a.full_plan_recall == 1.0
        assert (b.top_n, b.mean_kept, b.ranked_share) == (25, 25, 1.0)
        assert (c.top_n, c.mean_kept) == (12, 12)
        assert c.full_plan_recall == 1.0 and c.recall_at_n == 1.0
        assert r.ms_per_query > 0


def test_a_ranker_that_ignores_the_intent_loses_recall(budgets, monkeypatch):
    import helmdeck_dspy.catalog.ranking as rank

    def reverse_alphabetical(catalog, intent, prior=None):
        return rank.sort_ranked([rank.Ranked(p.name, "pack", float(i)) for i, p in enumerate(catalog.packs)])

    monkeypatch.setitem(rank.RANKERS, "blind", reverse_alphabetical)
    result = measure_recall(_synthetic(), _fixed_cut(budgets), ["blind"], pool=True)
    c = result.rankers["blind"].tiers["C"]
    # Only the 12 highest-numbered tools survive; gold tools q0..q72 step 8 -> only tool_072 is among them.
    assert c.full_plan_recall == pytest.approx(0.1)
    assert c.full_plan_ci[0] < 0.1 < c.full_plan_ci[1]


def test_own_functions_are_never_cut(bfcl_dir, budgets):
    result = measure_recall(load_bfcl(bfcl_dir), budgets, ["bm25"], pool=False)
    assert all(t.full_plan_recall == 1.0 and t.ranked_share == 0 for t in result.rankers["bm25"].tiers.values())


def test_shared_slice_pooled_recall_orders_bm25_over_lexical(shared_dir, budgets):
    data = load_bfcl(shared_dir / "data" / "bfcl", ["parallel_multiple"]).limited(60)
    result = measure_recall(data, budgets, ["lexical", "bm25"], pool=True)
    lex, bm = result.rankers["lexical"].tiers["C"], result.rankers["bm25"].tiers["C"]
    assert result.catalog_entries > 100 and lex.n_questions == 60
    assert 0 < lex.full_plan_recall <= bm.full_plan_recall <= 1
    assert lex.recall_at_n >= lex.full_plan_recall
