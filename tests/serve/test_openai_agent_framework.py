"""An agent written for OpenAI, unchanged but for its base URL: the OpenAI Agents SDK's own loop
calls a real MCP server (``mcp-server-time`` on stdio) through ``serve --openai``. The planner's
model is scripted on a loopback endpoint; the tool runs for real."""

from __future__ import annotations

import json
import shutil
import uuid
import sys
from pathlib import Path

import anyio
import pytest

from tests.serve.test_openai_endpoint import MODEL, _lm_key, endpoint  # noqa: F401 - the fixture applies here too

agents = pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed (the dev extra has it)")
TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).with_name("mcp-server-time"))


@pytest.mark.skipif(not Path(TIME_SERVER).exists(), reason="mcp-server-time is not installed (the dev extra has it)")
def test_an_agents_sdk_agent_finishes_through_the_endpoint_over_a_real_mcp_server(tmp_path):
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # nothing leaves the machine
    near_miss = json.dumps([{"name": "getCurrentTime", "arguments": {"timezone": "Asia/Tokyo"}}])
    answers = [near_miss, "[]", "It is morning in Tokyo."]  # the plan, the plan after the result, the text answer

    async def run(url: str) -> object:
        params = {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}
        async with MCPServerStdio(params=params, client_session_timeout_seconds=60) as server:
            client = AsyncOpenAI(base_url=url, api_key="unused", max_retries=0)
            agent = Agent(name="clock", instructions="Use the tools to answer.", mcp_servers=[server],
                          model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client))
            # a question of its own: the endpoint's LM keeps DSPy's response cache, which keys on the request
            return await Runner.run(agent, f"What time is it in Tokyo right now? (run {uuid.uuid4().hex[:8]})")

    with endpoint(answers, tmp_path) as (client, lm):
        result = anyio.run(run, str(client.base_url))
        second_plan = json.dumps(lm.requests[1].body["messages"])
    calls = [i for i in result.new_items if i.type == "tool_call_item"]
    outputs = [i for i in result.new_items if i.type == "tool_call_output_item"]
    assert [c.raw_item.name for c in calls] == ["get_current_time"]  # the near-miss name, repaired
    assert "Asia/Tokyo" in str(outputs[0].output)  # the real server answered
    assert "Asia/Tokyo" in second_plan and "datetime" in second_plan  # its result reached the planner
    assert result.final_output == "It is morning in Tokyo."
