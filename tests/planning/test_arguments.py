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


def test_placeholder_paths_are_filled_from_the_one_path_the_request_names():
    from helmdeck_dspy.planning.grounding import fill_placeholders

    intent = "Commit files/notes.txt in the git repository at repo."
    args, notes = fill_placeholders({"repo_path": "path/to/repo", "files": ["/path/to/notes.txt"], "n": 3}, intent)
    assert args == {"repo_path": "repo", "files": ["files/notes.txt"], "n": 3}
    assert notes == ["filled repo_path", "filled files"]
    kept = {"repo_path": "/path/to/repo", "path": "/path/to/file.txt"}
    assert fill_placeholders(kept, "Show the log.") == (kept, [])  # the request names no such path
    assert fill_placeholders({"p": "path/to/a.txt"}, "copy x/a.txt to y/a.txt") == ({"p": "path/to/a.txt"}, [])  # two


def test_the_planner_fills_placeholders_only_with_the_option_on(tmp_path):
    import json
    import warnings

    from helmdeck_dspy.catalog.models import RoutingGuide
    from helmdeck_dspy.evaluation.scoring import guard_completion, recorded_reading
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.traces.io import read_jsonl_traces
    from tests.planning.test_planner import replay_file

    guide = RoutingGuide.model_validate({"packs": [{"name": "git_log", "description": "Shows the commit logs"}]})
    answer = json.dumps([{"name": "git_log", "arguments": {"repo_path": "path/to/repo"}}])
    got, rescored = {}, {}
    for on in (False, True):
        record = tmp_path / f"rec-{on}.jsonl"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model("local/qwen2.5-coder-1.5b-instruct", lm=f"replay:{replay_file(tmp_path, answer)}",
                                        catalog=guide, answer_strategy="plain", fill_placeholders=on,
                                        record_path=record)
        got[on] = planner.plan("show the log of the git repository at repo").steps[0].args["repo_path"]
        (rec,) = read_jsonl_traces(record)
        guarded = guard_completion(rec.content, rec.finish_reason, None, variant="full_steps",
                                   catalog_ids=guide.id_set, pipeline_ids=set(), **recorded_reading(rec.run, rec.intent))
        rescored[on] = guarded.steps[0].args["repo_path"]  # the record reads back as the planner read it
    assert got == rescored == {False: "path/to/repo", True: "repo"}


def test_path_arguments_are_completed_to_the_one_path_the_request_names():
    from helmdeck_dspy.planning.grounding import Grounding, ground_args

    ground = Grounding("Add the line '- water plants' to the end of files/todo.md, keeping the other items.",
                       complete_tails=True)
    assert ground_args({"path": "todo.md", "edits": [{"oldText": "todo.md"}]}, ground) == (
        {"path": "files/todo.md", "edits": [{"oldText": "todo.md"}]}, ["grounded path"])  # path arguments only
    shown = Grounding("Show the contents of files/drafts/old.txt.", complete_tails=True)
    assert ground_args({"path": "drafts/old.txt"}, shown)[0] == {"path": "files/drafts/old.txt"}
    assert ground_args({"paths": ["./old.txt"]}, shown)[0] == {"paths": ["files/drafts/old.txt"]}
    git = Grounding("Commit repo/scratch.txt to the git repository at repo.", complete_tails=True)
    assert ground_args({"repo_path": "repo", "files": ["scratch.txt"]}, git) == (
        {"repo_path": "repo", "files": ["scratch.txt"]}, [])  # named as it is; a repository-relative list untouched
    two = Grounding("Copy a/notes.txt to b/notes.txt.", complete_tails=True)
    assert ground_args({"source": "notes.txt"}, two) == ({"source": "notes.txt"}, [])  # two completions: left
    off = Grounding("Show the contents of files/drafts/old.txt.")  # placeholders only (the default)
    assert ground_args({"path": "drafts/old.txt"}, off) == ({"path": "drafts/old.txt"}, [])
