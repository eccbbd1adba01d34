"""Argument schemas as compact signature lines (catalog.signature)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.signature import MAX_ENUM_VALUES, NO_ARGS, arg_signature


@pytest.mark.parametrize("schema,want", [
    ({"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "number"}}, "required": ["path"]},
     "path: string, head?: number"),
    ({"properties": {"files": {"type": "array", "items": {"type": "string"}}}, "required": ["files"]}, "files: string[]"),
    ({"properties": {"sortBy": {"type": "string", "enum": ["name", "size"]}}}, 'sortBy?: "name"|"size"'),
    # an optional nullable argument may simply be omitted: null is left out of its union
    ({"properties": {"since": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}}, "since?: string"),
    ({"properties": {"since": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["since"]},
     "since: string|null"),
    ({"properties": {"n": {"type": ["integer", "string"]}}, "required": ["n"]}, "n: integer|string"),
    ({"properties": {"edits": {"type": "array", "items": {"type": "object", "required": ["old"],
                                                          "properties": {"old": {"type": "string"},
                                                                         "new": {"type": "string"}}}}}},
     "edits?: {old: string, new?: string}[]"),
    ({"properties": {"x": {}, "y": {"type": "object"}, "z": {"const": "on"}}}, 'x?: any, y?: object, z?: "on"'),
    ({"type": "object", "properties": {}}, NO_ARGS),
    (None, NO_ARGS),
])
def test_signature_names_types_and_required_flags(schema, want):
    assert arg_signature(schema) == want


def test_descriptions_titles_and_defaults_are_left_out():
    schema = {"properties": {"repo_path": {"title": "Repo Path", "type": "string", "description": "Where the repo is",
                                           "default": "."}}}
    assert arg_signature(schema) == "repo_path?: string"


def test_long_enums_are_elided_and_deep_objects_shown_as_object():
    values = [f"v{i}" for i in range(MAX_ENUM_VALUES + 3)]
    sig = arg_signature({"properties": {"k": {"enum": values}}, "required": ["k"]})
    assert sig.endswith("|...") and sig.count("|") == MAX_ENUM_VALUES
    deep = {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": {"type": "string"}}}}}}}}}
    assert arg_signature(deep) == "a?: {b?: {c?: object}}"
