"""Prose with braces, JSON-shaped failures and bare scalars."""

from __future__ import annotations

import pytest

from helmdeck_dspy.decoding.json_text import json_shaped
from helmdeck_dspy.decoding.parsing import parse_completion


@pytest.mark.parametrize("content", [
    'Use print(f"{name} has {count} items") to show it.',
    "The answer is $\\boxed{4}$.",
    "```python\ndef f(x):\n    return {x: 1}\n```",
    "```python\n{'steps': [1, 2}\n```",  # a Python literal in a python fence is code, not JSON
    "Set the template to {{ user.name }} and the style to { color: red }.",
    "[Click here](https://example.com) for {details",
    "<think>I should output {\"steps\": []}</think>Sorry, I can only describe it: use {placeholder}.",
])
def test_prose_or_code_that_merely_contains_braces_is_no_json(content):
    r = parse_completion(content, "stop")
    assert (r.outcome, r.cause) == ("failed", "no_json")


@pytest.mark.parametrize("content", [
    # broken JSON that repair cannot turn into a plan either
    '{"result": {"x": }, "note": "hi",, }',
    '[{"tool": "a", "args": ',
    '<think>plan it</think>{"answer" "yes" ,,}',
    'Here is the plan:\n```json\n{"result": [1, 2,, }\n```',
    '```\n{"answer": ,, }\n```',
    "```json\nsteps: a then b\n```",
])
def test_json_shaped_text_that_does_not_decode_is_constrained_deadlock(content):
    r = parse_completion(content, "stop")
    assert (r.outcome, r.cause) == ("failed", "constrained_deadlock"), r.error


@pytest.mark.parametrize("content,value", [
    ("4", 4), ("-2.5", -2.5), ('"ok"', "ok"), ("true", True), ("null", None), ("```\n42\n```", 42),
    ("<think>the sum is four</think>\n4", 4),
])
def test_a_bare_json_scalar_is_its_own_cause(content, value):
    r = parse_completion(content, "stop")
    assert (r.outcome, r.cause) == ("failed", "bare_scalar")
    assert r.value == value and "scalar" in r.error


def test_a_scalar_inside_prose_is_not_a_bare_scalar():
    assert parse_completion("The product is:\n```\n4\n```\nas expected.", "stop").cause == "no_json"
    assert parse_completion("4 steps are needed", "stop").cause == "no_json"


def test_an_object_that_is_not_a_plan_is_still_a_schema_mismatch():
    assert parse_completion('{"answer": 4}', "stop").cause == "schema_mismatch"
    assert parse_completion("[1, 2]", "stop").cause == "schema_mismatch"


@pytest.mark.parametrize("text,shaped", [
    ('{"a"', True), ("[1,", True), ("[ ]", True), ('["x"', True), ("[Click](x)", False), ("[1] See", True),
    ("4", False), ('"ok"', False), ("```jsonc\nx\n```", True), ("Note:\n```\n[{\n```", True),
    ("```js\n{a: 1}\n```", False), ("prose {x}", False),
])
def test_json_shaped(text, shaped):
    assert json_shaped(text) is shaped
