"""``serve --transport http`` answers every refusal with a JSON body, as its other errors are (found
by measure/fuzz_servers.py: the SDK's guards answered a wrong Content-Type and an oversized body
in plain text, and an unknown path got Starlette's text 404)."""

from __future__ import annotations

import json

import pytest

from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)

from measure.fuzz_servers import INIT, MCP_ACCEPT, Tally, exchange, http_server, scripted_lm  # noqa: E402

PING = json.dumps({"jsonrpc": "2.0", "id": "p", "method": "ping"}).encode()


def test_refusals_over_http_have_json_bodies_and_keep_their_status(tmp_path):
    tally = Tally()
    with scripted_lm(deadline_s=300) as lm, http_server(lm, tmp_path, "http", tally, nice=0) as port:
        headers: dict[str, str | None] = {"Content-Type": "application/json", "Accept": MCP_ACCEPT}
        session = exchange(port, "POST", "/mcp", json.dumps(INIT).encode(), headers).session
        headers["mcp-session-id"] = session
        big = b'{"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"x": "' + b"a" * (5 << 20) + b'"}}'
        replies = {
            400: exchange(port, "POST", "/mcp", PING, {**headers, "Content-Type": "text/plain"}),
            404: exchange(port, "POST", "/nowhere", PING, headers),
            413: exchange(port, "POST", "/mcp", big, headers),
        }
    assert tally.tracebacks == 0, tally.problems
    for status, reply in replies.items():
        assert reply.status == status, (status, reply.status, reply.body[:200])
        assert reply.content_type.startswith("application/json"), (status, reply.content_type, reply.body[:200])
        error = json.loads(reply.body)["error"]
        assert error["code"] == -32600 and error["message"], (status, error)
