"""Where an answer decides whether any tool fits, and a planner whose endpoint cannot say how
likely a decline was (issue 38, item 2)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.program.strategies import STRATEGIES
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import FaultServer, ok
from tests.planning.test_plain_strategy import INTENT, MODEL, TOOLS

GOOD = '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'


@pytest.mark.parametrize(("strategy", "content", "point"), [
    ("plain", '```json\n[\n  {"name": "a"}]\n```', ("```json\n", "[]", "[")),
    ("plain", "[]", ("", "[]", "[")),  # "[]" is one token: the decision is the list's first token
    ("plain", '{"name": "a", "arguments": {}}', None),  # one object, no list: no decision point
    ("schema", '{"tool_fits": false, "steps": []}', ('{"tool_fits": ', "false", "true")),
    ("schema", '{"steps": []}', None),  # no fit field: nothing to read
])
def test_the_decision_point_is_where_the_answer_opens_its_list_or_states_the_fit(strategy, content, point):
    assert STRATEGIES[strategy].decision_point(content) == point


@pytest.mark.parametrize("model", ["llamacpp/m", "openai/m"])
def test_an_endpoint_without_the_route_is_probed_once_said_once_and_noted(tmp_path, model, caplog):
    from helmdeck_dspy.engines.features import FEATURES

    FEATURES.forget()
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(GOOD)]) as server:
        lm = make_lm(model, api_base=server.url, api_key="k", cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=read_tools_catalog(TOOLS), history=None, use_filter=False,
                                    cache=False, answer_strategy="plain", probe_decision=True, record_path=record)
        with caplog.at_level("WARNING", logger="helmdeck_dspy.engines"):
            results = [planner.plan(INTENT), planner.plan(INTENT + " today")]
        chats, unrouted = len(server.requests), list(server.unrouted)
    assert all(r.p_decline is None and [s.tool for s in r.steps] == ["get_weather"] for r in results)
    assert chats == 2  # the plans stand: nothing asked again
    probes = [u for u in unrouted if not u.endswith("tokenize")]  # a cut answer's prompt is counted where it can be
    asked = ["/helmdeck/next-token", "/apply-template"]  # our route, then llama-server's public one
    assert probes == (asked if model.startswith("llamacpp/") else [])  # once, not per plan
    said = [r.getMessage() for r in caplog.records if r.name == "helmdeck_dspy.engines"]
    assert len(said) == 1 and "decline threshold is skipped" in said[0] and "k@" not in said[0]
    recs = list(read_jsonl_traces(record))
    assert len(recs) == 2 and all(set(rec.run["decision"]) == {"unavailable"} for rec in recs)


def _threshold_planner(lm, record, strategy="plain", threshold=0.2, tools=TOOLS):
    from helmdeck_dspy.budgets import load_budget_table

    table = load_budget_table().changed_for(MODEL, {"decline_thresholds": {strategy: threshold}})
    return Planner.for_model(MODEL, lm=lm, catalog=read_tools_catalog(tools), history=None, use_filter=False,
                             cache=False, answer_strategy=strategy, budgets=table, record_path=record)


def _mass(monkeypatch, p_decline, starts=("[]", "[")):
    """The route's answer, scripted: a decline with probability ``p_decline`` at the decision point."""
    from helmdeck_dspy.local import next_token

    seen = []

    def ask(api_base, request, timeout_s=60.0):
        seen.append(request)
        decline, other = starts
        call_mass = 1 - p_decline
        mass = {decline: p_decline, other: call_mass + (p_decline if decline.startswith(other) else 0)}
        return next_token.NextTokenAnswer(mass=mass, prompt_tokens=100, evaluated=1)

    monkeypatch.setattr(next_token, "ask_next_token", ask)
    return seen


def test_a_decline_under_the_threshold_is_asked_again_for_a_call(tmp_path, monkeypatch):
    from helmdeck_dspy.program.plain_prompt import CALL_ASK

    seen = _mass(monkeypatch, 0.05)
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok("[]"), ok(GOOD)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        result = _threshold_planner(lm, record).plan(INTENT)
        bodies = [r.body for r in server.requests]
    assert seen[0].prefix == "" and seen[0].starts == ["[]", "["]  # read at the list's first token
    assert len(bodies) == 2 and bodies[1]["messages"][-2:] == [{"role": "assistant", "content": "[]"},
                                                              {"role": "user", "content": CALL_ASK}]
    assert bodies[1]["response_format"]["schema"]["minItems"] == 1
    assert [s.tool for s in result.steps] == ["get_weather"] and result.p_decline == 0.05 and result.rechecked
    first, again = read_jsonl_traces(record)
    assert first.run["decision"] == {"p_decline": 0.05, "covered": 1.0, "evaluated": 1, "threshold": 0.2,
                                     "overruled": "call"}


def test_a_call_at_the_threshold_is_dropped_and_a_rescore_drops_it_too(tmp_path, monkeypatch):
    from helmdeck_dspy.bench.bfcl.plans import decode_record

    _mass(monkeypatch, 0.2)
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(GOOD)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        result = _threshold_planner(lm, record).plan(INTENT)
        asked = len(server.requests)
    assert asked == 1 and result.steps == [] and result.ok and not result.rechecked
    (rec,) = read_jsonl_traces(record)
    assert rec.run["decision"]["overruled"] == "decline"
    assert decode_record(rec, read_tools_catalog(TOOLS)).calls == []


def test_a_decline_the_threshold_upholds_is_not_asked_again_even_over_many_tools(tmp_path, monkeypatch):
    _mass(monkeypatch, 0.5)
    many = [*TOOLS, *({"name": f"tool_{i:02d}", "description": f"Does thing {i}.",
                       "inputSchema": {"type": "object", "properties": {}}} for i in range(12))]
    with FaultServer([ok("[]"), ok(GOOD)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        result = _threshold_planner(lm, tmp_path / "rec.jsonl", tools=many).plan(INTENT)
        asked = len(server.requests)
    assert asked == 1 and result.steps == []  # the plain recheck of a decline would have asked again


def test_under_the_schema_a_fit_declined_under_the_threshold_is_asked_again_with_tool_fits_true(tmp_path, monkeypatch):
    from helmdeck_dspy.program.plain_prompt import FIT_ASK

    seen = _mass(monkeypatch, 0.1, starts=("false", "true"))
    declined = '{"tool_fits": false, "steps": []}'
    fits = '{"tool_fits": true, "steps": [{"tool": "get_weather", "args": {"city": "Oslo"}}]}'
    with FaultServer([ok(declined), ok(fits)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        result = _threshold_planner(lm, tmp_path / "rec.jsonl", strategy="schema").plan(INTENT)
        bodies = [r.body for r in server.requests]
    assert seen[0].prefix == '{"tool_fits": '
    assert bodies[1]["messages"][-2:] == [{"role": "assistant", "content": declined}, {"role": "user", "content": FIT_ASK}]
    schema = bodies[1]["response_format"]["schema"]
    assert schema["properties"]["tool_fits"] == {"const": True} and schema["properties"]["steps"]["minItems"] == 1
    assert [s.tool for s in result.steps] == ["get_weather"]


def test_the_call_schema_names_each_shown_function_with_its_own_arguments():
    from helmdeck_dspy.program.answer_schema import call_list_schema

    schema = call_list_schema(read_tools_catalog(TOOLS), minimum=1)
    names = [b["properties"]["name"]["const"] for b in schema["items"]["anyOf"]]
    assert names == ["get_weather", "send_fax"] and (schema["minItems"], schema["maxItems"]) == (1, 8)
    weather = schema["items"]["anyOf"][0]["properties"]["arguments"]
    assert weather["required"] == ["city"] and weather["additionalProperties"] is False
    assert call_list_schema(read_tools_catalog([])) == {"type": "array", "maxItems": 0}



def test_the_missing_route_notice_masks_a_credential_in_the_endpoint(caplog):
    from helmdeck_dspy.engines.features import FeatureProbe
    from helmdeck_dspy.io.redaction import protect_loggers, register_url_secrets

    url = "http://user:s3cret-pass@127.0.0.1:9/v1"
    register_url_secrets(url)  # as make_lm does for an api_base with credentials
    protect_loggers()
    probe = FeatureProbe()
    with caplog.at_level("WARNING", logger="helmdeck_dspy.engines"):
        probe.settle_absent("next-token probabilities", url, "no route", "skipped")
        probe.settle_absent("next-token probabilities", url, "no route", "skipped")  # said once
    said = [r.getMessage() for r in caplog.records if r.name == "helmdeck_dspy.engines"]
    assert len(said) == 1 and "s3cret-pass" not in said[0] and "127.0.0.1:9" in said[0]
    assert probe.absent("next-token probabilities", url) == "no route"
