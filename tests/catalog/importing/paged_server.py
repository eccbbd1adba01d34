"""A small MCP server over stdio for the import tests, built on the SDK's low-level ``Server``.

It lists its tools in pages of two (``nextCursor`` ``page-2``, ``page-3``), so an importer must
follow the cursor to see them all. ``--repeat-cursor`` makes the second page hand back its own
cursor again, which a client must refuse rather than loop on.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def _tool(name: str, description: str, **annotations: bool) -> types.Tool:
    schema = {"type": "object", "properties": {"path": {"type": "string", "description": "Where."}},
              "required": ["path"]}
    hints = types.ToolAnnotations(**annotations) if annotations else None
    return types.Tool(name=name, description=description, input_schema=schema, annotations=hints)


TOOLS = [
    _tool("read_note", "Read one note.", read_only_hint=True, idempotent_hint=True),
    _tool("write_note", "Write a note, replacing it.", read_only_hint=False, destructive_hint=True),
    _tool("list_notes", "List the notes in a folder.", read_only_hint=True),
    _tool("delete_note", "Delete a note.", destructive_hint=True),
    _tool("search_notes", "Search notes by words."),
]
PAGE = 2


def main() -> None:
    repeat = "--repeat-cursor" in sys.argv

    async def list_tools(ctx, params):  # noqa: ARG001 - the handler signature is the SDK's
        cursor = params.cursor if params is not None else None
        page = int(cursor.removeprefix("page-")) if cursor else 1
        start = (page - 1) * PAGE
        more = start + PAGE < len(TOOLS)
        next_cursor = ("page-2" if repeat and page == 2 else f"page-{page + 1}") if more else None
        return types.ListToolsResult(tools=TOOLS[start:start + PAGE], next_cursor=next_cursor)

    server = Server("notes-server", on_list_tools=list_tools)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
