"""The planner's request shape: the ``native`` answer strategy (off unless a row or the option chooses
it), the strategy's precedence, and the fit decision by catalog kind."""

from __future__ import annotations

import json
import warnings

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.prompt import resolve_prompt, strategy_for
from helmdeck_dspy.program.adapter import NATIVE_NOTE
from helmdeck_dspy.program.native_tools import native_tools
from helmdeck_dspy.traces.io import read_jsonl_traces

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


def test_off_by_default_no_tools_are_offered(tmp_path):
    assert load_budget_table().fallback.answer_strategy is None
    assert not any(row.answer_strategy == "native" for row in load_budget_table().rows)
    p = planner(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": CALLS})
    result = p.plan(INTENT)
    (request,) = p.lm.engine.requests
    assert request.tools == () and NATIVE_NOTE not in request.system
    assert request.config.response_format == {"type": "json_object"}  # the text path is unchanged
    # the model answered with calls anyway: they are still read (any catalog name counts)
    assert result.ok and result.parse_outcome == "native"


def test_native_on_offers_the_selected_catalog_and_records_the_calls(tmp_path):
    rec_path = tmp_path / "rec.jsonl"
    p = planner(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": CALLS},
                answer_strategy="native", record_path=rec_path)
    result = p.plan(INTENT, task_id="t1")
    (request,) = p.lm.engine.requests
    names = {t.name for t in request.tools}
    assert {"web__scrape", "blog__publish", "helmdeck__pipeline-run"} <= names
    assert "helmdeck__plan" not in names and all("." not in n for n in names)
    assert request.config.response_format is None and NATIVE_NOTE in request.system
    assert result.ok and result.parse_outcome == "native"
    assert [(s.tool, s.args) for s in result.steps] == [("web.scrape", {"url": "https://example.org"}), ("blog.publish", {})]
    (rec,) = read_jsonl_traces(rec_path)
    assert rec.native_tools is True and [c.name for c in rec.tool_calls] == ["web__scrape", "blog__publish"]


def test_native_on_still_accepts_a_json_text_answer(tmp_path):
    plan = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}]})
    p = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, answer_strategy="native")
    result = p.plan(INTENT)
    assert result.ok and result.parse_outcome == "strict"


def test_calls_naming_nothing_offered_fail_with_their_cause(tmp_path):
    bad = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    p = planner(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": bad}, answer_strategy="native")
    result = p.plan(INTENT)
    assert result.failure_cause == "unusable_tool_calls" and "get_weather" in result.error


def test_the_strategy_follows_the_option_then_the_row_then_the_endpoint():
    table = load_budget_table()
    row = table.lookup(MISTRAL)
    native_row = row.model_copy(update={"answer_strategy": "native"})
    assert strategy_for(None, row, "openai/x") == "free" and strategy_for(None, row, "llamacpp/q") == "schema"
    assert strategy_for(None, native_row, "llamacpp/q") == "native"
    assert strategy_for("free", native_row, "llamacpp/q") == "free"
    catalog = load_catalog()
    spec = resolve_prompt(variant="full_steps", budget=native_row, endpoint="openai/x", whole=catalog, selected=catalog)
    assert spec.tools == tuple(native_tools(catalog)) and not spec.json_object and spec.answer_schema is None
    free = resolve_prompt(variant="full_steps", budget=row, endpoint="openai/x", whole=catalog, selected=catalog)
    assert free.tools == () and free.json_object  # a strict-JSON tier B row
    bare = resolve_prompt(variant="full_steps", budget=native_row, endpoint="openai/x", whole=catalog, selected=None)
    assert bare.tools == () and not bare.json_object  # no catalog yet, nothing to offer; never JSON mode with native
    pipeline = next(t for t in spec.tools if t.tool_id == "helmdeck__pipeline-run")
    assert set(pipeline.parameters["properties"]["id"]["enum"]) == catalog.pipeline_ids


def test_a_plain_tool_list_gets_the_tool_list_instructions(tmp_path):
    from helmdeck_dspy.signatures.plan import variant_instructions

    plan = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}]})
    tools_only = load_catalog().model_copy(update={"pipelines": []})
    default = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only)
    default.plan(INTENT)
    assert default.lm.engine.requests[0].system.startswith(variant_instructions("full_steps", tools_only=True))
    before = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only, preset="before-issue-22")
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
    assert row.tool_list_strategy == "plain" and row.answer_strategy is None  # chosen by docs/results/strategies.md
    assert strategy_for(None, row, "llamacpp/q", tools_only=True) == "plain"
    assert strategy_for(None, row, "llamacpp/q", tools_only=False) == "schema"  # pipelines: the endpoint's default
    assert strategy_for("schema", row, "llamacpp/q", tools_only=True) == "schema"  # an explicit option wins
    tools = load_catalog().model_copy(update={"pipelines": []})
    spec = resolve_prompt(variant="full_steps", budget=row, endpoint="llamacpp/q", whole=tools, selected=tools)
    assert spec.strategy == "plain" and spec.answer_schema is None
    assert resolve_prompt(variant="full_steps", budget=row, endpoint="llamacpp/q", whole=load_catalog(),
                          selected=load_catalog()).strategy == "schema"
