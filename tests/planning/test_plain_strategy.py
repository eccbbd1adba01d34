"""The ``plain`` answer strategy: the model-alone request verbatim, then the planner's checks.

Its request must be byte-for-byte what the model alone is sent (``bench.bfcl.baseline.ask_plain``),
so a recorded model-alone answer is exactly what the strategy would get; its answer, a JSON list of
calls, goes through the guards: near-miss names mapped, arguments coerced, unknown tools demoted.
"""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.bench.bfcl.baseline import ask_plain
from helmdeck_dspy.bench.bfcl.plans import decode_record
from helmdeck_dspy.decoding.call_list import parse_call_list
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.guards import near_miss
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.traces.io import read_jsonl_traces
from tests.fault_server import FaultServer, ok

MODEL = "local/qwen2.5-coder-1.5b-instruct"
TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}},
    {"name": "send_fax", "description": "Send a fax.",
     "inputSchema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]}},
]
INTENT = "What is the weather in Oslo for the next 3 days?"


def test_near_misses_map_to_one_catalog_name_and_nothing_else():
    ids = ["get_weather", "blog.publish", "send_fax", "helmdeck.plan"]
    assert near_miss("Get-Weather", ids) == "get_weather"
    assert near_miss("functions.get_weather", ids) == "get_weather"
    assert near_miss("blog__publish", ids) == "blog.publish"
    assert near_miss("evil.publish", ids) is None  # a shared last part is not a near miss
    assert near_miss("bl\u043eg.publish", ids) is None  # a homoglyph is not one either
    assert near_miss("helmdeck__plan", ids) is None  # never the planner itself
    assert near_miss("weather", ids) is None
    assert near_miss("get_weather", ["get_weather", "Get_Weather"]) is None  # ambiguous: none


@pytest.mark.parametrize(("text", "outcome", "tools"), [
    ('[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": "{}"}]', "strict", ["a", "b"]),
    ("[]", "strict", []),
    ('Sure:\n```json\n{"name": "a", "arguments": {}}\n```', "strict", ["a"]),
    ('[{"name": "a", "arguments": {"x": 1}', "repaired", ["a"]),
])
def test_a_call_list_becomes_a_plan(text, outcome, tools):
    parse = parse_call_list(text, "stop")
    assert parse.outcome == outcome and [s.tool for s in parse.plan.steps] == tools


def test_a_cut_or_unreadable_call_list_is_no_plan():
    assert parse_call_list('[{"name": "a"', "length").cause == "length_truncated"
    assert parse_call_list("I cannot help with that.", "stop").plan is None


def test_the_request_is_the_model_alone_request_and_the_answer_is_checked(tmp_path):
    catalog = read_tools_catalog(TOOLS)
    answer = json.dumps([{"name": "Get-Weather", "arguments": {"city": "Oslo", "days": "3"}},
                         {"name": "get_forecast", "arguments": {}}])
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(answer)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    answer_strategy="plain", record_path=record)
        result = planner.plan(INTENT, task_id="t1")
        ask_plain(lm, INTENT, catalog, max_tokens=planner.budget.output_tokens, sampling={"temperature": 0.0, "seed": 7})
        planned, alone = (r.body for r in server.requests)
    # verbatim: the same messages and sampling, and no system message; the planner's cap is its row's for plain
    assert {**planned, "max_tokens": None} == {**alone, "max_tokens": None}
    assert planned["max_tokens"] == planner.budget.cap_for("plain") < alone["max_tokens"] == planner.budget.output_tokens
    assert [m["role"] for m in planned["messages"]] == ["user"] and "response_format" not in planned
    assert [(s.tool, s.args) for s in result.steps] == [("get_weather", {"city": "Oslo", "days": 3}),
                                                         ("unknown", {})]
    assert result.steps[1].demoted and result.steps[1].model_tool == "get_forecast"
    assert result.strategy == "plain" and not result.rechecked
    (rec,) = read_jsonl_traces(record)
    assert rec.run["prompt"]["strategy"] == "plain" and rec.run["map_names"] is True
    decoded = decode_record(rec, catalog)  # re-scored from the trace as the planner read it
    assert [(c.name, c.args) for c in decoded.calls] == [("get_weather", {"city": "Oslo", "days": 3}),
                                                           ("unknown", {})]


def test_a_plain_replan_shows_the_calls_made_with_failures_marked(tmp_path):
    import warnings

    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.program.plain_prompt import ASK, PRIOR_LEAD
    from helmdeck_dspy.signatures.types import ExecutedStep
    from tests.planning.test_planner import replay_file

    guide = RoutingGuide.model_validate({"packs": [{"name": "git_log", "description": "Shows the commit logs"}]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planner = Planner.for_model("local/qwen2.5-coder-1.5b-instruct", lm=f"replay:{replay_file(tmp_path, '[]')}",
                                    catalog=guide, answer_strategy="plain", retry_errors=False)  # one request
    failed = ExecutedStep(order=1, tool="git_log", args={"repo_path": "x"}, output="outside the repository", error=True)
    planner.plan("show the log of repo", prior_steps=[failed])
    (request,) = planner.lm.engine.requests
    text = request.messages[-1].text
    assert PRIOR_LEAD in text and '"error": true' in text and "outside the repository" in text
    assert text.endswith(ASK)


def _many_tools(n):
    return [{"name": f"tool_{i:02d}", "description": f"Does thing number {i}.",
             "inputSchema": {"type": "object", "properties": {}}} for i in range(n)]


@pytest.mark.parametrize(("top", "answers", "asked"), [
    (3, ["[]", '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'], 2),  # declined: asked again over the top 3
    (0, ["[]"], 1),  # off: the decline stands
    (3, ['[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'], 1),  # a call: nothing to recheck
    (40, ["[]"], 1),  # no more tools than the top: the same list would be asked again
    (3, ["[]", "[]"], 2),  # declined twice: asked once more, never twice
])
def test_a_declined_plain_plan_is_asked_once_more_over_the_top_ranked_tools(tmp_path, top, answers, asked):
    catalog = read_tools_catalog([*TOOLS, *_many_tools(10)])
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok(a) for a in answers]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    answer_strategy="plain", recheck_top=top, record_path=record)
        result = planner.plan(INTENT)
        bodies = [r.body for r in server.requests]
    assert len(bodies) == asked
    shown = [[f["name"] for f in json.loads(b["messages"][0]["content"].split("\n\nQuestion:")[0].removeprefix("Functions:\n"))]
             for b in bodies]
    assert len(shown[0]) == 12
    if asked == 2:
        assert shown[1][0] == "get_weather" and len(shown[1]) == 3  # the ranker's best first
        assert bodies[1]["messages"][0]["content"].endswith(bodies[0]["messages"][0]["content"].split("\n\nQuestion:")[1])
    answered = json.loads(answers[-1])
    assert [s.tool for s in result.steps] == [c["name"] for c in answered]
    assert result.rechecked is (asked == 2)
    records = list(read_jsonl_traces(record))
    assert len(records) == asked and all(r.run.get("recheck_top") == (top or None) for r in records)
    rechecked = {r.run.get("rechecked", {}).get("spec_sha") for r in records}  # the first call's spec stays "prompt"
    assert rechecked == ({None} if asked == 1 else {records[0].run["rechecked"]["spec_sha"]})
    assert all(r.run["prompt"]["spec_sha"] not in rechecked for r in records)


def _wordy_tools(n, words):
    return [{"name": f"tool_{i:02d}", "description": f"Tool {i}: " + " ".join(["reads the named file"] * words),
             "inputSchema": {"type": "object", "properties": {"target": {"type": "string"}}}} for i in range(n)]


@pytest.mark.parametrize(("words", "whole"), [(6, True), (40, False)])
def test_a_plain_call_shows_the_whole_list_in_one_order_whenever_it_fits_the_context(words, whole):
    from helmdeck_dspy.program.strategies import STRATEGIES

    catalog = read_tools_catalog([*TOOLS, *_wordy_tools(60, words)])
    planner = Planner.for_model(MODEL, lm="llamacpp/m", catalog=catalog, history=None, use_filter=False,
                                cache=False, answer_strategy="plain")
    assert catalog.size_bytes() > planner.budget.max_catalog_bytes  # the byte cap alone would cut both
    shown = [planner.select(intent) for intent in (INTENT, "send a fax to 555 0100", "read the file of tool 7")]
    assert STRATEGIES["plain"].sees_whole(planner.budget, catalog, INTENT) is whole
    if whole:  # the model alone's list on every call: one prompt head for a prefix cache to reuse
        assert all(sel.ids() == catalog.ids() and not trim.dropped for sel, trim in shown)
    else:  # too big for the row's input_tokens: the budget's per-request cut
        assert all(len(sel.ids()) < len(catalog.ids()) and trim.dropped for sel, trim in shown)



def test_a_cut_list_under_cut_head_keeps_one_head_for_every_request_beside_its_picks():
    from helmdeck_dspy.io.tokens import count_tokens
    from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request

    catalog = read_tools_catalog([*TOOLS, *_wordy_tools(60, 40)])
    planners = {head: Planner.for_model(MODEL, lm="llamacpp/m", catalog=catalog, history=None, use_filter=False,
                                        cache=False, answer_strategy="plain", cut_head=head) for head in (False, True)}
    heads = []
    for intent in (INTENT, "send a fax to 555 0100", "read the file of tool 57"):
        picks = planners[False].select(intent)[0].ids()
        shown, trim = planners[True].select(intent)
        ids = shown.ids()
        assert set(picks) < set(ids) and ids == [i for i in catalog.ids() if i in ids]  # the picks, in catalog order
        assert count_tokens(plain_request(plain_functions(shown), intent)) <= planners[True].budget.input_tokens
        assert any(d.startswith("cut_head(") for d in trim.dropped)
        head = next(n for n, i in enumerate(catalog.ids()) if i not in ids)  # the catalog's first `head` tools
        assert head > len([i for i in picks if catalog.ids().index(i) < head])  # more than the picks among them
        heads.append(head)
    assert "tool_57" in ids and catalog.ids().index("tool_57") > heads[-1]  # a pick beyond the head stays
    assert max(heads) - min(heads) <= 2  # one head, whatever the request picks


def test_a_list_that_fits_or_a_strategy_without_a_head_is_not_widened():
    catalog = read_tools_catalog([*TOOLS, *_wordy_tools(60, 6)])  # fits the row's input_tokens
    planner = Planner.for_model(MODEL, lm="llamacpp/m", catalog=catalog, history=None, use_filter=False,
                                cache=False, answer_strategy="plain", cut_head=True)
    shown, trim = planner.select(INTENT)
    assert shown.ids() == catalog.ids() and not trim.dropped
    big = read_tools_catalog([*TOOLS, *_wordy_tools(60, 40)])
    schema = Planner.for_model(MODEL, lm="llamacpp/m", catalog=big, history=None, use_filter=False,
                               cache=False, answer_strategy="schema", cut_head=True)
    shown, trim = schema.select(INTENT)
    assert len(shown.ids()) < len(big.ids()) and not any(d.startswith("cut_head(") for d in trim.dropped)


def test_a_recheck_in_catalog_order_keeps_the_whole_lists_order(tmp_path):
    catalog = read_tools_catalog([*_many_tools(10), *TOOLS])  # the best-ranked tool last in the catalog
    with FaultServer([ok("[]"), ok("[]")]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=catalog, history=None, use_filter=False, cache=False,
                                    answer_strategy="plain", recheck_top=3, recheck_order="catalog")
        planner.plan(INTENT)
        bodies = [r.body for r in server.requests]
    shown = [[f["name"] for f in json.loads(b["messages"][0]["content"].split("\n\nQuestion:")[0].removeprefix("Functions:\n"))]
             for b in bodies]
    assert len(shown[1]) == 3 and "get_weather" in shown[1]
    assert shown[1] == [n for n in shown[0] if n in shown[1]]  # the whole list's order, not the ranker's


@pytest.mark.parametrize(("retry", "last_failed", "asked"), [
    (True, True, 2),  # declined right after a failure: asked once more for a call, the ask naming it
    (False, True, 1),  # off: the decline stands and the loop ends
    (True, False, 1),  # the last call succeeded: a decline there means done
])
def test_a_replan_declined_right_after_a_failed_call_is_asked_for_a_repair(tmp_path, retry, last_failed, asked):
    from helmdeck_dspy.program.plain_prompt import RETRY_ASK
    from helmdeck_dspy.signatures.types import ExecutedStep

    good = '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'
    done = [ExecutedStep(order=1, tool="get_weather", args={"city": "Olso"},
                         output="no city named Olso" if last_failed else "sunny", error=last_failed)]
    record = tmp_path / "rec.jsonl"
    with FaultServer([ok("[]"), ok(good)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(MODEL, lm=lm, catalog=read_tools_catalog(TOOLS), history=None, use_filter=False,
                                    cache=False, answer_strategy="plain", retry_errors=retry, record_path=record)
        result = planner.plan(INTENT, prior_steps=done)
        bodies = [r.body for r in server.requests]
    assert len(bodies) == asked
    if asked == 2:
        assert bodies[1]["messages"][-2:] == [{"role": "assistant", "content": "[]"},
                                              {"role": "user", "content": RETRY_ASK}]
        assert bodies[1]["response_format"]["schema"]["minItems"] == 1  # at least one call
        assert [s.tool for s in result.steps] == ["get_weather"] and result.rechecked
    else:
        assert result.steps == [] and not result.rechecked
    assert all(r.run.get("retry_errors") is (True if retry else None) for r in read_jsonl_traces(record))
