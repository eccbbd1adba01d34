"""The answer schema a constrained plan is decoded under, and what llama.cpp's grammar makes of it."""

import json

import pytest

from helmdeck_dspy.catalog.models import Pack, Pipeline, RoutingGuide, load_catalog
from helmdeck_dspy.program.answer_schema import argument_schema, plan_schema, schema_wire

WEATHER = Pack(name="weather.get", description="d", parameters={
    "type": "object", "description": "ignored", "properties": {
        "city": {"type": "string", "description": "x"}, "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}},
    "required": ["city", "nope"]})
CATALOG = RoutingGuide(packs=(WEATHER, Pack(name="free.form")), pipelines=(Pipeline(id="p.one"),))


def test_steps_are_an_anyof_by_tool_with_closed_argument_objects():
    schema = plan_schema(CATALOG, "full_steps")
    assert schema["required"] == ["tool_fits", "steps"] and schema["additionalProperties"] is False
    branches = schema["properties"]["steps"]["items"]["anyOf"]
    tools = [b["properties"]["tool"]["const"] for b in branches]
    assert tools == ["weather.get", "free.form", "helmdeck__pipeline-run"]
    weather_args = branches[0]["properties"]["args"]
    assert weather_args == {"type": "object", "properties": {"city": {"type": "string"},
                            "unit": {"type": "string", "enum": ["c", "f"]}},
                            "required": ["city"], "additionalProperties": False}
    assert branches[1]["properties"]["args"] == {"type": "object"}
    assert branches[2]["properties"]["args"]["properties"]["id"] == {"enum": ["p.one"]}


def test_single_pick_holds_one_step_and_more_steps_likely():
    schema = plan_schema(CATALOG, "single_pick")
    assert schema["properties"]["steps"]["maxItems"] == 1
    assert schema["required"] == ["tool_fits", "steps", "more_steps_likely"]


def test_without_the_fit_decision_the_answer_is_the_steps_alone():
    schema = plan_schema(CATALOG, "single_pick", fit_decision=False)
    assert schema["required"] == ["steps", "more_steps_likely"] and "tool_fits" not in schema["properties"]


def test_an_empty_catalog_allows_only_an_empty_plan():
    assert plan_schema(RoutingGuide(), "full_steps")["properties"]["steps"]["maxItems"] == 0


def test_unknown_types_become_unconstrained():
    assert argument_schema({"type": "HashMap"}) == {}
    assert argument_schema({"type": ["string", "null"]}) == {"type": ["string", "null"]}


@pytest.mark.parametrize(("model", "wire"), [
    ("llamacpp/qwen", "json_object"), ("openai/gpt-x", "json_schema"), ("hosted_vllm/m", "json_schema"),
    ("anthropic/claude", "json_schema"),
])
def test_the_schema_wire_by_endpoint(model, wire):
    assert schema_wire(model) == wire


def _grammar(schema: dict) -> str:
    grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="llama-cpp-python (the 'local' extra) is not installed")
    return grammar.json_schema_to_gbnf(json.dumps(schema))


def test_llama_cpp_grammar_enforces_tool_names_and_closed_args():
    text = _grammar(plan_schema(CATALOG, "full_steps"))
    for tool in ("weather.get", "free.form", "helmdeck__pipeline-run", "p.one"):
        assert f'\\"{tool}\\"' in text  # a literal: no other tool name can be generated
    weather = [line for line in text.splitlines() if line.startswith("alternative-0-steps-item-0-args ::=")][0]
    assert "city" in weather and "additional" not in weather  # closed: no free keys after city and unit


def test_llama_cpp_grammar_accepts_every_schema_of_the_bundled_catalog():
    text = _grammar(plan_schema(load_catalog(), "full_steps"))
    assert text.count("-tool ::=") >= len(load_catalog().packs)


def test_llama_cpp_grammar_keeps_the_property_order():
    rules = _grammar(plan_schema(CATALOG, "full_steps")).splitlines()
    for branch in ("alternative-0 ::=", "alternative-1 ::="):
        rule = [ln for ln in rules if ln.startswith(branch)][0]
        assert rule.index("tool-fits-kv") < rule.index("steps-kv")  # the decision comes before any step


def test_no_tool_fits_means_no_steps_under_the_grammar():
    rules = dict(line.split(" ::= ", 1) for line in _grammar(plan_schema(CATALOG, "single_pick")).splitlines())
    assert rules["root"] == "alternative-0 | alternative-1"
    assert rules["alternative-0-tool-fits"] == '"true"' and rules["alternative-1-tool-fits"] == '"false"'
    assert rules["alternative-1-steps"] == '"[]"'  # false: the steps are empty, by construction
    assert "alternative-0-steps-item" in rules["alternative-0-steps"]  # true: any catalog step, as before
    untied = plan_schema(CATALOG, "full_steps", fit_decision=False)
    assert "anyOf" not in untied and "tool_fits" not in untied["properties"]
