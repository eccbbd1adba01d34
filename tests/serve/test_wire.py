"""The tools' argument validation and the projection of PlanResult onto the wire shape."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.catalog.ranking import Ranked
from helmdeck_dspy.errors import ArgumentError
from helmdeck_dspy.planning.execution import OUTPUT_CHARS
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.program.store import ProgramRef
from helmdeck_dspy.serve.route import margin
from helmdeck_dspy.serve.wire import (
    PlanRequest,
    RouteRequest,
    argument_of,
    failure_wire,
    parse_arguments,
    plan_text,
    plan_wire,
)


def result(**kw) -> PlanResult:
    base = {"prompt_variant_used": "full_steps", "model": "m/x", "tier": "A", "parse_outcome": "strict"}
    return PlanResult(**{**base, **kw})


@pytest.mark.parametrize("arguments, argument, message", [
    ({"model": "a/b"}, "user_intent", "invalid argument user_intent: required"),
    ({"user_intent": " \n", "model": "a/b"}, "user_intent", "must not be empty"),
    ({"user_intent": "x", "model": "sim:tier-c"}, "model", "LM specs"),
    ({"user_intent": "x", "model": "local:qwen"}, "model", "LM specs"),
    ({"user_intent": "x", "model": "a/b", "max_tokens": 0}, "max_tokens", "greater than or equal to 1 (got 0)"),
    ({"user_intent": "x", "model": "a/b", "steps": []}, "steps", "Extra inputs are not permitted"),
    ({"user_intent": "x", "model": "a/b", "prior_steps": [{"tool": "t"}]}, "prior_steps",
     "prior_steps.0.order: required"),
    ({"user_intent": "x", "model": "a/b", "prior_steps": "[oops"}, "prior_steps", "not JSON"),
    ({"user_intent": "x", "model": "a/b", "context": 5}, "context", "context"),
])
def test_bad_arguments_name_the_argument_in_one_line(arguments, argument, message):
    with pytest.raises(ArgumentError) as info:
        parse_arguments(PlanRequest, arguments)
    assert argument_of(info.value) == argument
    assert message in str(info.value) and "\n" not in str(info.value)


def test_arguments_are_normalised():
    request = parse_arguments(PlanRequest, {
        "user_intent": "  do it ", "model": " a/b ", "context": {"paste": "hello"},
        "prior_steps": '[{"order": 1, "tool": "t", "output": {"key": "k"}}, {"order": 2, "tool": "u", "output": "%s"}]'
                       % ("x" * (OUTPUT_CHARS + 50)),
    })
    assert (request.user_intent, request.model) == ("do it", "a/b")
    assert request.context_text() == '{\n  "paste": "hello"\n}'
    first, second = request.executed_steps()
    assert first.output == '{"key": "k"}' and len(second.output) == OUTPUT_CHARS
    assert parse_arguments(PlanRequest, {"user_intent": "x", "model": "a/b", "context": ""}).context_text() is None
    assert parse_arguments(RouteRequest, {"user_intent": "x", "model": "a/b"}).model == "a/b"


def test_wire_omits_false_more_steps_and_absent_compaction():
    steps = [GuardedStep(order=1, tool="a.b", args={"k": None}, rationale="r", demoted=False)]
    full = plan_wire(result(steps=steps, complexity="single-action", rewritten_prompt="Plan for: x", reasoning=""))
    dumped = full.dump()
    assert set(dumped) == {"steps", "rewritten_prompt", "complexity", "reasoning", "model", "prompt_variant_used"}
    assert dumped["steps"] == [{"order": 1, "tool": "a.b", "args": {"k": None}, "rationale": "r"}]  # None args kept
    pick = plan_wire(result(steps=steps, prompt_variant_used="single_pick", tier="C", more_steps_likely=True,
                            compaction=Trim(before_bytes=10, after_bytes=5, dropped=["bm25.top_n"]))).dump()
    assert pick["more_steps_likely"] is True
    assert pick["compaction"] == {"before_bytes": 10, "after_bytes": 5, "dropped": ["bm25.top_n"]}
    bare = plan_wire(result(steps=steps, program=ProgramRef(kind="bare"))).dump()
    assert bare["program"] == {"kind": "bare"}  # no path or hash for the instructions alone
    text = plan_text(plan_wire(result(steps=[], prompt_variant_used="single_pick")), tier="C", step_cap=4)
    assert "no steps" in text and "step cap reached" in text and "its 4 steps" in text


def test_failure_wire_carries_cause_finish_reason_and_one_line():
    failed = failure_wire(result(failure_cause="no_json", finish_reason="stop", error="no JSON\nobject found"))
    assert failed.dump() == {"error": "plan_failed", "message": "no JSON object found", "cause": "no_json",
                             "finish_reason": "stop", "model": "m/x", "prompt_variant_used": "full_steps"}


def test_route_margin():
    assert margin([]) == 0.0
    assert margin([Ranked("a", "pack", 0.0), Ranked("b", "pack", 0.0)]) == 0.0
    assert margin([Ranked("a", "pack", 4.0)]) == 1.0
    assert margin([Ranked("a", "pack", 4.0), Ranked("b", "pack", 3.0)]) == 0.25
