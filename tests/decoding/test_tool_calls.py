"""Answers given as native tool calls: OpenAI tool_calls, Anthropic tool_use blocks, Gemini functionCall parts."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.decoding.tool_calls import coerce_tool_calls, resolve_tool, wire_name
from helmdeck_dspy.traces.record import TraceRecord

CATALOG = frozenset({"web.scrape", "blog.publish", "image.generate", "builtin.scrape-rewrite-blog"})
PLAN = '{"steps": [{"order": 1, "tool": "image.generate", "args": {}, "rationale": "r"}]}'


def openai(*calls):
    return [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)]


def anthropic(*calls):
    return [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)]


def gemini(*calls):
    return [{"functionCall": {"name": n, "args": a}} for n, a in calls]


SHAPES = {"openai": (openai, "tool_calls"), "anthropic": (anthropic, "tool_use"), "gemini": (gemini, "STOP")}
CALLS = [("web__scrape", {"url": "https://example.com"}), ("blog.publish", {"title": "Launch", "tags": ["a"]})]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_tool_calls_naming_catalog_tools_are_a_native_plan_in_call_order(shape):
    build, finish = SHAPES[shape]
    r = parse_completion("", finish, tool_calls=build(*CALLS), tool_ids=CATALOG)
    assert (r.outcome, r.cause) == ("native", None) and r.ok
    assert [s.tool for s in r.plan.steps] == ["web.scrape", "blog.publish"]  # wire name mapped back
    assert [s.args for s in r.plan.steps] == [{"url": "https://example.com"}, {"title": "Launch", "tags": ["a"]}]
    assert r.tool_calls == 2 and "tool_calls" in r.notes
    assert r.value["steps"][1]["args"]["title"] == "Launch"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_tool_calls_naming_nothing_in_the_catalog_have_a_precise_cause(shape):
    build, finish = SHAPES[shape]
    r = parse_completion("", finish, tool_calls=build(("get_weather", {"city": "Paris"}), ("get_time", {})),
                         tool_ids=CATALOG)
    assert (r.outcome, r.cause) == ("failed", "unusable_tool_calls")
    assert "none of the 2 tool call(s) names a catalog tool (get_weather, get_time)" in r.error


def test_a_call_outside_the_catalog_is_kept_for_the_guards_when_another_is_usable():
    r = parse_completion("", "tool_calls", tool_calls=openai(("get_weather", {}), ("image.generate", {"n": 1})),
                         tool_ids=CATALOG)
    assert r.outcome == "native" and "unknown_tool_call" in r.notes
    assert [s.tool for s in r.plan.steps] == ["get_weather", "image.generate"]


def test_unreadable_arguments_or_a_missing_name_make_the_calls_unusable():
    broken = [{"type": "function", "function": {"name": "blog.publish", "arguments": '{"title": "La'}}]
    r = parse_completion("", "tool_calls", tool_calls=broken, tool_ids=CATALOG)
    assert r.cause == "unusable_tool_calls" and "arguments are not a JSON object" in r.error and "blog.publish" in r.error
    r = parse_completion("", "tool_use", tool_calls=[{"type": "tool_use", "id": "x", "input": {}}], tool_ids=CATALOG)
    assert r.cause == "unusable_tool_calls" and "no function name" in r.error
    r = parse_completion("", "tool_calls", tool_calls=["not a call"], tool_ids=CATALOG)
    assert r.cause == "unusable_tool_calls" and "expected an object" in r.error


def test_text_decides_when_the_calls_are_unusable_and_the_calls_win_when_usable():
    r = parse_completion(PLAN, "tool_calls", tool_calls=openai(("get_weather", {})), tool_ids=CATALOG)
    assert r.outcome == "strict" and "tool_calls_ignored" in r.notes
    r = parse_completion("I will publish it now.", "tool_use", tool_calls=anthropic(("blog.publish", {})), tool_ids=CATALOG)
    assert r.outcome == "native" and r.plan.reasoning == "I will publish it now."
    r = parse_completion("Let me check the weather.", "tool_calls", tool_calls=openai(("get_weather", {})), tool_ids=CATALOG)
    assert r.cause == "unusable_tool_calls"  # more precise than no_json


def test_a_cut_or_filtered_answer_is_never_a_plan_even_with_good_calls():
    assert parse_completion("", "length", tool_calls=openai(*CALLS), tool_ids=CATALOG).cause == "length_truncated"
    assert parse_completion("", "SAFETY", tool_calls=gemini(*CALLS), tool_ids=CATALOG).cause == "safety_filtered"
    assert parse_completion("", "MALFORMED_FUNCTION_CALL", tool_calls=gemini(*CALLS), tool_ids=CATALOG).cause == \
        "unusable_tool_calls"


def test_without_a_catalog_any_named_call_is_a_step():
    r = parse_completion(None, "tool_calls", tool_calls=openai(("get_weather", {"city": "Oslo"})))
    assert r.outcome == "native" and r.plan.steps[0].tool == "get_weather"


def test_streamed_openai_fragments_are_joined_by_index():
    chunks = [
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "web__scrape", "arguments": None}},
        {"index": 0, "id": None, "function": {"name": None, "arguments": '{"url": "'}},
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "image.generate", "arguments": ""}},
        {"index": 0, "id": None, "function": {"name": None, "arguments": 'https://x.org"}'}},
        {"index": 1, "id": None, "function": {"name": None, "arguments": '{"n": 2}'}},
    ]
    calls, problems = coerce_tool_calls(chunks)
    assert problems == []
    assert [(c.name, c.arguments, c.id) for c in calls] == [
        ("web__scrape", {"url": "https://x.org"}, "call_a"), ("image.generate", {"n": 2}, "call_b")]


def test_wire_names_round_trip():
    assert wire_name("blog.publish") == "blog__publish"
    assert wire_name("builtin.scrape-rewrite-blog") == "builtin__scrape-rewrite-blog"
    assert wire_name("a b/c") == "a_b_c" and len(wire_name("x" * 100)) == 64
    assert resolve_tool("builtin__scrape-rewrite-blog", CATALOG) == "builtin.scrape-rewrite-blog"
    assert resolve_tool("helmdeck__pipeline-run", CATALOG) == "helmdeck__pipeline-run"
    assert resolve_tool("get_weather", CATALOG) is None


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_trace_records_keep_tool_calls_normalised(shape):
    build, finish = SHAPES[shape]
    rec = TraceRecord(id="r", finish_reason=finish, tool_calls=build(*CALLS))
    assert [(c.name, c.arguments) for c in rec.tool_calls] == CALLS
    again = TraceRecord.model_validate_json(rec.model_dump_json())
    assert again.tool_calls == rec.tool_calls


def test_older_records_with_a_tool_call_count_still_read():
    rec = TraceRecord.model_validate_json('{"id": "r", "finish_reason": "tool_calls", "tool_calls": 3}')
    assert rec.tool_calls is None
    with pytest.raises(ValueError, match="expected a list of tool calls, got bool"):
        TraceRecord(id="r", tool_calls=True)
