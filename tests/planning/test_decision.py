"""Where an answer decides whether any tool fits, and a planner whose endpoint cannot say how
likely a decline was (issue 38, item 2)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.decision import decision_point
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import FaultServer, ok
from tests.planning.test_plain_strategy import INTENT, MODEL, TOOLS

GOOD = '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'


@pytest.mark.parametrize(("strategy", "content", "point"), [
    ("plain", '```json\n[\n  {"name": "a"}]\n```', ("```json\n", "[]", "[")),
    ("draft", "[]", ("", "[]", "[")),  # "[]" is one token: the decision is the list's first token
    ("plain", '{"name": "a", "arguments": {}}', None),  # one object, no list: no decision point
    ("schema", '{"tool_fits": false, "steps": []}', ('{"tool_fits": ', "false", "true")),
    ("schema", '{"steps": []}', None),  # no fit field: nothing to read
])
def test_the_decision_point_is_where_the_answer_opens_its_list_or_states_the_fit(strategy, content, point):
    assert decision_point(strategy, content) == point


@pytest.mark.parametrize("model", ["llamacpp/m", "openai/m"])
def test_an_endpoint_without_the_route_gives_no_probability_and_the_plan_stands(tmp_path, model):
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(GOOD)]) as server:
        lm = make_lm(model, api_base=server.url, api_key="k", cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=read_tools_catalog(TOOLS), history=None, use_filter=False,
                                    cache=False, answer_strategy="plain", probe_decision=True, record_path=record)
        result = planner.plan(INTENT)
        chats, unrouted = len(server.requests), list(server.unrouted)
    assert result.p_decline is None and [s.tool for s in result.steps] == ["get_weather"]
    assert chats == 1  # only a llama.cpp endpoint is asked for the probability, once
    assert unrouted == (["/helmdeck/next-token"] if model.startswith("llamacpp/") else [])
    (rec,) = read_jsonl_traces(record)
    assert "decision" not in rec.run
