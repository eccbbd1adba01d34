"""Loading BFCL question/answer pairs: conversion, discovery and precise errors."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.bench.bfcl.load import (
    BfclDataError,
    discover,
    load_bfcl,
    to_json_schema,
)
from tests.bench.conftest import ANSWERS, QUESTIONS, write_bfcl


def test_functions_become_packs_with_json_schema(bfcl_dir):
    data = load_bfcl(bfcl_dir)
    q0, q1 = data.questions
    assert data.categories == ["parallel"]
    schema = q0.functions[0].parameters
    assert schema["type"] == "object"
    assert schema["properties"]["amount"] == {"type": "number", "description": "How much money."}
    assert schema["properties"]["rounding"]["default"] == 2
    props = q1.functions[0].parameters["properties"]
    assert props["facts"] == {"type": "array", "items": {"type": "string"}, "description": "Which facts."}
    assert props["location"]["type"] == "array" and props["location"]["items"] == {"type": "number"}
    assert "type" not in props["extra"]  # BFCL 'any' has no JSON Schema type


def test_intent_is_the_user_turns_and_gold_keeps_acceptable_values(bfcl_dir):
    q0, q1 = load_bfcl(bfcl_dir).questions
    assert q1.intent == "How tall is the Eiffel tower and when did it open?"  # system message left out
    assert q0.gold_tools == ["money.convert"]
    call = q0.gold[0]
    assert call.args["source"] == ["EUR", "euro"]
    assert call.is_optional("rounding") and not call.is_optional("amount")


def test_question_catalog_renders_parameters(bfcl_dir):
    q0 = load_bfcl(bfcl_dir).questions[0]
    rendered = json.loads(q0.catalog.render())
    assert rendered["packs"][0]["name"] == "money.convert"
    assert rendered["packs"][0]["parameters"]["properties"]["target"]["type"] == "string"


def test_unknown_type_is_an_error_naming_it(tmp_path):
    questions = json.loads(json.dumps(QUESTIONS))
    questions[1]["function"][0]["parameters"]["properties"]["facts"]["items"]["type"] = "Vector3"
    root = write_bfcl(tmp_path / "d", questions=questions)
    with pytest.raises(BfclDataError) as err:
        load_bfcl(root, ["parallel"])
    msg = str(err.value)
    assert "'Vector3'" in msg and ":2:" in msg and "landmark_facts" in msg and "facts[]" in msg
    assert "HashMap" in msg  # the accepted types are listed


def test_missing_answer_and_bad_lines_name_file_and_line(tmp_path):
    root = write_bfcl(tmp_path / "a", answers=ANSWERS[:1])
    with pytest.raises(BfclDataError, match="no possible answer for question 'parallel_1'"):
        load_bfcl(root)
    root = write_bfcl(tmp_path / "b")
    path = root / "BFCL_v4_parallel.json"
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(BfclDataError) as err:
        load_bfcl(root)
    assert f"{path}:3:" in str(err.value)
    root = write_bfcl(tmp_path / "c", answers=[{"id": "parallel_0", "ground_truth": [{"money.convert": {"amount": 10}}]}])
    with pytest.raises(BfclDataError, match="list of acceptable values"):
        load_bfcl(root)


def test_gold_call_outside_the_offered_functions_is_rejected(tmp_path):
    answers = json.loads(json.dumps(ANSWERS))
    answers[1]["ground_truth"][0] = {"not_offered": {}}
    with pytest.raises(BfclDataError, match="'not_offered' is not among"):
        load_bfcl(write_bfcl(tmp_path / "d", answers=answers))


def test_discovery_finds_every_category_and_names_what_exists(tmp_path):
    root = write_bfcl(tmp_path / "d")
    write_bfcl(root, category="simple")
    (root / "BFCL_v4_multiple.json").write_text(json.dumps(QUESTIONS[0]) + "\n")  # no answer file
    (root / "BFCL_v3_parallel.json").write_text("not read: v4 is newer\n")
    found = discover(root)
    assert [(e.category, e.rule.kind, e.has_answers) for e in found] == [
        ("multiple", "calls", False), ("parallel", "calls", True), ("simple", "calls", True)]
    assert found[1].questions.name == "BFCL_v4_parallel.json"
    with pytest.raises(BfclDataError, match="has no possible-answer file"):
        load_bfcl(root, ["multiple"])
    with pytest.raises(BfclDataError, match=r"found: multiple, parallel, simple"):
        discover(root, ["irrelevance"])
    with pytest.raises(BfclDataError, match="not a directory"):
        discover(tmp_path / "missing")


def test_schema_nesting_is_bounded():
    deep: dict = {"type": "string"}
    for _ in range(40):
        deep = {"type": "dict", "properties": {"x": deep}}
    with pytest.raises(BfclDataError, match="nested deeper"):
        to_json_schema(deep, where="f")


def test_pool_merges_by_name_and_counts_differing_definitions(tmp_path):
    questions = json.loads(json.dumps(QUESTIONS))
    questions.append({**json.loads(json.dumps(QUESTIONS[0])), "id": "parallel_2"})
    questions[2]["function"][0]["description"] = "A different wording."
    answers = [*ANSWERS, {**ANSWERS[0], "id": "parallel_2"}]
    data = load_bfcl(write_bfcl(tmp_path / "d", questions=questions, answers=answers))
    pooled, conflicts = data.pool()
    assert [p.name for p in pooled.packs] == ["money.convert", "landmark_facts"]
    assert pooled.packs[0].description == "Convert an amount between two currencies."
    assert conflicts == 1


def test_limit_keeps_the_first_questions_of_each_category(tmp_path):
    root = write_bfcl(tmp_path / "d")
    write_bfcl(root, category="simple")
    data = load_bfcl(root).limited(1)
    assert [(q.category, q.id) for q in data.questions] == [("parallel", "parallel_0"), ("simple", "parallel_0")]


def test_start_leaves_out_the_first_questions_of_each_category(shared_dir):
    data = load_bfcl(shared_dir / "data" / "bfcl", ["parallel"])
    ids = [q.id for q in data.questions]
    assert [q.id for q in data.limited(3, start=2).questions] == ids[2:5]
    assert [q.id for q in data.limited(None, start=198).questions] == ids[198:]
    assert data.limited(3, start=2).notes[0].questions == 3


def test_shared_bfcl_data_loads_completely(shared_dir):
    data = load_bfcl(shared_dir / "data" / "bfcl")
    assert data.categories == ["parallel", "parallel_multiple"]
    assert len(data.questions) == 400
    assert all(q.gold and q.intent and set(q.gold_tools) <= {f.name for f in q.functions} for q in data.questions)
    pooled, _ = data.pool()
    assert len(pooled.packs) == len({f.name for q in data.questions for f in q.functions})
