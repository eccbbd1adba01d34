"""One walk through everything a client sees, run over stdio and over HTTP: tools and their
schemas, resources, plans for a Tier C and a Tier A model checked field by field against the
library's own answer, a failing plan, bad arguments, route, context-budgets and my-plans."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.serve.wire import plan_wire
from tests.planning.test_planner import (
    INTENT,
    NEMOTRON,
    SONNET,
    plan_json,
    replay_file,
    step,
)

TIER_C_ANSWER = plan_json([step(1, "helmdeck.memory_store", {"key": "launch"}, "keep the source first")],
                          more_steps_likely=True)
TIER_A_ANSWER = plan_json([
    step(1, "helmdeck.memory_store", {"key": "launch"}, "keep the source"),
    step(2, "blog.rewrite_for_audience", {"audience": "engineers"}, "draft the post"),
    step(3, "image.generate", {}, "illustrate it"),
], more_steps_likely=True)  # full_steps: the flag is the model's, the wire drops it
TRUNCATED = {"content": "", "finish_reason": "length"}
TOUR = (TIER_C_ANSWER, TIER_A_ANSWER, TRUNCATED)
"""The replay file of a tour server: the LM answers in this order."""

STEP_KEYS = {"order", "tool", "args", "rationale"}
RESOURCES = {"helmdeck://context-budgets", "helmdeck://my-plans", "helmdeck://routing-guide", "helmdeck://models"}


def tour_replay(tmp_path: Path) -> Path:
    return replay_file(tmp_path, *TOUR, name="tour.jsonl")


def expected_wire(tmp_path: Path, model: str, answer: str) -> dict[str, Any]:
    """What the library itself answers for ``model`` with ``answer`` (same selection, parse, guards)."""
    path = replay_file(tmp_path, answer, name=f"expected-{model.replace('/', '_')}.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = Planner.for_model(model, lm=f"replay:{path}").plan(INTENT)
    return plan_wire(result).dump()


async def check_schemas(client: Any) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"helmdeck.plan", "helmdeck.route"}
    plan = tools["helmdeck.plan"]
    assert sorted(plan.input_schema["required"]) == ["model", "user_intent"]
    assert {"context", "max_tokens", "prior_steps"} <= set(plan.input_schema["properties"])
    assert plan.input_schema["additionalProperties"] is False
    out = plan.output_schema
    assert set(out["required"]) == {"steps", "rewritten_prompt", "complexity", "model", "prompt_variant_used"}
    assert {"reasoning", "more_steps_likely", "compaction"} <= set(out["properties"]) - set(out["required"])
    step_schema = out["$defs"]["StepWire"]
    assert set(step_schema["properties"]) == STEP_KEYS
    route = tools["helmdeck.route"]
    assert sorted(route.input_schema["required"]) == ["model", "user_intent"]
    assert {"recommendation", "alternatives", "confidence"} <= set(route.output_schema["required"])
    assert "gap_warning" not in route.output_schema["required"]
    listed = (await client.list_resources()).resources
    assert {str(r.uri) for r in listed} == RESOURCES
    assert {r.mime_type for r in listed} == {"application/json"}


async def read_json(client: Any, uri: str) -> Any:
    (content,) = (await client.read_resource(uri)).contents
    return json.loads(content.text)


async def plan(client: Any, **arguments: Any) -> Any:
    return await client.call_tool("helmdeck.plan", arguments)


async def tour(client: Any, tmp_path: Path, caller: str) -> None:
    """Everything above against a server serving :data:`TOUR` with an empty history for ``caller``."""
    await check_schemas(client)
    assert (await read_json(client, "helmdeck://my-plans"))["plans"] == []

    tier_c = await plan(client, user_intent=INTENT, model=NEMOTRON)
    assert not tier_c.is_error
    got = tier_c.structured_content
    assert got == expected_wire(tmp_path, NEMOTRON, TIER_C_ANSWER)
    assert got["prompt_variant_used"] == "single_pick" and got["more_steps_likely"] is True
    assert got["model"] == NEMOTRON
    assert got["compaction"]["before_bytes"] > got["compaction"]["after_bytes"] > 0
    assert got["compaction"]["dropped"]
    [only] = got["steps"]
    assert set(only) == STEP_KEYS
    assert only == {"order": 1, "tool": "helmdeck.memory_store", "args": {"key": "launch"},
                    "rationale": "keep the source first"}
    assert got["rewritten_prompt"].startswith(f"Plan for: {INTENT}\nStep 1: call helmdeck.memory_store")
    assert "more steps likely" in tier_c.content[0].text

    tier_a = await plan(client, user_intent=INTENT, model=SONNET)
    assert not tier_a.is_error
    got = tier_a.structured_content
    assert got == expected_wire(tmp_path, SONNET, TIER_A_ANSWER)
    assert "more_steps_likely" not in got and "compaction" not in got  # omitted when false / untrimmed
    assert got["prompt_variant_used"] == "full_steps" and got["complexity"] == "pack-chain"
    assert got["program"]["kind"] == "tier" and got["program"]["path"] == "tier_A/full_steps.json"
    assert [(s["order"], s["tool"]) for s in got["steps"]] == [
        (1, "helmdeck.memory_store"), (2, "blog.rewrite_for_audience"), (3, "image.generate")]
    assert got["steps"][1]["args"] == {"audience": "engineers"} and got["reasoning"] == "because"
    assert got["rewritten_prompt"] in tier_a.content[0].text

    failed = await plan(client, user_intent=INTENT, model=SONNET)
    assert failed.is_error
    assert failed.structured_content["error"] == "plan_failed"
    assert failed.structured_content["cause"] == "length_truncated"
    assert failed.structured_content["finish_reason"] == "length"
    assert "\n" not in failed.structured_content["message"] and failed.structured_content["message"]
    assert "length_truncated" in failed.content[0].text

    missing = await plan(client, user_intent=INTENT)
    assert missing.is_error and missing.structured_content["argument"] == "model"
    assert missing.structured_content["message"] == "invalid argument model: required"
    bad_cap = await plan(client, user_intent=INTENT, model=SONNET, max_tokens=0)
    assert bad_cap.is_error and bad_cap.structured_content["argument"] == "max_tokens"
    spec = await plan(client, user_intent=INTENT, model="replay:/etc/hostname")
    assert spec.is_error and "LM specs" in spec.structured_content["message"]

    routed = await client.call_tool("helmdeck.route", {"user_intent": "take a screenshot of https://example.org",
                                                       "model": NEMOTRON})
    assert not routed.is_error
    rec = routed.structured_content["recommendation"]
    assert (rec["kind"], rec["id"], rec["tool"]) == ("pack", "browser.screenshot_url", "browser.screenshot_url")
    assert len(routed.structured_content["alternatives"]) == 3 and "gap_warning" not in routed.structured_content
    assert 0 <= routed.structured_content["confidence"] <= 1

    budgets = await read_json(client, "helmdeck://context-budgets")
    assert budgets["fallback"]["model"] == "" and budgets["fallback"]["tier"] == "C"
    assert budgets["fallback"]["max_catalog_bytes"] > 0
    assert all(b["max_catalog_bytes"] == 0 for b in budgets["budgets"] if b["tier"] == "A")
    assert {"A", "B", "C"} <= {b["tier"] for b in budgets["budgets"]} and "fallback" in budgets["policy"]

    mine = await read_json(client, "helmdeck://my-plans")
    assert mine["scope"] == f"caller={caller}"
    assert [(p["model"], p["complexity"], p["outcome"]) for p in mine["plans"]] == [
        (SONNET, "pack-chain", "ok"), (NEMOTRON, "single-action", "ok")]  # newest first; the failure is not a plan
    assert mine["plans"][0]["tools"] == ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"]
    [group] = mine["groups"]
    assert group["count"] == 2 and len(group["intent_sha"]) == 16
    raw = (await client.read_resource("helmdeck://my-plans")).contents[0].text
    assert "launch" not in raw and "blog about it" not in raw  # hashes and tool ids, never the user's text
