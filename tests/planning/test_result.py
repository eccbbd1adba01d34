"""build_result: the one path from a parsed completion to a PlanResult (guards, single-step rule,
complexity, rewritten_prompt, failures)."""

from __future__ import annotations

import json

from helmdeck_dspy.signatures.types import PlanStep

from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, UNKNOWN_TOOL
from helmdeck_dspy.planning.guards import render_rewritten_prompt
from helmdeck_dspy.planning.result import PlanResult, build_result

PACKS = ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"]
PIPES = ["builtin.brief-rewrite-blog"]
IDS = frozenset([*PACKS, *PIPES])
PIPE_IDS = frozenset(PIPES)

THREE = {
    "steps": [
        {"order": 3, "tool": " helmdeck.memory_store ", "args": {"key": "k"}, "rationale": " Save. "},
        {"order": 1, "tool": PIPELINE_RUN_TOOL, "args": {"id": "builtin.brief-rewrite-blog"}, "rationale": "Run."},
        {"order": 2, "tool": "youtube.transcript", "args": {"url": "u"}, "rationale": "Fetch."},
    ],
    "complexity": "single-action",
    "reasoning": "  Three steps.  ",
}


def build(content: str, finish: str = "stop", variant: str = "full_steps", **kw) -> PlanResult:
    return build_result(
        parse_completion(content, finish), intent="  write the post ", variant=variant, model="openrouter/auto",
        tier="C", catalog_ids=IDS, pipeline_ids=PIPE_IDS, **kw,
    )


def test_strict_parse_builds_guarded_result():
    r = build(json.dumps(THREE))
    assert r.ok and r.failure_cause is None
    assert r.parse_outcome == "strict"
    assert [s.order for s in r.steps] == [1, 2, 3]
    assert [s.tool for s in r.steps] == ["helmdeck.memory_store", PIPELINE_RUN_TOOL, UNKNOWN_TOOL]
    assert r.steps[0].rationale == "Save."
    assert r.steps[2].demoted and r.steps[2].model_tool == "youtube.transcript"
    assert r.steps[2].args == {"url": "u"}
    assert r.complexity == "pack-chain"  # the model's "single-action" is ignored
    assert r.reasoning == "Three steps."
    assert r.rewritten_prompt == render_rewritten_prompt("write the post", r.steps)
    assert r.rewritten_prompt.startswith("Plan for: write the post\nStep 1: call helmdeck.memory_store")
    assert "Step 3: call unknown" in r.rewritten_prompt
    assert r.model == "openrouter/auto" and r.tier == "C"
    assert r.prompt_variant_used == "full_steps"
    assert r.more_steps_likely is False
    assert r.dropped_steps == []
    assert r.finish_reason == "stop"
    assert r.raw_completion is None
    assert r.compaction is None


def test_raw_completion_not_kept_on_success():
    r = build(json.dumps(THREE), raw_completion="the raw text")
    assert r.ok and r.raw_completion is None


def test_pipeline_direct_complexity():
    r = build(json.dumps({"steps": [{"tool": PIPELINE_RUN_TOOL, "args": {"id": "builtin.brief-rewrite-blog"}}],
                          "complexity": "nonsense"}))
    assert r.complexity == "pipeline-direct"


def test_empty_steps_plan():
    r = build(json.dumps({"steps": [], "complexity": "pack-chain"}))
    assert r.ok
    assert r.steps == []
    assert r.complexity == "single-action"
    assert r.rewritten_prompt == ""


def test_compaction_only_when_trim_dropped_something():
    empty = Trim(before_bytes=100, after_bytes=100, dropped=[])
    assert build(json.dumps(THREE), trim=empty).compaction is None
    trimmed = Trim(before_bytes=100, after_bytes=60, dropped=["pack.intent_keywords[]"])
    r = build(json.dumps(THREE), trim=trimmed)
    assert r.compaction == trimmed
    # also on a failed parse
    f = build('{"steps":[{"tool":"x"', "length", trim=trimmed)
    assert f.compaction == trimmed


def test_single_pick_keeps_one_step_and_reports_the_rest():
    r = build(json.dumps(THREE), variant="single_pick")
    assert r.prompt_variant_used == "single_pick"
    assert len(r.steps) == 1
    assert r.steps[0].tool == "helmdeck.memory_store" and r.steps[0].order == 1
    assert len(r.dropped_steps) == 2
    assert all(isinstance(s, PlanStep) for s in r.dropped_steps)
    assert [s.tool for s in r.dropped_steps] == [PIPELINE_RUN_TOOL, "youtube.transcript"]
    assert r.more_steps_likely is True
    assert r.complexity == "single-action"
    assert "Step 2" not in r.rewritten_prompt


def test_single_pick_more_steps_from_model():
    one = {"steps": [{"tool": "image.generate"}]}
    assert build(json.dumps({**one, "more_steps_likely": True}), variant="single_pick").more_steps_likely is True
    assert build(json.dumps({**one, "more_steps_likely": False}), variant="single_pick").more_steps_likely is False
    assert build(json.dumps(one), variant="single_pick").more_steps_likely is False


def test_full_steps_never_more_steps_likely():
    r = build(json.dumps({**THREE, "more_steps_likely": True}))
    assert r.more_steps_likely is False
    assert len(r.steps) == 3 and r.dropped_steps == []


def test_failed_parse_length_truncated():
    raw = '{"steps":[{"tool":"x"'
    r = build(raw, "length", raw_completion=raw, usage={"completion_tokens": 600})
    assert not r.ok
    assert r.failure_cause == "length_truncated"
    assert r.parse_outcome == "failed"
    assert r.steps == []
    assert r.rewritten_prompt == ""
    assert r.raw_completion == raw
    assert r.finish_reason == "length"
    assert r.error
    assert r.usage == {"completion_tokens": 600}
    assert r.more_steps_likely is False and r.dropped_steps == []


def test_failed_parse_without_raw_completion():
    r = build("Sorry, I can't help with that.", "content_filter")
    assert r.failure_cause == "safety_filtered"
    assert r.raw_completion is None


def test_length_finish_with_valid_json_is_still_a_failure():
    r = build(json.dumps(THREE), "length", raw_completion="x")
    assert r.failure_cause == "length_truncated"
    assert r.steps == []


def test_result_serialises():
    r = build(json.dumps(THREE))
    data = json.loads(r.model_dump_json())
    assert data["steps"][0]["tool"] == "helmdeck.memory_store"
    assert data["complexity"] == "pack-chain"
