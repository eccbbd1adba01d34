"""ReplayEngine: recorded completions served in file order."""

from __future__ import annotations

import json
import warnings

import pytest
from dspy.lm15 import Config, Message, Request, TextPart, ThinkingPart

from helmdeck_dspy.engines.base import make_response
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.engines.replay import (
    ReplayEngine,
    ReplayExhausted,
    ReplayNoFilterRecord,
)
from helmdeck_dspy.errors import HelmdeckError, LMSpecError
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.calls import capture_completions, raw_finish_reason
from helmdeck_dspy.program.catalog_filter import FILTER_SYSTEM

NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
PLAN = json.dumps({"steps": [{"order": 1, "tool": "image.generate", "args": {}, "rationale": "r"}],
                   "complexity": "single-action", "reasoning": "one pack"})


def write(tmp_path, *records, name="trace.jsonl"):
    path = tmp_path / name
    with path.open("w", encoding="utf-8") as f:
        for i, rec in enumerate(records):
            f.write(json.dumps({"id": f"r{i}", **rec}) + "\n")
    return path


def plan_req(text="plan this"):
    return Request(model="replay/t", system="instructions\n\nANSWER FORMAT: ...", messages=(Message.user(text),),
                   config=Config(max_tokens=600))


def filter_req():
    return Request(model="replay/t", system=FILTER_SYSTEM, messages=(Message.user("TOOLS:\n- a.b\n"),))


def text(resp):
    return "".join(p.text for p in resp.message.parts if isinstance(p, TextPart))


def thinking(resp):
    return "".join(p.text for p in resp.message.parts if isinstance(p, ThinkingPart)) or None


def test_serves_records_in_file_order(tmp_path):
    path = write(
        tmp_path,
        {"content": "first", "finish_reason": "stop", "completion_tokens": 5, "prompt_tokens": 50},
        {"content": "second", "reasoning_content": "thought", "finish_reason": "length", "completion_tokens": 600},
        {"content": "third"},
    )
    eng = ReplayEngine(path)
    got = [eng.complete(plan_req("same prompt")) for _ in range(3)]  # identical requests, successive records
    assert [text(r) for r in got] == ["first", "second", "third"]
    assert [r.id for r in got] == ["r0", "r1", "r2"]
    assert thinking(got[0]) is None and thinking(got[1]) == "thought"
    assert (got[0].usage.input_tokens, got[0].usage.output_tokens) == (50, 5)
    assert got[1].usage.output_tokens == 600 and got[1].finish_reason == "length"
    assert eng.served == 3 and len(eng.requests) == 3


def test_plan_calls_skip_filter_records(tmp_path):
    path = write(tmp_path, {"content": '{"ids": ["a.b"]}', "call": "filter"}, {"content": "plan one"},
                 {"content": '{"ids": []}', "call": "filter"}, {"content": "plan two"})
    eng = ReplayEngine(path)
    assert text(eng.complete(plan_req())) == "plan one"
    assert text(eng.complete(plan_req())) == "plan two"
    assert eng.served == 4


def test_filter_call_takes_the_filter_record(tmp_path):
    path = write(tmp_path, {"content": '{"ids": ["a.b"]}', "call": "filter"}, {"content": "plan one"})
    eng = ReplayEngine(path)
    assert text(eng.complete(filter_req())) == '{"ids": ["a.b"]}'
    assert text(eng.complete(plan_req())) == "plan one"


def test_filter_call_without_a_filter_record_raises_and_consumes_nothing(tmp_path):
    path = write(tmp_path, {"content": "plan one"}, {"content": "plan two"})
    eng = ReplayEngine(path)
    with pytest.raises(ReplayNoFilterRecord):
        eng.complete(filter_req())
    assert eng.served == 0 and eng.requests == []
    assert text(eng.complete(plan_req())) == "plan one"
    with pytest.raises(ReplayNoFilterRecord):
        eng.complete(filter_req())
    assert text(eng.complete(plan_req())) == "plan two"
    with pytest.raises(ReplayNoFilterRecord):  # at the end of the file, too
        eng.complete(filter_req())


def test_running_out_raises_replay_exhausted(tmp_path):
    path = write(tmp_path, {"content": "only"}, {"content": '{"ids": []}', "call": "filter"})
    eng = ReplayEngine(path)
    eng.complete(plan_req())
    with pytest.raises(ReplayExhausted) as info:
        eng.complete(plan_req())  # the trailing filter record is skipped, then nothing is left
    assert isinstance(info.value, HelmdeckError)
    assert str(path) in str(info.value) and "2 record(s)" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "lm15"),
    [("stop", "stop"), ("end_turn", "stop"), ("MAX_TOKENS", "length"), ("length", "length"),
     ("content_filter", "content_filter"), ("SAFETY", "content_filter"), ("weird", "error"), (None, "error"),
     ("", "error")],
)
def test_raw_finish_reason_spelling_is_kept(tmp_path, raw, lm15):
    path = write(tmp_path, {"content": "x", "finish_reason": raw})
    resp = ReplayEngine(path).complete(plan_req())
    assert raw_finish_reason(resp) == raw
    assert resp.finish_reason == lm15


def test_raw_finish_reason_falls_back_to_lm15s_value():
    resp = make_response("m", "x", finish_reason="length")
    resp.provider_data.clear()
    assert raw_finish_reason(resp) == "length"


@pytest.mark.parametrize("body,raw", [
    ({"choices": [{"finish_reason": "model_context_window_exceeded"}]}, "model_context_window_exceeded"),
    ({"stop_reason": "pause_turn"}, "pause_turn"),
    ({"candidates": [{"finishReason": "UNEXPECTED_TOOL_CALL"}]}, "UNEXPECTED_TOOL_CALL"),
    ({"choices": [{"finish_reason": None}]}, "stop"),
])
def test_raw_finish_reason_comes_from_the_provider_body_lm15_passed_on(body, raw):
    # lm15 folds spellings it does not know into "stop"; the body it keeps still has the provider's own
    resp = make_response("m", "x", finish_reason="stop")
    resp.provider_data.clear()
    resp.provider_data.update(body)
    assert raw_finish_reason(resp) == raw


def test_recorded_tool_calls_replay_as_they_were(tmp_path):
    from helmdeck_dspy.program.calls import completion_from_response

    calls = [{"name": "web__scrape", "arguments": {"url": "u"}, "id": "c1"},
             {"name": "blog__publish", "arguments": '{"title": "cut', "id": "c2"}]
    path = write(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": calls, "refusal": None})
    resp = ReplayEngine(path).complete(plan_req())
    done = completion_from_response("plan", resp, "sys", [], 1.0)
    assert [(c.name, c.arguments) for c in done.tool_calls] == [("web__scrape", {"url": "u"}),
                                                                ("blog__publish", '{"title": "cut')]
    assert resp.finish_reason == "tool_call"


def test_replay_spec_through_the_planner(tmp_path):
    path = write(tmp_path, {"content": PLAN, "finish_reason": "end_turn", "completion_tokens": 9})
    lm = make_lm(f"replay:{path}")
    assert lm.model == f"replay/{path.name}" and isinstance(lm.engine, ReplayEngine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model(NEMOTRON, lm=lm, use_filter=True)
    with capture_completions() as calls:
        result = planner.plan("generate an image of a red fox")
    assert result.ok and [s.tool for s in result.steps] == ["image.generate"]
    assert [c.kind for c in calls if c.kind == "plan"] == ["plan"]
    assert calls[-1].finish_reason == "end_turn" and calls[-1].completion_tokens == 9
    with pytest.raises(ReplayExhausted):  # the planner does not swallow our own usage errors
        planner.plan("generate an image of a red fox")


def test_missing_replay_file_is_an_lm_spec_error(tmp_path):
    with pytest.raises(LMSpecError):
        make_lm(f"replay:{tmp_path / 'absent.jsonl'}")
