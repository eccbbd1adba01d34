"""The documents behind the helmdeck:// resources, the route answer, and the service's refusals."""

from __future__ import annotations

import pytest

from helmdeck_dspy.budgets import budget_for, load_budget_table
from helmdeck_dspy.catalog import load_catalog
from helmdeck_dspy.errors import ArgumentError, LMSpecError, StepCapError
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.serve import resources
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.route import route
from helmdeck_dspy.serve.service import PlanService
from helmdeck_dspy.serve.wire import PlanRequest

TABLE = load_budget_table()
NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"


def test_context_budgets_lists_every_row_the_fallback_and_the_policy():
    doc = resources.context_budgets(TABLE)
    assert [b["model"] for b in doc["budgets"]] == [r.match for r in TABLE.rows]
    fallback = doc["fallback"]
    assert fallback["model"] == "" and fallback["tier"] == "C" and fallback["max_catalog_bytes"] > 0
    assert fallback["prompt_variant"] == "single_pick"
    assert all(b["max_catalog_bytes"] == 0 for b in doc["budgets"] if b["tier"] == "A")
    o3 = next(b for b in doc["budgets"] if b["model"] == "openai/o3-mini")
    assert o3["is_hybrid_reasoning"] and o3["wants_strict_json"] and o3["supports_prefix_cache"]
    assert o3["cached_input_cost_usd_per_mtok"] > 0
    assert "allows_llm_filter" not in o3  # false flags are left out
    fb = TABLE.fallback
    assert f"Tier {fb.tier}, {fb.input_tokens} input tokens, {fb.output_tokens} output tokens" in doc["policy"]


def test_models_says_what_each_tier_changes():
    doc = resources.models(TABLE)
    tiers = {t["tier"]: t for t in doc["tiers"]}
    assert set(tiers) == {"A", "B", "C"}
    assert tiers["C"]["default_prompt_variant"] == "single_pick"
    assert tiers["A"]["default_prompt_variant"] == "full_steps"
    assert resources.FALLBACK_LABEL in tiers["C"]["models"]
    assert tiers["A"]["max_catalog_bytes"] == {"min": 0, "max": 0}
    assert "the catalog is sent untrimmed" in tiers["A"]["changes"]
    assert any("prior_steps" in c for c in tiers["C"]["changes"])
    assert any(c == "no JSON-object response format is requested" for c in tiers["C"]["changes"])
    assert tiers["B"]["ranking_keeps_at_least"] == 25 and tiers["C"]["ranking_keeps_at_least"] == 12
    assert "max_catalog_bytes" in tiers["C"]["ranking_fill"]
    assert doc["unknown_models"] == resources.unknown_model_policy(TABLE)


def test_my_plans_is_per_caller_and_holds_no_user_text(tmp_path):
    store = HistoryStore(tmp_path / "h.sqlite")
    steps = [GuardedStep(order=1, tool="helmdeck.memory_store", args={"value": "secret launch notes"}),
             GuardedStep(order=2, tool="image.generate")]
    for caller, intent in [("token:alice", "remember the secret launch"), ("token:alice", "remember the secret launch"),
                           ("token:bob", "draw a cat")]:
        store.record(intent=intent, complexity="pack-chain", steps=steps, model="m/x", caller=caller, duration_ms=7)
    alice = resources.my_plans(store, "token:alice")
    assert alice["scope"] == "caller=token:alice" and alice["history"] is True and "note" not in alice
    assert [g["count"] for g in alice["groups"]] == [2]
    assert alice["plans"][0] == {**alice["plans"][0], "tools": ["helmdeck.memory_store", "image.generate"],
                                 "outcome": "ok", "model": "m/x", "duration_ms": 7, "complexity": "pack-chain"}
    assert "secret" not in str(alice) and "launch" not in str(alice)
    assert len(resources.my_plans(store, "token:bob")["plans"]) == 1
    nobody = resources.my_plans(store, "token:carol")
    assert nobody["plans"] == [] and nobody["note"]
    off = resources.my_plans(None, "token:alice")
    assert off["history"] is False and off["note"] == resources.HISTORY_OFF_NOTE


def test_route_recommends_a_pipeline_as_a_pipeline_run_and_warns_on_a_gap():
    catalog = load_catalog()
    answer = route(catalog, budget_for(NEMOTRON, TABLE), "rewrite this brief as a blog post for engineers")
    rec = answer.recommendation
    assert rec.kind == "pipeline" and rec.tool == "helmdeck__pipeline-run" and rec.args == {"id": rec.id}
    assert "blog" in rec.why and len(answer.alternatives) == 3
    assert all(a.score <= rec.score for a in answer.alternatives)
    gap = route(catalog, budget_for(NEMOTRON, TABLE), "zzqx florp")
    assert gap.recommendation is None and gap.alternatives == [] and gap.confidence == 0
    assert gap.gap_warning.missing_capability == "zzqx florp" and "gap_warning" in gap.dump()
    assert "gap_warning" not in answer.dump()


def test_service_refusals(tmp_path):
    with pytest.raises(ArgumentError, match="unknown ranker"):
        PlanService(ServeConfig(ranker="nope", history=False))
    with pytest.raises(LMSpecError, match="replay file not found"):
        PlanService(ServeConfig(lm_spec=f"replay:{tmp_path / 'missing.jsonl'}", history=False))
    live = PlanService(ServeConfig(history=False, max_steps=1))
    with pytest.raises(LMSpecError, match="provider/model"):
        live.plan(PlanRequest(user_intent="x", model="no-slash-model"), "user:me")
    one_done = PlanRequest(user_intent="x", model="a/b", prior_steps=[{"order": 1, "tool": "t"}])
    with pytest.raises(StepCapError, match="server allows 1 per loop"):
        live.plan(one_done, "user:me")
