"""The server over stdio, spawned as ``helmdeck-dspy serve`` by the MCP SDK's client."""

from __future__ import annotations

import anyio
import pytest

from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.serve.auth import process_owner
from tests.serve.conftest import NO_SDK, stdio_client
from tests.serve.tour import tour, tour_replay

pytest.importorskip("mcp", reason=NO_SDK)


def test_stdio_tour_lists_plans_routes_and_reads_resources(tmp_path):
    replay = tour_replay(tmp_path)
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home, "--lm", f"replay:{replay}") as client:
            assert client.server_info is None or client.server_info.name == "helmdeck-dspy"
            await tour(client, tmp_path, process_owner())

    anyio.run(main)
    rows = HistoryStore(home / "history.sqlite").rows()
    assert {r.caller for r in rows} == {process_owner()} and len(rows) == 2


def test_stdio_no_history_records_nothing(tmp_path):
    home = tmp_path / "home"
    replay = tour_replay(tmp_path)

    async def main() -> dict:
        async with stdio_client(home, "--lm", f"replay:{replay}", "--no-history") as client:
            result = await client.call_tool("helmdeck.plan", {"user_intent": "store this", "model": "x/unknown"})
            assert not result.is_error and result.structured_content["prompt_variant_used"] == "single_pick"
            return (await client.read_resource("helmdeck://my-plans")).contents[0].text

    text = anyio.run(main)
    assert '"history": false' in text and "no-history" in text
    assert not (home / "history.sqlite").exists()
