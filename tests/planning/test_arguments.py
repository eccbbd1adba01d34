"""Argument checks against a tool's JSON Schema: coercion, dropped and missing arguments, enums."""

from helmdeck_dspy.planning.arguments import argument_problems, check_arguments
from helmdeck_dspy.planning.guards import guard_steps
from helmdeck_dspy.signatures.types import PlanStep

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
        "name": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                  "required": ["city"]},
        "ids": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["count", "name"],
}


def test_safe_type_mismatches_are_coerced_and_noted():
    args, notes = check_arguments({"count": "8", "ratio": "2.5", "loud": "TRUE", "name": 42, "ids": ["1", 2.0]}, SCHEMA)
    assert args == {"count": 8, "ratio": 2.5, "loud": True, "name": "42", "ids": [1, 2]}
    assert sorted(notes) == ["coerced count", "coerced ids[]", "coerced ids[]", "coerced loud", "coerced name", "coerced ratio"]
    assert argument_problems(notes) == []


def test_values_that_cannot_be_coerced_are_kept_and_reported():
    args, notes = check_arguments({"count": "eight", "name": "x", "ratio": "abc"}, SCHEMA)
    assert args["count"] == "eight"
    assert "type count" in notes and "type ratio" in notes


def test_unknown_arguments_are_dropped_and_missing_required_ones_noted():
    args, notes = check_arguments({"colour": "red", "where": {"zip": "90210", "extra": 1}}, SCHEMA)
    assert args == {"where": {"zip": 90210}}
    assert {"dropped colour", "dropped where.extra", "coerced where.zip", "missing where.city", "missing count",
            "missing name"} == set(notes)
    assert set(argument_problems(notes)) == {"missing where.city", "missing count", "missing name"}


def test_enum_violation_is_noted_not_changed():
    args, notes = check_arguments({"count": 1, "name": "a", "unit": "kelvin"}, SCHEMA)
    assert args["unit"] == "kelvin" and notes == ["enum unit"]


def test_open_objects_keep_unknown_arguments():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    assert check_arguments({"a": 1, "b": 2}, schema) == ({"a": 1, "b": 2}, [])


def test_no_schema_or_no_properties_leaves_args_alone():
    assert check_arguments({"x": "1"}, None) == ({"x": "1"}, [])
    assert check_arguments({"x": "1"}, {"type": "object"}) == ({"x": "1"}, [])


def test_guards_apply_the_schema_of_the_step_tool_only():
    steps = [PlanStep(tool="f", args={"count": "3", "name": "n", "junk": 1}), PlanStep(tool="g", args={"count": "3"})]
    out = guard_steps(steps, {"f", "g"}, set(), {"f": SCHEMA})
    assert out[0].args == {"count": 3, "name": "n"} and out[0].arg_notes == ["coerced count", "dropped junk"]
    assert out[1].args == {"count": "3"} and out[1].arg_notes == []
    unguarded = guard_steps(steps, {"f", "g"}, set())
    assert unguarded[0].args == {"count": "3", "name": "n", "junk": 1}
