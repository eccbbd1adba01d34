"""PlannerOptions and how Planner.for_model builds, derives and hands its options to fallback models."""

from __future__ import annotations

import json
import warnings

import pytest

from helmdeck_dspy.errors import ArgumentError, InputError
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    RetryPolicy,
)

NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
SONNET = "anthropic/claude-sonnet-4-6"
KEY = "sk-helmdeck-FAKE-options-0123456789"


def replay(tmp_path, name="r.jsonl"):
    path = tmp_path / name
    plan = {"steps": [{"order": 1, "tool": "image.generate", "args": {}, "rationale": "r"}], "reasoning": "x"}
    path.write_text(json.dumps({"id": "r0", "finish_reason": "stop", "content": json.dumps(plan)}) + "\n")
    return f"replay:{path}"


def build(tmp_path, model=NEMOTRON, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner.for_model(model, lm=replay(tmp_path), **kw)


def test_the_api_key_is_never_serialised_or_shown():
    opts = PlannerOptions(api_key=KEY, api_base="http://127.0.0.1:9/v1")
    assert opts.api_key_value() == KEY
    assert KEY not in repr(opts) and KEY not in str(opts)
    assert "api_key" not in opts.model_dump() and KEY not in opts.model_dump_json()


def test_an_empty_record_path_means_no_recording():
    assert PlannerOptions(record_path="").record_path is None


def test_for_model_collects_its_options(tmp_path):
    history = HistoryStore(tmp_path / "h.sqlite")
    p = build(tmp_path, ranker="lexical", rank_source="compacted", use_filter=False, max_tokens=700,
              caller="alice", history=history, history_prior=True, record_path=str(tmp_path / "t.jsonl"),
              retry=RetryPolicy(max_attempts=1), fallback=FallbackChain.of("a/b"))
    o = p.options
    assert (o.ranker, o.rank_source, o.use_filter, o.max_tokens, o.caller, o.history_prior) == (
        "lexical", "compacted", False, 700, "alice", True)
    assert o.record_path == tmp_path / "t.jsonl" and o.lm_spec.startswith("replay:")
    assert o.retry.max_attempts == 1 and [m.model for m in o.fallback.models] == ["a/b"]
    assert p.history is history and o.budgets is not None


def test_unknown_variant_and_empty_intent_are_input_errors(tmp_path):
    with pytest.raises(ArgumentError, match="unknown prompt variant"):
        build(tmp_path, variant="all_steps")
    with pytest.raises(InputError, match="intent is required"):
        build(tmp_path).plan("  ")


def test_a_badly_typed_option_is_an_input_error_and_an_unknown_keyword_a_type_error(tmp_path):
    with pytest.raises(ArgumentError, match="rank_source"):
        build(tmp_path, rank_source="everything")
    with pytest.raises(TypeError, match="rankr"):
        build(tmp_path, rankr="bm25")


def test_derive_leaves_the_original_planner_alone(tmp_path):
    p = build(tmp_path, model=SONNET, max_tokens=900)
    d = p.derive(variant="single_pick", max_tokens=1800)
    assert (d.variant, d.options.max_tokens, d.output_cap) == ("single_pick", 1800, 1800)
    assert (p.variant, p.options.max_tokens, p.output_cap) == ("full_steps", 900, 900)
    assert d.program is not p.program  # the other variant's program, loaded read-only


def test_a_fallback_planner_keeps_the_options_but_not_the_output_cap(tmp_path):
    history = HistoryStore(tmp_path / "h.sqlite")
    p = build(tmp_path, ranker="lexical", use_filter=False, max_tokens=700, caller="bob", history=history,
              api_key=KEY, api_base="http://127.0.0.1:9/v1", retry=RetryPolicy(max_attempts=2))
    fb = p.for_fallback(FallbackModel(model=SONNET, lm=replay(tmp_path, "fb.jsonl")))
    assert fb.budget.model == SONNET and fb.variant == "full_steps" and fb.catalog is p.catalog
    assert fb.history is history and fb.options.max_tokens is None
    assert fb.options.model_dump(exclude={"max_tokens", "lm_spec"}) == p.options.model_dump(exclude={"max_tokens", "lm_spec"})
    assert fb.options.api_key_value() == KEY and fb.options.lm_spec.endswith("fb.jsonl")
    direct = p.for_fallback(FallbackModel(model=SONNET, lm=replay(tmp_path, "fb2.jsonl"), api_base=""))
    assert direct.options.api_base is None  # "" means the provider's default endpoint
