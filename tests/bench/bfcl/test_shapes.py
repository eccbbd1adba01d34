"""Every shape of the full BFCL v4 layout: what loads, how, and what is reported instead."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.bench.bfcl.load import BfclDataError, load_bfcl
from helmdeck_dspy.bench.bfcl.multi_turn import ClassDocs, parse_call
from helmdeck_dspy.bench.bfcl.schema import function_pack
from tests.bench.bfcl.shapes import (
    FILES_DOC,
    LOADED,
    MULTI_TURN,
    MULTI_TURN_ANSWER,
    NOT_LOADED,
)


def _by_id(data) -> dict:
    return {q.id: q for q in data.questions}


def test_whole_folder_loads_every_shape_and_notes_the_rest(shapes_dir):
    seen = []
    data = load_bfcl(shapes_dir, report=seen.append)
    assert sorted(data.categories) == LOADED
    statuses = {n.category: n.status for n in data.notes}
    assert {c: s for c, s in statuses.items() if s != "loaded"} == NOT_LOADED
    assert [n.category for n in seen] == [n.category for n in data.notes]
    notes = {n.category: n for n in data.notes}
    assert "agentic" in notes["web_search"].detail and "prompt formats" in notes["format_sensitivity"].detail
    assert "BFCL_v4_simple_python.json has no possible_answer/" in notes["simple_python"].detail
    assert (notes["multi_turn_base"].questions, notes["multi_turn_base"].tasks) == (1, 4)
    assert data.files["irrelevance"][1] == "" and data.files["multi_turn_base"][1].endswith("BFCL_v4_multi_turn_base.json")


def test_java_and_javascript_types_become_json_schema_and_keep_their_name(shapes_dir):
    qs = _by_id(load_bfcl(shapes_dir, ["simple_java", "simple_javascript"]))
    pack = qs["simple_java_0"].functions[0]
    props = pack.parameters["properties"]
    assert [props[k].get("type") for k in ("entries", "ttl", "separator", "ids", "label", "ratio", "strict", "hint")] == [
        "object", "integer", "string", "array", "string", "number", "boolean", None]
    assert props["ids"]["items"] == {"type": "integer"}
    assert pack.metadata.bfcl_types == {"entries": "HashMap", "ttl": "long", "separator": "char", "ids": "ArrayList",
                                        "ids[]": "long", "label": "String", "ratio": "double", "strict": "Boolean",
                                        "hint": ""}
    assert '"bfcl_types":{"entries":"HashMap"' in qs["simple_java_0"].catalog.render()
    js = qs["simple_javascript_0"].functions[0]
    assert js.parameters["properties"]["rows"]["items"] == {"type": "string"}
    assert js.metadata.bfcl_types == {"table": "String", "rows[]": "String", "animate": "Boolean"}


def test_python_typed_functions_carry_no_type_metadata(shapes_dir):
    q = _by_id(load_bfcl(shapes_dir, ["parallel"]))["parallel_0"]
    assert "bfcl_types" not in q.functions[0].to_wire()["metadata"]


def test_questions_without_answer_files_say_what_a_right_plan_does(shapes_dir):
    qs = _by_id(load_bfcl(shapes_dir, ["irrelevance", "live_relevance", "live_simple"]))
    assert (qs["irrelevance_0"].expect, qs["irrelevance_0"].gold) == ("no_call", ())
    assert (qs["live_relevance_0-0-0"].expect, qs["live_relevance_0-0-0"].gold) == ("any_call", ())
    assert qs["live_simple_0-0-0"].expect == "calls" and qs["live_simple_0-0-0"].intent == "Weather in Oslo?"


def test_multi_turn_gives_one_task_per_turn(shapes_dir):
    qs = _by_id(load_bfcl(shapes_dir, ["multi_turn_base"]))
    assert list(qs) == [f"multi_turn_base_0:turn{t}" for t in range(4)]
    t0, t1, t2, t3 = qs.values()
    assert {q.question_id for q in qs.values()} == {"multi_turn_base_0"} and t2.turn == 2
    assert [f.name for f in t0.functions] == ["cd", "sort", "tail", "mean"]  # rm is excluded; response dropped
    assert t0.intent == "Go to 'docs' and sort 'notes.txt'."
    assert [(c.name, c.args) for c in t0.gold] == [("cd", {"folder": ["docs"]}), ("sort", {"file_name": ["notes.txt"]})]
    assert t1.gold[0].args == {"file_name": ["notes.txt"], "lines": [10, ""]}  # the default may be left out
    assert t2.gold[0].args == {"numbers": [[2, 4, 9]]}
    assert (t3.expect, t3.gold) == ("no_call", ())


def test_held_back_functions_appear_on_their_turn(shapes_dir):
    t0, t1, t2 = load_bfcl(shapes_dir, ["multi_turn_miss_func"]).questions
    assert "sort" not in {f.name for f in t0.functions} | {f.name for f in t1.functions}
    assert t1.expect == "no_call"
    assert "sort" in {f.name for f in t2.functions}
    assert t2.intent == "Sort 'notes.txt'." and t2.gold[0].name == "sort"  # the empty turn continues the request


def test_an_omitted_parameter_may_be_given_its_default():
    tail = {"tail": function_pack(FILES_DOC[2], 0, "doc", 1)}
    call = parse_call("tail('a.txt')", tail, path="a", line=1, where="q")
    assert call.args == {"file_name": ["a.txt"], "lines": ["", 10]}


@pytest.mark.parametrize(("text", "message"), [
    ("rm(file_name='x')", "'rm' is not among the turn's functions"),
    ("cd(folder=somewhere)", "argument 'folder' is not a literal"),
    ("cd('a', 'b')", "2 positional arguments, but the document has 1"),
    ("cd(path='a')", "argument 'path' is not a documented parameter (folder)"),
    ("cd(folder='a'", "cannot read"),
    ("cd('a', folder='b')", "argument 'folder' is given twice"),
    ("42", "is not a function call"),
])
def test_bad_call_strings_name_file_line_and_turn(shapes_dir, text, message):
    answer = {**MULTI_TURN_ANSWER, "ground_truth": [[text], [], [], []]}
    (shapes_dir / "possible_answer" / "BFCL_v4_multi_turn_base.json").write_text("\n" + json.dumps(answer) + "\n")
    with pytest.raises(BfclDataError) as err:
        load_bfcl(shapes_dir, ["multi_turn_base"])
    assert message in str(err.value)
    assert "BFCL_v4_multi_turn_base.json:2: multi_turn_base_0 turn 0" in str(err.value)


def test_unknown_class_and_missing_doc_file_are_errors(shapes_dir, tmp_path):
    path = shapes_dir / "BFCL_v4_multi_turn_base.json"
    path.write_text(json.dumps({**MULTI_TURN, "involved_classes": ["SpaceshipAPI"]}) + "\n")
    with pytest.raises(BfclDataError, match=r"BFCL_v4_multi_turn_base.json:1: involved class 'SpaceshipAPI'"):
        load_bfcl(shapes_dir, ["multi_turn_base"])
    with pytest.raises(BfclDataError, match="missing: the function documents of class 'TicketAPI'"):
        ClassDocs(tmp_path).packs("TicketAPI", "q.json", 3)
    path.write_text(json.dumps({**MULTI_TURN, "missed_function": {"7": ["sort"]}}) + "\n")
    with pytest.raises(BfclDataError, match="'7' is not a turn of this question"):
        load_bfcl(shapes_dir, ["multi_turn_base"])


def test_requested_categories_that_cannot_load_are_errors(shapes_dir):
    with pytest.raises(BfclDataError, match="'web_search' is not loaded: agentic"):
        load_bfcl(shapes_dir, ["web_search"])
    with pytest.raises(BfclDataError, match="'simple_python' has no possible-answer file"):
        load_bfcl(shapes_dir, ["parallel", "simple_python"])


def test_a_malformed_category_is_reported_and_the_rest_still_load(shapes_dir):
    (shapes_dir / "BFCL_v4_simple_javascript.json").write_text("{broken\n")
    data = load_bfcl(shapes_dir)
    note = next(n for n in data.notes if n.category == "simple_javascript")
    assert note.status == "failed" and "BFCL_v4_simple_javascript.json:1:" in note.detail
    assert "simple_java" in data.categories and "simple_javascript" not in data.categories


def test_nothing_loadable_is_an_error_listing_why(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    (root / "BFCL_v4_memory_kv.json").write_text("{}\n")
    with pytest.raises(BfclDataError, match=r"no category could be loaded: memory_kv: skipped"):
        load_bfcl(root)


def test_limit_counts_bfcl_questions_not_turns(shapes_dir):
    data = load_bfcl(shapes_dir, ["multi_turn_base", "parallel"]).limited(1)
    assert [q.id for q in data.questions] == [f"multi_turn_base_0:turn{t}" for t in range(4)] + ["parallel_0"]
    assert {n.category: (n.questions, n.tasks) for n in data.notes} == {"multi_turn_base": (1, 4), "parallel": (1, 1)}


def test_shared_bfcl_more_loads_every_category(shared_dir):
    data = load_bfcl(shared_dir / "data" / "bfcl-more")
    assert all(n.status == "loaded" for n in data.notes), data.notes
    assert sorted(data.categories) == ["irrelevance", "multi_turn_long_context", "multiple", "simple_java",
                                       "simple_javascript", "simple_python"]
    counts = {n.category: n.questions for n in data.notes}
    assert counts == {"irrelevance": 240, "multi_turn_long_context": 200, "multiple": 200, "simple_java": 40,
                      "simple_javascript": 20, "simple_python": 400}
    for q in data.questions:
        assert set(q.gold_tools) <= {f.name for f in q.functions}
        assert q.gold or q.expect == "no_call"


def test_reading_rules_are_validated_and_need_a_catch_all():
    from helmdeck_dspy.bench.bfcl.spec import load_reading_rules, parse_spec

    rules = load_reading_rules()
    assert [rules.rule_for(c).kind for c in ("live_irrelevance", "live_relevance", "multi_turn_miss_param",
                                               "memory_rec_sum", "live_parallel_multiple")] == [
        "no_call", "any_call", "multi_turn", "skip", "calls"]
    data = rules.model_dump(by_alias=True)
    data["category"] = [{"match": "simple*", "kind": "calls"}]
    with pytest.raises(BfclDataError, match="no \\[\\[category\\]\\] rule matches 'parallel'"):
        parse_spec(data, "rules.toml").rule_for("parallel")
    data["category"] = [{"match": "*", "kind": "sometimes"}]
    with pytest.raises(BfclDataError, match=r"rules.toml: category.0.kind"):
        parse_spec(data, "rules.toml")
