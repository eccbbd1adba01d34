"""The two MCP tools, built on the SDK's ``Tool`` from this package's request and result models.

Each tool's input schema is its request model's JSON schema and its output schema its result
model's, so the schema a client lists and the validation a call gets come from one definition.
Arguments reach the handler unvalidated and are checked against the request model here, which
makes a bad argument a tool error naming it in one line (``invalid argument max_tokens: ...``).
Every outcome is a tool result: a plan that fails is ``isError`` with its cause, never a
protocol error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.errors import (
    ArgumentError,
    InputError,
    LMSpecError,
    RunError,
    StepCapError,
)
from helmdeck_dspy.serve.auth import current_caller
from helmdeck_dspy.serve.names import PLAN_TOOL, ROUTE_TOOL
from helmdeck_dspy.serve.service import PlanService
from helmdeck_dspy.serve.wire import (
    PlanRequest,
    PlanWire,
    RouteRequest,
    RouteWire,
    ToolErrorWire,
    argument_of,
    failure_wire,
    parse_arguments,
    plan_text,
    plan_wire,
    route_text,
)

PLAN_DESCRIPTION = (
    "Turn a request that spans several actions into an ordered list of catalog tool calls for the given "
    "model's tier. Tier A/B models get the whole plan in one call (full_steps). Tier C and unknown models get "
    "one step per call (single_pick): run that step, then call again with prior_steps (each with its output) "
    "until more_steps_likely is absent; the server stops a loop at its step cap. Steps whose tool is 'unknown' "
    "were rejected by the guards: do not dispatch them. For a single action, helmdeck.route is cheaper. "
    "Pass tools (your agent's own MCP or OpenAI tool list) to plan over those tools instead of the server's catalog."
)
ROUTE_DESCRIPTION = (
    "Pick the one catalog tool (pack or pipeline) for a single-intent request, from a ranking of the catalog "
    "fitted to the model's budget. No LLM call: instant and free. Returns the recommendation, up to three "
    "alternatives, a confidence margin, and a gap warning when nothing in the catalog matches. Pass tools to pick "
    "from your own tools instead of the server's catalog."
)


class _RawArguments(ArgModelBase):
    """Hands the call's arguments to the handler as one dict, for the request model to validate."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


Handler = Callable[[dict[str, Any]], Awaitable[CallToolResult]]


def _tool(name: str, title: str, description: str, request: type[BaseModel], result: type[BaseModel],
          handler: Handler, annotations: ToolAnnotations) -> Tool:
    return Tool(
        fn=handler, name=name, title=title, description=description, parameters=request.model_json_schema(),
        fn_metadata=FuncMetadata(arg_model=_RawArguments, output_model=result), is_async=True,
        context_kwarg=None, annotations=annotations,  # no handler takes the SDK's context
    )


def ok_result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def error_result(error: ToolErrorWire, text: str | None = None) -> CallToolResult:
    body = text or f"{error.error}: {error.message}"
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=error.dump(),
                          is_error=True)


def _input_error(exc: InputError) -> CallToolResult:
    """A tool error for input the caller can fix: a bad argument, the step cap, an uncallable model."""
    if isinstance(exc, StepCapError):
        return error_result(ToolErrorWire(error="step_cap", message=str(exc)))
    if isinstance(exc, ArgumentError):
        argument = argument_of(exc)
    else:
        argument = "model" if isinstance(exc, LMSpecError) else None
    return error_result(ToolErrorWire(error="invalid_argument", message=str(exc), argument=argument))


def plan_tool(service: PlanService, default_caller: str) -> Tool:
    """``helmdeck.plan`` over ``service``; plans are recorded for the calling caller."""

    async def plan(arguments: dict[str, Any]) -> CallToolResult:
        try:
            request = parse_arguments(PlanRequest, arguments)
            caller = current_caller(default_caller)
            outcome = await anyio.to_thread.run_sync(service.plan, request, caller)
        except InputError as exc:
            return _input_error(exc)
        except RunError as exc:
            return error_result(ToolErrorWire(error="run_error", message=str(exc)))
        result = outcome.result
        if not result.ok:
            failure = failure_wire(result)
            return error_result(failure, f"no plan ({failure.cause}, finish_reason {failure.finish_reason}): "
                                         f"{failure.message}")
        wire = plan_wire(result)
        return ok_result(plan_text(wire, tier=result.tier, step_cap=outcome.step_cap), wire.dump())

    return _tool(PLAN_TOOL, "Plan a multi-step request", PLAN_DESCRIPTION, PlanRequest, PlanWire, plan,
                 ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                 open_world_hint=True))


def route_tool(service: PlanService) -> Tool:
    """``helmdeck.route`` over ``service`` (no LM call)."""

    async def route(arguments: dict[str, Any]) -> CallToolResult:
        try:
            request = parse_arguments(RouteRequest, arguments)
            answer = await anyio.to_thread.run_sync(service.route, request)
        except InputError as exc:
            return _input_error(exc)
        return ok_result(route_text(answer), answer.dump())

    return _tool(ROUTE_TOOL, "Pick one tool for a request", ROUTE_DESCRIPTION, RouteRequest, RouteWire, route,
                 ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                 open_world_hint=False))
