"""Tool lists in the shapes agents hold them, read into one neutral :class:`ImportedTool` each.

Three shapes are read, and a list holds tools of one shape:

- MCP: a ``tools/list`` result (``{"tools": [...], "nextCursor": ...}``, bare or inside a JSON-RPC
  response) or its array of tools: ``name``, ``description``, ``inputSchema``, ``annotations``;
- OpenAI: a ``tools`` array of ``{"type": "function", "function": {name, description,
  parameters}}`` (chat completions), or the flat ``{"type": "function", "name": ...}`` of the
  Responses API;
- Anthropic: ``tools`` of ``{name, description, input_schema}``.

Each reader checks what planning needs (a name, a description if any, an object schema for the
arguments) and raises :class:`~helmdeck_dspy.errors.ToolListError` naming the tool at fault
(``tools[3] (git_log): inputSchema: expected a JSON object``). The same readers serve
``catalog import`` and the MCP server's ``tools`` argument.
"""

from __future__ import annotations

import unicodedata

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.errors import ToolListError

Shape = Literal["mcp", "openai", "anthropic"]
SHAPES: tuple[Shape, ...] = ("mcp", "openai", "anthropic")
SHAPE_NAMES = {"mcp": "MCP", "openai": "OpenAI", "anthropic": "Anthropic"}
EXPECTED = ("expected an MCP tools/list result ({\"tools\": [...]}), an OpenAI tools array "
            "([{\"type\": \"function\", ...}]) or Anthropic tools ([{\"name\", \"input_schema\"}])")
EXPECTED_TOOL = ("expected a tool: an MCP tool (with inputSchema), an OpenAI tool (type 'function') or an "
                 "Anthropic tool (with input_schema)")
MAX_NAME_CHARS = 128
"""The longest tool name read (MCP's limit)."""

_HINT_KEYS = (("readOnlyHint", "read_only"), ("destructiveHint", "destructive"),
              ("idempotentHint", "idempotent"), ("openWorldHint", "open_world"))


class ImportedTool(BaseModel):
    """One tool as read from any shape: what a catalog pack is made of."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] | None = Field(default=None, description="The arguments' JSON Schema (an object).")
    hints: tuple[str, ...] = Field(default=(), description="The MCP annotations set to true (read_only, ...).")


class ToolList(BaseModel):
    """The tools one source gave, the shape they came in, and the next page's cursor (MCP only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shape: Shape | None = Field(description="None for an empty list (no shape to tell).")
    tools: tuple[ImportedTool, ...] = ()
    next_cursor: str | None = None


def _where(index: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        name = item["function"].get("name", name)
    return f"tools[{index}]" + (f" ({_escaped(name[:60])})" if isinstance(name, str) and name else "")


def _kind(value: Any) -> str:
    return {dict: "a JSON object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def _name(obj: dict[str, Any]) -> str:
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name: expected a non-empty string, got {_kind(name)}")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"name: longer than {MAX_NAME_CHARS} characters")
    hidden = [c for c in name if unicodedata.category(c).startswith("C")]
    if hidden:  # a terminal escape or a bidirectional mark can make one tool's name display as another's
        raise ValueError(f"name: {_escaped(name[:60])!r} holds control or formatting characters "
                         f"({_escaped(hidden[0])})")
    if name != name.strip() or any(c.isspace() for c in name):
        raise ValueError(f"name: {name[:60]!r} holds white space")
    return name


def _escaped(text: str) -> str:
    """``text`` with every control or formatting character written as its escape."""
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c).startswith("C") else c
                   for c in text)


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a string, got {_kind(value)}")
    return value.strip()


def _schema(obj: dict[str, Any], key: str, *, required: bool) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise ValueError(f"{key}: missing (every tool of this shape has an argument schema)")
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{key}: expected a JSON Schema object, got {_kind(value)}")
    kind = value.get("type", "object")
    if kind != "object":
        raise ValueError(f"{key}: expected a schema of type 'object', got type {kind!r}")
    return value


def _hints(obj: dict[str, Any]) -> tuple[str, ...]:
    annotations = obj.get("annotations")
    if annotations is None:
        return ()
    if not isinstance(annotations, dict):
        raise ValueError(f"annotations: expected a JSON object, got {_kind(annotations)}")
    hints = []
    for key, hint in _HINT_KEYS:
        value = annotations.get(key)
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"annotations.{key}: expected true or false, got {_kind(value)}")
        if value:
            hints.append(hint)
    return tuple(hints)


def read_mcp_tool(obj: dict[str, Any]) -> ImportedTool:
    """An MCP ``Tool``: ``name``, ``description`` (else ``title``), ``inputSchema``, ``annotations``."""
    return ImportedTool(name=_name(obj), description=_text(obj, "description") or _text(obj, "title"),
                        parameters=_schema(obj, "inputSchema", required=True), hints=_hints(obj))


def read_openai_tool(obj: dict[str, Any]) -> ImportedTool:
    """An OpenAI function tool, nested (chat completions) or flat (Responses API)."""
    if obj.get("type") != "function":
        raise ValueError(f"type: expected 'function' (the only tool type that can be planned), got {obj.get('type')!r}")
    function = obj.get("function", obj)
    if not isinstance(function, dict):
        raise ValueError(f"function: expected a JSON object, got {_kind(function)}")
    return ImportedTool(name=_name(function), description=_text(function, "description"),
                        parameters=_schema(function, "parameters", required=False))


def read_anthropic_tool(obj: dict[str, Any]) -> ImportedTool:
    """An Anthropic client tool: ``name``, ``description``, ``input_schema``."""
    if obj.get("type", "custom") != "custom":
        raise ValueError(f"type: {obj.get('type')!r} is a server tool, not one a plan can call")
    return ImportedTool(name=_name(obj), description=_text(obj, "description"),
                        parameters=_schema(obj, "input_schema", required=True))


READERS: dict[Shape, Callable[[dict[str, Any]], ImportedTool]] = {
    "mcp": read_mcp_tool, "openai": read_openai_tool, "anthropic": read_anthropic_tool,
}


def shape_of(item: Any) -> Shape | None:
    """Which shape one tool object is in, from its telling keys; None when none fits."""
    if not isinstance(item, dict):
        return None
    if "inputSchema" in item:
        return "mcp"
    if item.get("type") == "function" or isinstance(item.get("function"), dict):
        return "openai"
    if "input_schema" in item:
        return "anthropic"
    return None


def _items(data: Any) -> tuple[list[Any], str | None]:
    """The tool objects of a decoded document, and the MCP next-page cursor if it has one."""
    if isinstance(data, dict) and "jsonrpc" in data and isinstance(data.get("result"), dict):
        data = data["result"]
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        cursor = data.get("nextCursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ToolListError(f"nextCursor: expected a string, got {_kind(cursor)}")
        return data["tools"], cursor or None
    if isinstance(data, list):
        return data, None
    got = f"a JSON object with keys {sorted(data)[:6]}" if isinstance(data, dict) else _kind(data)
    raise ToolListError(f"{EXPECTED}; got {got}")


def read_tool_list(data: Any) -> ToolList:
    """Read a decoded tool list in any of the three shapes.

    Raises:
        ToolListError: The document is in none of the shapes, the tools mix shapes, or a tool is
            malformed (the message names it: ``tools[2] (name): field: problem``).
    """
    items, cursor = _items(data)
    shape: Shape | None = None
    tools = []
    for index, item in enumerate(items):
        found = shape_of(item)
        if found is None:
            what = f"keys {sorted(item)[:6]}" if isinstance(item, dict) else _kind(item)
            raise ToolListError(f"{_where(index, item)}: {EXPECTED_TOOL}; got {what}")
        if shape is None:
            shape = found
        elif found != shape:
            raise ToolListError(f"{_where(index, item)}: an {SHAPE_NAMES[found]} tool in a list of "
                                f"{SHAPE_NAMES[shape]} tools")
        try:
            tools.append(READERS[found](item))
        except ValueError as exc:
            raise ToolListError(f"{_where(index, item)}: {exc}") from None
    return ToolList(shape=shape, tools=tuple(tools), next_cursor=cursor)
