"""The ``decide`` answer strategy: the model answers each decision as a yes/no or a name, turn by
turn in one conversation, and the grammar shapes only what it writes."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.bench.bfcl.plans import decode_record
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.decide import ARGS_ASK, FIRST_NAME_ASK, FIT_ASK, MORE_ASK, NEXT_NAME_ASK
from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import FaultServer, ok
from tests.planning.test_plain_strategy import INTENT, MODEL, TOOLS


def _plan(tmp_path, answers):
    catalog = read_tools_catalog(TOOLS)
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(a) for a in answers]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    answer_strategy="decide", record_path=record)
        result = planner.plan(INTENT, task_id="t1")
        bodies = [r.body for r in server.requests]
    return catalog, result, bodies, list(read_jsonl_traces(record))


def _schema(body):
    return body["response_format"]["schema"]


def test_each_decision_is_the_model_s_answer_to_its_own_turn(tmp_path):
    catalog, result, bodies, records = _plan(tmp_path, ['"yes"', '"get_weather"', '{"city": "Oslo", "days": "3"}', '"no"'])
    assert [(s.tool, s.args) for s in result.steps] == [("get_weather", {"city": "Oslo", "days": 3})]  # coerced
    assert result.strategy == "decide"
    first = bodies[0]["messages"]
    assert [m["role"] for m in first] == ["user"]
    assert first[0]["content"] == plain_request(plain_functions(catalog), INTENT, ask=FIT_ASK)
    assert _schema(bodies[0]) == {"type": "string", "enum": ["yes", "no"]}
    assert _schema(bodies[1]) == {"type": "string", "enum": ["get_weather", "send_fax"]}
    args = _schema(bodies[2])
    assert args["type"] == "object" and set(args["properties"]) == {"city", "days"} and args["required"] == ["city"]
    assert _schema(bodies[3]) == {"type": "string", "enum": ["yes", "no"]}
    last = bodies[3]["messages"]  # one conversation: every turn extends the one before
    assert [m["content"] for m in last[1:]] == ['"yes"', FIRST_NAME_ASK, '"get_weather"',
                                                ARGS_ASK.format(name="get_weather"),
                                                '{"city": "Oslo", "days": "3"}', MORE_ASK.format(
                                                    intent=INTENT, calls=json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo", "days": "3"}}]))]
    assert all(b["temperature"] == 0.0 and b["seed"] == 7 for b in bodies)
    assert [r.call for r in records] == ["decide"] * 4 + ["plan"]
    plan = records[-1]
    assert json.loads(plan.content) == [{"name": "get_weather", "arguments": {"city": "Oslo", "days": "3"}}]
    assert plan.run["prompt"]["strategy"] == "decide"
    assert plan.completion_tokens == sum(r.completion_tokens for r in records[:-1])
    decoded = decode_record(plan, catalog)  # re-scored from the trace as the planner read it
    assert [(c.name, c.args) for c in decoded.calls] == [("get_weather", {"city": "Oslo", "days": 3})]


@pytest.mark.parametrize(("answers", "calls"), [
    (['"no"'], []),  # no function fits: one turn, no call
    (['"yes"', '"send_fax"', '{"number": "555"}', '"yes"', '"get_weather"', '{"city": "Oslo"}', '"no"'],
     [("send_fax", {"number": "555"}), ("get_weather", {"city": "Oslo"})]),  # the model asks for a second call
])
def test_the_model_decides_whether_to_call_and_how_many_calls(tmp_path, answers, calls):
    _, result, bodies, records = _plan(tmp_path, answers)
    assert [(s.tool, s.args) for s in result.steps] == calls
    assert len(bodies) == len(answers) and len(records) == len(answers) + 1
    if len(calls) > 1:
        assert bodies[4]["messages"][-1]["content"] == NEXT_NAME_ASK
