"""The ``draft`` answer strategy: the model-alone request, and one repair under a schema of the
draft's calls only when the draft fails the planner's checks (issue 38)."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.bench.bfcl.baseline import ask_plain
from helmdeck_dspy.bench.bfcl.plans import decode_record, request_records
from helmdeck_dspy.decoding.call_list import parse_call_list
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.draft import draft_problems
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.answer_schema import call_list_schema
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import FaultServer, ok
from tests.planning.test_plain_strategy import INTENT, MODEL, TOOLS

GOOD = '[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}]'


def _plan(tmp_path, answers):
    catalog = read_tools_catalog(TOOLS)
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(a) for a in answers]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    answer_strategy="draft", record_path=record)
        result = planner.plan(INTENT, task_id="t1")
        ask_plain(lm, INTENT, catalog, max_tokens=planner.budget.output_tokens, sampling={"temperature": 0.0, "seed": 7})
        bodies = [r.body for r in server.requests]
    return result, bodies[:-1], bodies[-1], catalog, record


@pytest.mark.parametrize("draft", [GOOD, "[]", '[{"name": "Get-Weather", "arguments": {"city": "Oslo", "days": "3"}}]'])
def test_a_draft_that_passes_the_checks_is_the_plan_after_the_model_alone_request(tmp_path, draft):
    result, planned, alone, _, record = _plan(tmp_path, [draft])
    assert planned == [alone]  # one call, byte for byte the model alone's request
    assert not result.rechecked and result.strategy == "draft"
    assert [s.tool for s in result.steps] == ["get_weather"] * len(json.loads(draft))  # the near miss mapped
    (rec,) = read_jsonl_traces(record)
    assert rec.run["prompt"]["strategy"] == "draft" and "rechecked" not in rec.run


@pytest.mark.parametrize(("draft", "problem", "count"), [
    ('[{"name": "get_forecast", "arguments": {"city": "Oslo"}}, {"name": "send_fax", "arguments": {}}]',
     '"get_forecast" is not one of the functions; send_fax: missing number', 2),
    ("Here you go: the weather in Oslo.", "that answer is not a JSON list of function calls", None),
])
def test_a_draft_that_fails_the_checks_is_asked_once_more_under_a_schema_of_its_calls(tmp_path, draft, problem, count):
    repaired = ('[{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}, '
                '{"name": "send_fax", "arguments": {"number": "555"}}]') if count == 2 else GOOD
    result, (first, again), alone, catalog, record = _plan(tmp_path, [draft, repaired])
    assert first == alone and "response_format" not in first
    *same, said, ask = again["messages"]  # the same conversation, the draft as the model's turn, then the ask
    assert same == first["messages"] and said == {"role": "assistant", "content": draft}
    assert ask["role"] == "user" and problem in ask["content"]
    schema = again["response_format"]["schema"]
    assert again["response_format"]["type"] == "json_object"  # llama.cpp's server reads the schema there
    assert schema == call_list_schema(catalog, count)
    assert (schema.get("minItems"), schema.get("maxItems")) == ((2, 2) if count == 2 else (None, 8))
    assert result.rechecked and [s.tool for s in result.steps] == [c["name"] for c in json.loads(repaired)]
    records = list(read_jsonl_traces(record))
    assert len(records) == 2 and records[0].run["rechecked"] == records[1].run["rechecked"]
    (calls,) = request_records(record).values()  # one request: its two calls' tokens and latency summed
    assert len(calls) == 2
    assert [c.name for c in decode_record(calls[-1], catalog).calls] == [c["name"] for c in json.loads(repaired)]


def test_the_repair_schema_names_each_shown_function_with_its_own_arguments():
    catalog = read_tools_catalog(TOOLS)
    schema = call_list_schema(catalog, 1)
    names = [b["properties"]["name"]["const"] for b in schema["items"]["anyOf"]]
    assert names == ["get_weather", "send_fax"]
    weather = schema["items"]["anyOf"][0]["properties"]["arguments"]
    assert weather["required"] == ["city"] and weather["additionalProperties"] is False
    assert call_list_schema(read_tools_catalog([]), None) == {"type": "array", "maxItems": 0}


@pytest.mark.parametrize(("answer", "problems"), [
    (GOOD, None),
    ("[]", None),
    ('[{"name": "functions.get_weather", "arguments": {"city": "Oslo"}}]', None),  # a near miss is mapped
    ('[{"name": "get_weather", "arguments": {"days": "soon"}}]', ["get_weather: type days", "get_weather: missing city"]),
    ("no list", []),
])
def test_what_a_draft_gets_wrong_is_what_the_guards_would_leave_wrong(answer, problems):
    assert draft_problems(parse_call_list(answer, "stop"), read_tools_catalog(TOOLS)) == problems
