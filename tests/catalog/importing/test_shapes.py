"""The three tool-list shapes read into one neutral tool, and the one-line errors for the rest."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.importing.shapes import read_tool_list
from helmdeck_dspy.errors import ToolListError

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
MCP_TOOL = {"name": "weather", "title": "Weather", "description": "Current weather for a city.", "inputSchema": SCHEMA,
            "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": True}}
OPENAI_TOOL = {"type": "function", "function": {"name": "weather", "description": "Current weather for a city.",
                                                "parameters": SCHEMA, "strict": True}}
ANTHROPIC_TOOL = {"name": "weather", "description": "Current weather for a city.", "input_schema": SCHEMA}


@pytest.mark.parametrize(("data", "shape"), [
    ({"tools": [MCP_TOOL]}, "mcp"),
    ({"jsonrpc": "2.0", "id": 2, "result": {"tools": [MCP_TOOL]}}, "mcp"),
    ([MCP_TOOL], "mcp"),
    ([OPENAI_TOOL], "openai"),
    ({"tools": [OPENAI_TOOL]}, "openai"),
    ([{"type": "function", "name": "weather", "description": "Current weather for a city.", "parameters": SCHEMA}],
     "openai"),
    ([ANTHROPIC_TOOL], "anthropic"),
    ([{**ANTHROPIC_TOOL, "type": "custom"}], "anthropic"),
])
def test_every_shape_gives_the_same_tool(data, shape):
    listed = read_tool_list(data)
    assert listed.shape == shape
    [tool] = listed.tools
    assert (tool.name, tool.description, tool.parameters) == ("weather", "Current weather for a city.", SCHEMA)


def test_mcp_annotations_become_the_hints_set_to_true():
    [tool] = read_tool_list([MCP_TOOL]).tools
    assert tool.hints == ("read_only", "open_world")
    [plain] = read_tool_list([{"name": "x", "inputSchema": {"type": "object"}}]).tools
    assert plain.hints == () and plain.description == ""


def test_mcp_title_stands_in_for_a_missing_description_and_a_cursor_is_kept():
    listed = read_tool_list({"tools": [{"name": "x", "title": "Do X", "inputSchema": {"type": "object"}}],
                             "nextCursor": "abc"})
    assert listed.tools[0].description == "Do X" and listed.next_cursor == "abc"


def test_an_openai_tool_may_have_no_parameters_and_an_empty_list_has_no_shape():
    [tool] = read_tool_list([{"type": "function", "function": {"name": "now"}}]).tools
    assert tool.parameters is None
    assert read_tool_list({"tools": []}).shape is None and read_tool_list([]).tools == ()


@pytest.mark.parametrize(("data", "says"), [
    ({"foo": 1}, "expected an MCP tools/list result"),
    ("tools", "got a string"),
    (42, "got a number"),
    ([1], "tools[0]: expected a tool"),
    ([{"name": "x"}], "tools[0] (x): expected a tool"),
    ([MCP_TOOL, OPENAI_TOOL], "tools[1] (weather): an OpenAI tool in a list of MCP tools"),
    ([{"name": "", "inputSchema": {}}], "tools[0]: name: expected a non-empty string"),
    ([{"name": "a b", "inputSchema": {}}], "holds white space"),
    ([{"name": "x" * 129, "inputSchema": {}}], "longer than 128"),
    ([{"name": "x", "inputSchema": []}], "tools[0] (x): inputSchema: expected a JSON Schema object, got an array"),
    ([{"name": "x", "inputSchema": {"type": "string"}}], "type 'object', got type 'string'"),
    ([{"name": "x", "inputSchema": None}], "inputSchema: missing"),
    ([{"name": "x", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}], "annotations.readOnlyHint"),
    ([{"name": "x", "inputSchema": {}, "description": 3}], "description: expected a string"),
    ([{"type": "web_search", "function": {"name": "x"}}], "type: expected 'function'"),
    ([{"name": "x", "input_schema": SCHEMA, "type": "bash_20250124"}], "is a server tool"),
    ({"tools": [MCP_TOOL], "nextCursor": 5}, "nextCursor: expected a string"),
])
def test_bad_lists_name_the_tool_and_the_problem(data, says):
    with pytest.raises(ToolListError) as exc:
        read_tool_list(data)
    assert says in str(exc.value) and "\n" not in str(exc.value)
