"""Which answer strategy a request gets (option > row > endpoint), and what each puts in its first
request: tool-list instructions, the fit decision, a tool-call answer read even unasked."""

from __future__ import annotations

import json
import warnings

from helmdeck_dspy.bench.study.spec import before_issue_22
from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.request import choose_strategy
from helmdeck_dspy.program.strategies import SpecInputs

MISTRAL = "openrouter/mistralai/mistral-large"  # tier B, strict JSON
INTENT = "scrape https://example.org and publish it as a blog post"
CALLS = [{"id": "c1", "type": "function", "function": {"name": "web__scrape", "arguments": '{"url": "https://example.org"}'}},
         {"id": "c2", "type": "function", "function": {"name": "blog__publish", "arguments": "{}"}}]


def planner(tmp_path, *records, **kw):
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", **r}) + "\n" for i, r in enumerate(records)))
    kw.setdefault("use_filter", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner.for_model(MISTRAL, lm=f"replay:{path}", **kw)


def strategy_for(option, row, endpoint, tools_only=False):
    return choose_strategy(option, row, endpoint, tools_only=tools_only).name


def first_spec(row, endpoint, whole, selected):
    strategy = choose_strategy(None, row, endpoint, tools_only=not whole.pipelines)
    return strategy.spec(SpecInputs(variant="full_steps", budget=row, endpoint=endpoint, whole=whole, selected=selected))


def test_no_tools_are_offered_yet_a_tool_call_answer_is_read(tmp_path):
    p = planner(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": CALLS})
    result = p.plan(INTENT)
    (request,) = p.lm.engine.requests
    assert request.tools == ()
    assert request.config.response_format == {"type": "json_object"}  # a strict-JSON tier B row
    # the model answered with calls anyway: they are still read (any catalog name counts)
    assert result.ok and result.parse_outcome == "native"


def test_the_strategy_follows_the_option_then_the_row_then_the_endpoint():
    table = load_budget_table()
    row = table.lookup(MISTRAL)
    plain_row = row.model_copy(update={"tool_list_strategy": "plain"})
    assert strategy_for(None, row, "openai/x") == "free" and strategy_for(None, row, "llamacpp/q") == "schema"
    assert strategy_for(None, plain_row, "llamacpp/q", tools_only=True) == "plain"
    assert strategy_for(None, plain_row, "llamacpp/q") == "schema"  # a catalog with pipelines: the endpoint's
    assert strategy_for("free", plain_row, "llamacpp/q", tools_only=True) == "free"
    catalog = load_catalog()
    free = first_spec(row, "openai/x", catalog, catalog)
    assert free.json_object and free.answer_schema is None  # a strict-JSON tier B row
    schema = first_spec(row, "llamacpp/q", catalog, catalog)
    assert schema.answer_schema is not None and not schema.json_object
    bare = first_spec(row, "llamacpp/q", catalog, None)
    assert bare.answer_schema is None and bare.json_object  # no catalog yet: the free shape


def test_an_unknown_strategy_is_refused_everywhere_by_name():
    from helmdeck_dspy.errors import ArgumentError

    for bad in (lambda: choose_strategy("native", load_budget_table().lookup(MISTRAL), "openai/x"),
                lambda: Planner.for_model(MISTRAL, lm="sim:mid-tier", answer_strategy="native")):
        try:
            bad()
        except ArgumentError as exc:
            assert "'native'" in str(exc) and "plain" in str(exc)
        else:
            raise AssertionError("an unknown strategy was accepted")
    table = load_budget_table().changed_for(MISTRAL, {"answer_caps": {"native": 512}})
    p = Planner.for_model(MISTRAL, lm="sim:mid-tier", budgets=table)
    try:
        p.plan(INTENT)
    except ArgumentError as exc:  # a row naming a strategy no module defines is refused, not ignored
        assert "'native'" in str(exc)
    else:
        raise AssertionError("an unknown strategy's cap was accepted")


def test_a_plain_tool_list_gets_the_tool_list_instructions(tmp_path):
    from helmdeck_dspy.signatures.plan import variant_instructions

    plan = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}]})
    tools_only = load_catalog().model_copy(update={"pipelines": []})
    default = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only)
    default.plan(INTENT)
    assert default.lm.engine.requests[0].system.startswith(variant_instructions("full_steps", tools_only=True))
    before = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only, **before_issue_22())
    before.plan(INTENT)
    assert before.lm.engine.requests[0].system.startswith(variant_instructions("full_steps"))


def test_the_fit_decision_is_on_for_a_tool_list_and_off_for_a_catalog_with_pipelines(tmp_path):
    plan = json.dumps({"steps": [{"tool": "web.scrape", "args": {}}]})

    def schema(**kw):
        p = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, answer_strategy="schema", **kw)
        p.plan(INTENT)
        return p.lm.engine.requests[0].config.response_format["schema"]

    tools_only = load_catalog().model_copy(update={"pipelines": []})
    assert "tool_fits" not in schema()["properties"]  # the bundled catalog has pipelines
    assert schema(catalog=tools_only)["required"][0] == "tool_fits"
    assert "tool_fits" in schema(fit_decision=True)["properties"]
    assert "tool_fits" not in schema(catalog=tools_only, fit_decision=False)["properties"]


def test_a_row_can_choose_another_strategy_for_a_plain_list_of_tools():
    table = load_budget_table()
    row = table.lookup("local/qwen2.5-coder-1.5b-instruct")
    assert row.tool_list_strategy == "plain"  # chosen by docs/results/strategies.md
    assert strategy_for(None, row, "llamacpp/q", tools_only=True) == "plain"
    assert strategy_for(None, row, "llamacpp/q", tools_only=False) == "schema"  # pipelines: the endpoint's default
    assert strategy_for("schema", row, "llamacpp/q", tools_only=True) == "schema"  # an explicit option wins
    tools = load_catalog().model_copy(update={"pipelines": []})
    spec = first_spec(row, "llamacpp/q", tools, tools)
    assert spec.strategy == "plain" and spec.answer_schema is None
    assert first_spec(row, "llamacpp/q", load_catalog(), load_catalog()).strategy == "schema"
