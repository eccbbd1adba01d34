"""One conversation per task (issue 55, item 1): both arms in one class, the model's own chat format
(assistant tool calls, tool results), the planner's first turn and checks, and a text turn ending it."""

from __future__ import annotations

import warnings

from helmdeck_dspy.budgets import budget_for, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.planning.dialogue import ChatAgent, FallbackAgent, task_agent
from helmdeck_dspy.planning.execution import StepOutcome, run_loop
from helmdeck_dspy.planning.planner import Planner
from tests.bench.e2e.test_e2e import _LM
from tests.planning.test_planner import replay_file

MODEL = "local/qwen2.5-coder-1.5b-instruct"
GUIDE = RoutingGuide.model_validate({"packs": [
    {"name": "get_current_time", "description": "The time in an IANA zone",
     "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
    {"name": "read_file", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
]})


def _call(name: str, **args) -> str:
    import json

    return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def _clock(step):
    """A time server: only IANA zones."""
    if step.args.get("timezone") != "Asia/Tokyo":
        return StepOutcome(text=f"Error: Invalid timezone: {step.args.get('timezone')!r}", error=True)
    return StepOutcome(text='{"datetime": "2026-11-29T21:00:00+09:00"}')


class _Recording(_LM):
    """The scripted LM, keeping each request whole (its tools and message parts too)."""

    def __call__(self, request, cache=False):
        self.whole = [*getattr(self, "whole", []), request]
        return super().__call__(request, cache)


def test_the_model_alone_sees_its_failed_call_as_a_tool_result_and_recovers_in_the_same_conversation():
    lm = _Recording(_call("get_current_time", timezone="Tokyo"), _call("get_current_time", timezone="Asia/Tokyo"),
                    "It is 21:00 in Tokyo. " * 20)
    agent = ChatAgent(lm, GUIDE, budget_for(MODEL, load_budget_table(None)), {"temperature": 0.0})
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert [(s.tool, s.args, s.error) for s in out.executed] == [
        ("get_current_time", {"timezone": "Tokyo"}, True), ("get_current_time", {"timezone": "Asia/Tokyo"}, False)]
    assert out.stopped_because == "done" and len(out.plans) == 3
    last = lm.whole[-1]
    assert [m.role for m in last.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert [t.name for t in last.tools] == ["get_current_time", "read_file"]  # every tool, natively, every turn
    failed = last.messages[2].parts[0]
    assert failed.is_error and "Invalid timezone" in failed.content[0].text
    assert last.messages[1].parts[1].input == {"timezone": "Tokyo"}  # its own call (after an empty text: content "")
    assert [m.role for m in lm.whole[1].messages] == [m.role for m in last.messages][:3]  # the prompt only grows
    assert agent.turns[-1]["calls"] == [] and [t["role"] for t in agent.transcript()][-1] == "tool"


def test_an_unreadable_call_ends_the_run_as_a_failed_plan_and_text_without_a_call_as_done():
    class Cut(_LM):
        def __call__(self, request, cache=False):
            from dataclasses import replace

            return replace(super().__call__(request, cache), finish_reason="length")

    agent = ChatAgent(Cut('<tool_call>\n{"name": "get_current_time", "argu'), GUIDE,
                      budget_for(MODEL, load_budget_table(None)), {"temperature": 0.0})
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert out.stopped_because == "failed" and out.executed == [] and out.plans[0].failure_cause == "length_truncated"
    echoed = _LM(_call("get_current_time", timezone="Asia/Tokyo"), '```json\n{"datetime": "2026-11-29T21:00"}\n```')
    out = run_loop(ChatAgent(echoed, GUIDE, budget_for(MODEL, load_budget_table(None)), {"temperature": 0.0}),
                   "What time is it in Tokyo?", _clock)
    assert out.stopped_because == "done" and len(out.executed) == 1  # a result echoed back is no call: done
    lm = _LM("I cannot tell the time.")
    out = run_loop(ChatAgent(lm, GUIDE, budget_for(MODEL, load_budget_table(None)), {"temperature": 0.0}),
                   "What time is it?", _clock)
    assert out.stopped_because == "no_steps" and out.executed == []


def test_the_planner_answers_the_first_turn_and_checks_every_later_one(tmp_path):
    first = '[{"name": "get_current_time", "arguments": {"timezone": "Tokyo"}}]'  # the plain strategy's answer
    later = _call("GetCurrentTime", timezone="Asia/Tokyo")  # a near-miss name: the planner maps it
    path = replay_file(tmp_path, first, later, "Done.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(MODEL, lm=f"replay:{path}", catalog=GUIDE, use_filter=False, cache=False,
                                    answer_strategy="plain", recheck_top=0)
    agent = ChatAgent(planner.lm, GUIDE, planner.budget, {"temperature": 0.0}, planner=planner)
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert [(s.tool, s.args, s.error) for s in out.executed] == [
        ("get_current_time", {"timezone": "Tokyo"}, True), ("get_current_time", {"timezone": "Asia/Tokyo"}, False)]
    assert out.stopped_because == "done"
    assert agent.turns[0] == {"planner": ["get_current_time"], "failure": None}
    alone = ChatAgent(_LM(later, "Done."), GUIDE, planner.budget, {"temperature": 0.0})
    sent = run_loop(alone, "What time is it in Tokyo?", lambda step: StepOutcome(text="no such tool", error=True))
    assert sent.executed[0].tool == "GetCurrentTime"  # the model alone's call goes as written


def test_without_the_planners_first_plan_the_models_own_first_turn_is_checked_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(MODEL, lm="llamacpp/m", catalog=GUIDE, use_filter=False, cache=False,
                                    answer_strategy="plain", recheck_top=0)
    lm = _LM(_call("GetCurrentTime", timezone="Asia/Tokyo"), "Done.")  # a near-miss name on the first turn
    agent = ChatAgent(lm, GUIDE, planner.budget, {"temperature": 0.0}, planner=planner, planner_first=False)
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert [(s.tool, s.args, s.error) for s in out.executed] == [("get_current_time", {"timezone": "Asia/Tokyo"}, False)]
    assert out.stopped_because == "done" and "planner" not in agent.turns[0]  # no plan call: the model's turn


def _fallback(tmp_path, *planned: str, said: tuple[str, ...], **options) -> tuple[FallbackAgent, _Recording]:
    """The planner replaying ``planned`` (the plain strategy's answers), the conversation answering ``said``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(MODEL, lm=f"replay:{replay_file(tmp_path, *planned)}", catalog=GUIDE,
                                    use_filter=False, cache=False, answer_strategy="plain", recheck_top=0, **options)
    lm = _Recording(*said)
    return FallbackAgent(planner, lambda tools: ChatAgent(lm, tools, planner.budget, {"temperature": 0.0},
                                                          planner=planner, planner_first=False)), lm


def test_a_first_plan_with_nothing_to_run_hands_the_task_to_the_checked_conversation(tmp_path):
    agent, lm = _fallback(tmp_path, "[]", said=(_call("GetCurrentTime", timezone="Tokyo"),
                                                 _call("get_current_time", timezone="Asia/Tokyo"), "Done."))
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert [(s.tool, s.args, s.error) for s in out.executed] == [  # the first turn's name mapped by the checks
        ("get_current_time", {"timezone": "Tokyo"}, True), ("get_current_time", {"timezone": "Asia/Tokyo"}, False)]
    assert out.stopped_because == "done" and len(out.plans) == 3 and agent.variant == "single_pick"  # the decline is a turn
    assert [p.steps for p in agent.unreturned] == [[]]  # the declined plan, a call the loop's plans do not hold
    assert agent.turns[0] == {"planner": [], "failure": None} and agent.turns[-1]["calls"] == []
    unreadable, _ = _fallback(tmp_path, '[{"name": "get_current_time", "arguments": [{"timezone": "Asia/Tokyo"}]}]',
                              said=(_call("get_current_time", timezone="Asia/Tokyo"), "Done."))
    out = run_loop(unreadable, "What time is it in Tokyo?", _clock)
    assert out.stopped_because == "done" and [s.error for s in out.executed] == [False]
    assert unreadable.turns[0]["failure"] is not None


def test_a_first_plan_with_a_call_keeps_the_replan_loop_and_its_later_declines(tmp_path):
    agent, lm = _fallback(tmp_path, '[{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]', "[]",
                          said=(_call("read_file", path="x"),))
    out = run_loop(agent, "What time is it in Tokyo?", _clock)
    assert [s.tool for s in out.executed] == ["get_current_time"] and out.stopped_because == "done"
    assert agent.turns == [] and agent.active is agent.planner and lm.requests == []  # the conversation never asked
    assert agent.unreturned == []


def test_the_fallback_loop_hands_a_declined_first_plan_over_without_a_recheck(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(MODEL, lm=f"replay:{replay_file(tmp_path, '[]', '[]', '[]')}", catalog=GUIDE,
                                    use_filter=False, cache=False, answer_strategy="plain", recheck_top=1)
    assert planner.plan("What time is it in Tokyo?").rechecked  # a single plan keeps the recheck
    agent = task_agent(planner, "fallback")
    assert not agent.planner.plan("What time is it in Tokyo?").rechecked  # the loop's first plan asks no recheck
    assert agent.planner.options.recheck_top == 0 and planner.options.recheck_top == 1  # the caller's planner kept
    assert task_agent(planner, "replan") is planner


def test_fallback_top_bounds_the_hand_over_by_the_request_s_top_ranked_tools(tmp_path):
    clock = '[{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]'
    read = '[{"name": "read_file", "arguments": {"path": "notes.txt"}}]'
    ask = "Read the file notes.txt"  # the ranker's first: read_file

    def files(step):
        return StepOutcome(text="notes")

    declined, lm = _fallback(tmp_path, "[]", said=("Done.",), fallback_top=1)
    run_loop(declined, ask, files)
    assert [t.name for t in lm.whole[0].tools] == ["read_file"]  # the conversation offers the top tool only
    unmatched, lm = _fallback(tmp_path, clock, said=("Done.",), fallback_top=1)
    out = run_loop(unmatched, "Order a large pepperoni pizza", files)  # no word of any tool's: no bound
    assert [s.tool for s in out.executed] == ["get_current_time"] and lm.requests == []
    off_rank, lm = _fallback(tmp_path, clock, said=(_call("read_file", path="notes.txt"), "Done."), fallback_top=1)
    out = run_loop(off_rank, ask, files)
    assert [s.tool for s in out.executed] == ["read_file"] and off_rank.turns[0]["planner"] == ["get_current_time"]
    for planned, top in ((read, 1), (clock, 0)):  # a call among the top tools, or the option off: the plan runs
        kept, lm = _fallback(tmp_path, planned, said=(), fallback_top=top)
        out = run_loop(kept, ask, files)
        assert len(out.executed) == 1 and lm.requests == [] and kept.active is kept.planner
