"""ADR 053's single_pick loop driven by an MCP client: plan, run the step, plan again with
prior_steps, until more_steps_likely is absent; and the server's step cap."""

from __future__ import annotations

import anyio
import pytest

from tests.planning.test_planner import INTENT, NEMOTRON, plan_json, replay_file, step
from tests.serve.conftest import NO_SDK, config_for, http_client, http_server

pytest.importorskip("mcp", reason=NO_SDK)

CHAIN = ("helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate")


def answers(tools: tuple[str, ...], last_more: bool) -> list[str]:
    """One single_pick answer per tool, each expecting more steps except (unless ``last_more``) the last."""
    return [plan_json([step(1, tool, {"n": i})], more_steps_likely=last_more or i < len(tools))
            for i, tool in enumerate(tools, 1)]


async def drive(client, max_calls: int = 10) -> tuple[list[dict], list[dict]]:
    """The client side of the loop: returns every plan result and the prior_steps sent last."""
    prior: list[dict] = []
    plans: list[dict] = []
    for _ in range(max_calls):
        result = await client.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": NEMOTRON,
                                                          "prior_steps": prior})
        assert not result.is_error, result.content
        plans.append(result.structured_content)
        [next_step] = result.structured_content["steps"]
        output = f"ran {next_step['tool']} -> artifact {len(prior) + 1}"  # the client "runs" the step
        prior.append({"order": len(prior) + 1, "tool": next_step["tool"], "args": next_step["args"], "output": output})
        if not result.structured_content.get("more_steps_likely"):
            break
    return plans, prior


def test_the_client_loops_until_more_steps_likely_is_absent(tmp_path):
    replay = replay_file(tmp_path, *answers(CHAIN, last_more=False))
    with http_server(config_for(tmp_path, replay)) as server:
        async def main() -> tuple[list[dict], list[dict]]:
            async with http_client(server.url) as client:
                return await drive(client)

        plans, prior = anyio.run(main)
        requests = [r for r in server.service.lm.engine.requests if "USER REQUEST" in r.messages[-1].text]
    assert [p["steps"][0]["tool"] for p in plans] == list(CHAIN)
    assert [p.get("more_steps_likely") for p in plans] == [True, True, None]
    assert all(p["prompt_variant_used"] == "single_pick" for p in plans)
    assert len(requests) == 3
    third = requests[2].messages[-1].text  # the executed steps and their outputs reached the model
    assert "ran helmdeck.memory_store -> artifact 1" in third and "ran blog.rewrite_for_audience -> artifact 2" in third
    assert "-> artifact" not in requests[0].messages[-1].text
    assert [p["tool"] for p in prior] == list(CHAIN)


def test_the_step_cap_ends_the_loop_and_refuses_calls_past_it(tmp_path):
    replay = replay_file(tmp_path, *answers(CHAIN, last_more=True))  # the model never says it is done
    with http_server(config_for(tmp_path, replay, max_steps=2)) as server:
        async def main() -> tuple[list[dict], list[dict], object]:
            async with http_client(server.url) as client:
                plans, prior = await drive(client)
                past = await client.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": NEMOTRON,
                                                                "prior_steps": prior})
                return plans, prior, past

        plans, prior, past = anyio.run(main)
    assert [p.get("more_steps_likely") for p in plans] == [True, None]  # cleared at the cap: the loop stops
    assert len(prior) == 2
    assert past.is_error and past.structured_content["error"] == "step_cap"
    assert "2 steps already ran" in past.structured_content["message"]
