"""``helmdeck.plan`` and ``helmdeck.route`` over the caller's own ``tools`` (MCP or OpenAI shape):
plans name only those tools, the catalog is fitted to the model's budget, read once per distinct
list (the prompt's catalog text is byte-identical call after call), bad lists are one
``invalid_argument`` line, and helmdeck://routing-guide stays the server's own catalog."""

from __future__ import annotations

import json

import anyio
import pytest

from helmdeck_dspy.serve.wire import MAX_TOOLS, MAX_TOOLS_BYTES, PlanRequest, RouteRequest, parse_arguments
from tests.planning.test_planner import NEMOTRON, SONNET, plan_json, replay_file, step
from tests.serve.conftest import NO_SDK, config_for

pytest.importorskip("mcp", reason=NO_SDK)

SCHEMA = {"type": "object", "properties": {"repo_path": {"type": "string"}, "max_count": {"type": "integer"}},
          "required": ["repo_path"]}
MCP_TOOLS = [
    {"name": "git_log", "description": "Shows the commit logs", "inputSchema": SCHEMA,
     "annotations": {"readOnlyHint": True}},
    {"name": "git_status", "description": "Shows the working tree status",
     "inputSchema": {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}},
    {"name": "get_current_time", "description": "Get current time in a specific timezone",
     "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
]
OPENAI_TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                   "parameters": t["inputSchema"]}} for t in MCP_TOOLS]


def service_for(tmp_path, *completions):
    from helmdeck_dspy.serve.service import PlanService

    return PlanService(config_for(tmp_path, replay_file(tmp_path, *completions), history=False))


async def call(service, tool: str, arguments: dict):
    """One tool call through the real MCP server, in process (the SDK's client and server)."""
    from mcp import Client

    from helmdeck_dspy.serve.server import build_server

    async with Client(build_server(service, default_caller="tester")) as client:
        return await client.call_tool(tool, arguments)


def system_prompts(service) -> list[str]:
    return [r.system for r in service.lm.engine.requests]


def test_plan_names_only_the_callers_tools(tmp_path):
    answer = plan_json([step(1, "git_log", {"repo_path": "/srv/app", "max_count": 3}),
                        step(2, "github.create_issue", {"repo": "a/b"})])  # in the server's catalog, not theirs
    service = service_for(tmp_path, answer)
    result = anyio.run(call, service, "helmdeck.plan",
                       {"user_intent": "show the last 3 commits then file an issue", "model": SONNET,
                        "tools": MCP_TOOLS})
    assert not result.is_error, result.content
    assert [s["tool"] for s in result.structured_content["steps"]] == ["git_log", "unknown"]
    [system] = system_prompts(service)
    assert '"name":"git_log"' in system and '"hints":["read_only"]' in system
    assert '"name":"github.create_issue"' not in system  # the server's catalog is not shown


def test_the_same_tools_are_read_once_and_render_byte_identical(tmp_path):
    answer = plan_json([step(1, "get_current_time", {"timezone": "Asia/Tokyo"})])
    service = service_for(tmp_path, answer, answer, answer)
    reordered = [{k: t[k] for k in reversed(list(t))} for t in MCP_TOOLS]  # same content, other key order
    for tools in (MCP_TOOLS, json.loads(json.dumps(MCP_TOOLS)), reordered):
        result = anyio.run(call, service, "helmdeck.plan", {"user_intent": "time in Tokyo?", "model": SONNET,
                                                             "tools": tools})
        assert not result.is_error, result.content
    first, second, third = system_prompts(service)
    assert first == second == third
    assert (service.tool_catalogs.misses, service.tool_catalogs.hits, len(service.tool_catalogs)) == (1, 2, 1)
    other = service.catalog_for(OPENAI_TOOLS)  # another list (shape): another entry, the same packs
    assert other.ids() == service.catalog_for(MCP_TOOLS).ids() and len(service.tool_catalogs) == 2


def test_a_tier_c_model_gets_the_callers_tools_fitted_to_its_budget(tmp_path):
    many = [{"name": f"tool_{i:03d}", "description": f"Does task number {i} with a long explanation " + "x" * 200,
             "inputSchema": SCHEMA} for i in range(80)]
    many.append({"name": "get_current_time", "description": "Get current time in a specific timezone",
                 "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}}})
    answer = plan_json([step(1, "get_current_time", {"timezone": "Europe/Oslo"})])
    service = service_for(tmp_path, answer)
    result = anyio.run(call, service, "helmdeck.plan",
                       {"user_intent": "what is the current time in Oslo timezone", "model": NEMOTRON, "tools": many})
    assert not result.is_error, result.content
    wire = result.structured_content
    assert wire["prompt_variant_used"] == "single_pick" and wire["steps"][0]["tool"] == "get_current_time"
    assert wire["compaction"]["after_bytes"] < wire["compaction"]["before_bytes"]
    assert wire["compaction"]["before_bytes"] == service.catalog_for(many).size_bytes()


def test_route_picks_from_the_callers_openai_tools(tmp_path):
    service = service_for(tmp_path)
    result = anyio.run(call, service, "helmdeck.route", {"user_intent": "show me the commit logs", "model": SONNET,
                                                          "tools": json.dumps(OPENAI_TOOLS)})  # JSON text works too
    assert not result.is_error, result.content
    assert result.structured_content["recommendation"]["tool"] == "git_log"


def test_the_routing_guide_resource_stays_the_servers_catalog(tmp_path):
    service = service_for(tmp_path)
    service.catalog_for(MCP_TOOLS)
    names = [p["name"] for p in service.routing_guide()["packs"]]
    assert "git_log" not in names and names == [p.name for p in service.catalog.packs]


BAD_TOOLS = [
    ({"functions": []}, "Input should be a valid list"),
    ([], "holds no tools"),
    ("[oops", "not JSON"),
    ([{"name": "x"} for _ in range(MAX_TOOLS + 1)], f"at most {MAX_TOOLS} tools"),
    ([{"name": "big", "description": "x" * MAX_TOOLS_BYTES, "inputSchema": {}}], f"at most {MAX_TOOLS_BYTES} bytes"),
    ([{"name": "x", "input": {}}], "tools[0] (x): expected a tool"),
    ([{"name": "x", "inputSchema": {"type": "array"}}], "tools[0] (x): inputSchema: expected a schema of type"),
    ([MCP_TOOLS[0], MCP_TOOLS[0]], "two tools named 'git_log'"),
    ([MCP_TOOLS[0], OPENAI_TOOLS[1]], "an OpenAI tool in a list of MCP tools"),
]


@pytest.mark.parametrize(("tools", "says"), BAD_TOOLS, ids=[s for _, s in BAD_TOOLS])
@pytest.mark.parametrize("tool", ["helmdeck.plan", "helmdeck.route"])
def test_bad_tools_are_one_invalid_argument_line(tool, tools, says, tmp_path):
    service = service_for(tmp_path)
    result = anyio.run(call, service, tool, {"user_intent": "x", "model": SONNET, "tools": tools})
    assert result.is_error
    error = result.structured_content
    assert (error["error"], error["argument"]) == ("invalid_argument", "tools")
    assert error["message"].startswith("invalid argument tools") and says in error["message"]
    assert "\n" not in error["message"] and service.lm.engine.requests == []
    assert len(service.tool_catalogs) == 0


def test_the_published_schemas_take_tools_as_an_array():
    for request in (PlanRequest, RouteRequest):
        schema = request.model_json_schema()["properties"]["tools"]
        assert {"type": "array", "items": {"type": "object", "additionalProperties": True}} in schema["anyOf"]
        assert "MCP tools/list" in schema["description"]
    unwrapped = parse_arguments(RouteRequest, {"user_intent": "x", "model": "a/b", "tools": {"tools": MCP_TOOLS}})
    assert unwrapped.tools == MCP_TOOLS
