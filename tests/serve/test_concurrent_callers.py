"""Two MCP callers planning at once over different ``tools`` never see each other's tools, over
streamable HTTP (in process) and stdio (a spawned server). The interleaving is forced as in
``tests/planning/test_concurrent_callers.py``: the server's first plan call is held at the start
of the plan module until the second caller's has reached it too, and the test asserts afterwards
that they met there (the callback only records it: DSPy swallows what a callback raises). The
spawned stdio server writes what its callback saw to a file the test reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import dspy
import pytest

from helmdeck_dspy.serve.config import ServeConfig
from tests.fault_server import FaultServer, ok
from tests.planning.test_concurrent_callers import GIT, INTENTS, MODEL, WEATHER, HoldFirst, assert_met, check_requests
from tests.serve.conftest import NO_SDK, http_client, http_server, server_env

pytest.importorskip("mcp", reason=NO_SDK)

ANSWER = json.dumps({"tool_fits": True, "steps": []})
ROOT = Path(__file__).resolve().parents[2]


async def _both(call: Any) -> None:
    """One plan to build the model's planner (which the server then keeps and derives each request's
    from), then both callers at once: whichever reaches the program first is held there until the
    other has."""
    await call("warm-up", GIT)
    async with anyio.create_task_group() as group:
        group.start_soon(call, "weather", WEATHER)
        group.start_soon(call, "git", GIT)


def test_http_callers_never_see_each_others_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dspy.clients.cache import Cache

    # a response cache of the test's own: every call reaches the LM, whatever earlier tests cached
    monkeypatch.setattr(dspy, "cache", Cache(True, True, str(tmp_path / "dspy-cache"), 10**9, 1000))
    hold = HoldFirst(skip=1)
    before = dspy.settings.get("callbacks", [])
    with FaultServer([ok(ANSWER)]) as lm_server:
        config = ServeConfig(transport="http", lm_spec="llamacpp/m", api_base=lm_server.url,
                             history_path=tmp_path / "history.sqlite")
        dspy.configure(callbacks=[*before, hold])  # the server's worker threads see only the global settings
        try:
            with http_server(config) as server:
                async def call(who: str, tools: list[dict[str, Any]]) -> None:
                    async with http_client(server.url) as client:
                        result = await client.call_tool("helmdeck.plan", {"user_intent": INTENTS[who], "model": MODEL,
                                                                          "tools": tools})
                        assert not result.is_error, result

                anyio.run(_both, call)
        finally:
            dspy.configure(callbacks=before)
        assert_met(hold.met, hold.seen, 3)
        check_requests([r.body for r in lm_server.requests])


HELD_SERVE = ("import dspy, os; from tests.planning.test_concurrent_callers import HoldFirst; "
              "dspy.configure(callbacks=[HoldFirst(skip=1, record=os.environ['HELD_RECORD'])]); "
              "from helmdeck_dspy.cli import main; main()")
"""A real ``helmdeck-dspy serve`` process whose second plan call is held until a third has started;
what its callback saw is written to the file ``HELD_RECORD`` names."""


def test_stdio_callers_never_see_each_others_tools(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    record = tmp_path / "held.json"
    with FaultServer([ok(ANSWER)]) as lm_server:
        params = StdioServerParameters(
            command=sys.executable, cwd=str(ROOT),
            args=["-c", HELD_SERVE, "serve", "--lm", "llamacpp/m", "--api-base", lm_server.url],
            env=server_env(tmp_path / "home", PYTHONPATH=str(ROOT), HELMDECK_DSPY_CACHE=str(tmp_path / "cache"),
                           DSPY_CACHEDIR=str(tmp_path / "cache"),  # its own response cache: every call reaches the LM
                           HELD_RECORD=str(record)))

        async def main_() -> None:
            async with Client(params, read_timeout_seconds=60) as client:
                async def call(who: str, tools: list[dict[str, Any]]) -> None:
                    result = await client.call_tool("helmdeck.plan", {"user_intent": INTENTS[who], "model": MODEL,
                                                                      "tools": tools})
                    assert not result.is_error, result

                await _both(call)

        anyio.run(main_)
        held = json.loads(record.read_text(encoding="utf-8"))
        assert_met(held["met"], held["seen"], 3)
        check_requests([r.body for r in lm_server.requests])
