"""An agent written for OpenAI as an end-to-end arm: the OpenAI Agents SDK's own loop over the
study's MCP servers (issue 53, item 5).

The same agent runs two ways, unchanged but for its base URL:

- ``raw``: against the local model's own OpenAI-compatible server, as such an agent is pointed at a
  local model today (llama-cpp-python answers a tool call as text when its chat format does not
  parse calls, and the SDK then takes that text as the final answer);
- ``endpoint``: against ``serve --openai`` in front of the same model (``serve.openai_http``).

:func:`run_framework` runs one task and returns the calls the agent made, with their results, in
the shape the end-to-end checks read.
"""

from __future__ import annotations

import os
import time
from typing import Any, NamedTuple

from helmdeck_dspy.planning.conversation import ERROR_PREFIXES


class FrameworkStep(NamedTuple):
    """One call the agent made and what came back."""

    tool: str
    args: dict[str, Any]
    text: str
    error: bool


class FrameworkRun(NamedTuple):
    """What the agent did: its calls, why it stopped, how many model turns it took, its last text,
    and the error that ended it (a model endpoint's refusal) if one did."""

    steps: list[FrameworkStep]
    stopped_because: str
    turns: int
    final: str
    seconds: float
    error: str | None = None


def _servers(sources: list[str], env: dict[str, str], cwd: str) -> list[Any]:
    """The study's stdio servers as the SDK starts them (``name=mcp+stdio:COMMAND`` sources)."""
    from agents.mcp import MCPServerStdio

    from helmdeck_dspy.catalog.importing.sources import parse_source

    servers = []
    for text in sources:
        spec = parse_source(text)
        keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        servers.append(MCPServerStdio(params={"command": spec.command, "args": list(spec.args),
                                              "env": {**keep, **spec.env, **env}, "cwd": cwd},
                                      name=spec.label or spec.command, client_session_timeout_seconds=60,
                                      cache_tools_list=True))
    return servers


def _steps(items: list[Any]) -> list[FrameworkStep]:
    import json

    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    order: list[str] = []
    outputs: dict[str, str] = {}
    for item in items:
        raw = getattr(item, "raw_item", None)
        if item.type == "tool_call_item" and raw is not None:
            call_id = str(getattr(raw, "call_id", None) or getattr(raw, "id", ""))
            try:
                args = json.loads(getattr(raw, "arguments", "") or "{}")
            except ValueError:
                args = {}
            calls[call_id] = (getattr(raw, "name", ""), args if isinstance(args, dict) else {})
            order.append(call_id)
        elif item.type == "tool_call_output_item":
            call_id = str(raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", ""))
            outputs[call_id] = str(item.output)
    return [FrameworkStep(calls[c][0], calls[c][1], outputs.get(c, ""),
                          outputs.get(c, "").strip().lower().startswith(ERROR_PREFIXES)) for c in order]


def run_framework(intent: str, sources: list[str], env: dict[str, str], cwd: str, *, base_url: str, model: str,
                  max_turns: int, time_cap_s: float) -> FrameworkRun:
    """Run the SDK's agent on ``intent`` with the study's servers and its model at ``base_url``."""
    import anyio

    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.exceptions import AgentsException
    from openai import APIError, AsyncOpenAI

    set_tracing_disabled(True)  # nothing leaves the machine
    t0 = time.monotonic()
    outcome: dict[str, Any] = {"stopped": "done", "items": [], "turns": 0, "final": "", "error": None}

    async def run() -> None:
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            servers = [await stack.enter_async_context(s) for s in _servers(sources, env, cwd)]
            client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=time_cap_s)
            stack.push_async_callback(client.close)  # closed on this loop, before it ends
            agent = Agent(name="agent", mcp_servers=servers, model_settings=ModelSettings(temperature=0),
                          model=OpenAIChatCompletionsModel(model=model, openai_client=client))
            try:
                with anyio.fail_after(time_cap_s):
                    result = await Runner.run(agent, intent, max_turns=max_turns)
                outcome.update(items=result.new_items, turns=len(result.raw_responses),
                               final=str(result.final_output or ""))
            except TimeoutError:
                outcome["stopped"] = "time_cap"
            except AgentsException as exc:
                outcome["stopped"] = "max_steps" if "max turns" in str(exc).lower() else "failed"
                outcome["items"] = list(getattr(getattr(exc, "run_data", None), "new_items", []) or [])
            except APIError as exc:  # the model endpoint refused or failed a turn: the agent's run ends there
                outcome.update(stopped="failed", error=f"{type(exc).__name__}: {exc}"[:500])

    anyio.run(run)
    steps = _steps(outcome["items"])
    return FrameworkRun(steps, outcome["stopped"], outcome["turns"], outcome["final"], round(time.monotonic() - t0, 3),
                        outcome["error"])
