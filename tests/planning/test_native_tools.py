"""The planner's request shape: native tool calls (the budget's ``native_tool_calls``, off by default), the
fit decision by catalog kind, the ``instructions`` option and the instructions for pipelines offered by id."""

from __future__ import annotations

import json
import warnings

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.adapter import NATIVE_NOTE, RenderOptions
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
    assert load_budget_table().fallback.native_tool_calls is False
    assert not any(row.native_tool_calls for row in load_budget_table().rows)
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
                native_tool_calls=True, record_path=rec_path)
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
    p = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, native_tool_calls=True)
    result = p.plan(INTENT)
    assert result.ok and result.parse_outcome == "strict"


def test_calls_naming_nothing_offered_fail_with_their_cause(tmp_path):
    bad = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    p = planner(tmp_path, {"content": "", "finish_reason": "tool_calls", "tool_calls": bad}, native_tool_calls=True)
    result = p.plan(INTENT)
    assert result.failure_cause == "unusable_tool_calls" and "get_weather" in result.error


def test_render_options_follow_the_budget_flag():
    table = load_budget_table()
    budget = table.lookup(MISTRAL).model_copy(update={"native_tool_calls": True})
    catalog = load_catalog()
    opts = RenderOptions.for_budget(budget, "full_steps", catalog=catalog)
    assert opts.tools == native_tools(catalog) and not opts.json_object
    assert RenderOptions.for_budget(budget, "full_steps", catalog=catalog, native=False).tools == ()
    assert RenderOptions.for_budget(budget, "full_steps").tools == ()  # no catalog, nothing to offer
    assert not RenderOptions.for_budget(budget, "full_steps").json_object  # but never JSON mode with native on
    assert RenderOptions.for_budget(budget, "full_steps", native=False).json_object
    pipeline = next(t for t in opts.tools if t.tool_id == "helmdeck__pipeline-run")
    assert set(pipeline.parameters["properties"]["id"]["enum"]) == catalog.pipeline_ids


def test_instructions_option_replaces_the_program_and_tool_list_text(tmp_path):
    from helmdeck_dspy.signatures.plan import variant_instructions

    plan = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}]})
    tools_only = load_catalog().model_copy(update={"pipelines": []})
    default = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only)
    default.plan(INTENT)
    assert default.lm.engine.requests[0].system.startswith(variant_instructions("full_steps", tools_only=True))
    mine = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, catalog=tools_only,
                   instructions="Answer with the calls that answer the question.")
    assert mine.plan(INTENT).ok
    system = mine.lm.engine.requests[0].system
    assert system.startswith("Answer with the calls that answer the question.\n\n") and "You plan calls" not in system


def test_the_fit_decision_is_on_for_a_tool_list_and_off_for_a_catalog_with_pipelines(tmp_path):
    plan = json.dumps({"steps": [{"tool": "web.scrape", "args": {}}]})

    def schema(**kw):
        p = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, constrained_decoding=True, **kw)
        p.plan(INTENT)
        return p.lm.engine.requests[0].config.response_format["schema"]

    tools_only = load_catalog().model_copy(update={"pipelines": []})
    assert "tool_fits" not in schema()["properties"]  # the bundled catalog has pipelines
    assert schema(catalog=tools_only)["required"][0] == "tool_fits"
    assert "tool_fits" in schema(fit_decision=True)["properties"]
    assert "tool_fits" not in schema(catalog=tools_only, fit_decision=False)["properties"]


def test_pipelines_offered_by_id_come_with_instructions_that_say_so(tmp_path):
    from helmdeck_dspy.signatures.plan import variant_instructions

    ids = variant_instructions("full_steps", pipeline_ids=True)
    plan = json.dumps({"steps": [{"tool": "builtin.grounded-deck", "args": {}}]})

    def system(**kw) -> str:
        p = planner(tmp_path, {"content": plan, "finish_reason": "stop"}, constrained_decoding=True, **kw)
        result = p.plan("make a grounded slide deck from my notes")
        return p.lm.engine.requests[0].system, result

    by_id, result = system(pipelines_as_tools=True)
    assert by_id.startswith(ids) and "helmdeck__pipeline-run" not in by_id
    assert result.ok and [s.tool for s in result.steps] == ["builtin.grounded-deck"]  # a pipeline's id is a valid step
    through_run_tool, _ = system()
    assert not through_run_tool.startswith(ids) and "helmdeck__pipeline-run" in through_run_tool
    mine, _ = system(pipelines_as_tools=True, instructions="Plan the calls.")
    assert mine.startswith("Plan the calls.")
