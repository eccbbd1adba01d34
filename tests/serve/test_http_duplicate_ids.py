"""Over streamable HTTP, a request whose id is already in flight in its session is answered at once
(found by measure/fuzz_servers.py: the MCP SDK keys each POST's answer stream by the request id,
so a second POST with the same id took over the first one's stream and the others waited, kept
open by the SDK's pings, for ever)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)

from measure.fuzz_servers import (  # noqa: E402
    INIT,
    INITIALIZED,
    MCP_ACCEPT,
    Tally,
    exchange,
    http_server,
    json_messages,
    scripted_lm,
)

PLAN_CALL = {"jsonrpc": "2.0", "id": "twice", "method": "tools/call", "params": {"name": "helmdeck.plan", "arguments": {
    "user_intent": "rewrite my notes as a blog post", "model": "openai/gpt-4o"}}}


def test_an_id_already_in_flight_in_the_session_is_answered_not_left_hanging(tmp_path):
    tally = Tally()
    with scripted_lm(deadline_s=300) as lm, http_server(lm, tmp_path, "http", tally, nice=0) as port:
        headers: dict[str, str | None] = {"Content-Type": "application/json", "Accept": MCP_ACCEPT}
        opened = exchange(port, "POST", "/mcp", json.dumps(INIT).encode(), headers)
        headers["mcp-session-id"] = opened.session
        exchange(port, "POST", "/mcp", json.dumps(INITIALIZED).encode(), headers)
        body = json.dumps(PLAN_CALL).encode()
        with ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(lambda _: exchange(port, "POST", "/mcp", body, headers, deadline_s=20), range(3)))
    assert tally.tracebacks == 0, tally.problems
    messages = []
    for reply in replies:
        assert reply.error is None, f"{reply.error}; {sum(r.error is not None for r in replies)} of 3 left hanging"
        found = json_messages(reply)
        assert found, (reply.status, reply.body[:300])
        messages += found
    assert all(m["id"] == "twice" for m in messages), messages
    assert any("result" in m for m in messages)
    for m in messages:
        assert "result" in m or m["error"]["code"] == -32600, m
