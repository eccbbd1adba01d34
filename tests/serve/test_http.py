"""The server over streamable HTTP on 127.0.0.1: the tour, callers by bearer token, refusals."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request

import anyio
import pytest

from helmdeck_dspy.cli import main
from helmdeck_dspy.serve.auth import ANONYMOUS_HTTP_CALLER, CallerTokens
from tests.planning.test_planner import INTENT, NEMOTRON, SONNET, replay_file
from tests.serve.conftest import (
    NO_SDK,
    config_for,
    http_client,
    http_server,
    serve_command,
    server_env,
)
from tests.serve.tour import TIER_A_ANSWER, TIER_C_ANSWER, tour, tour_replay

pytest.importorskip("mcp", reason=NO_SDK)

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210ab"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}


def post_status(url: str, token: str | None = None) -> int:
    """The HTTP status of an MCP initialize request sent with urllib (no SDK client, no proxy)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(INITIALIZE).encode(), headers=headers, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_http_tour_as_the_anonymous_loopback_caller(tmp_path):
    with http_server(config_for(tmp_path, tour_replay(tmp_path))) as server:
        async def main_() -> None:
            async with http_client(server.url) as client:
                await tour(client, tmp_path, ANONYMOUS_HTTP_CALLER)

        anyio.run(main_)


def test_two_token_callers_see_only_their_own_plans(tmp_path):
    replay = replay_file(tmp_path, TIER_A_ANSWER, TIER_C_ANSWER, TIER_A_ANSWER)
    tokens = CallerTokens({"alice": ALICE, "bob": BOB})
    with http_server(config_for(tmp_path, replay), tokens) as server:
        async def main_() -> tuple[dict, dict]:
            async with http_client(server.url, ALICE) as alice:
                for model in (SONNET, NEMOTRON):
                    planned = await alice.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": model})
                    assert not planned.is_error
            async with http_client(server.url, BOB) as bob:
                assert not (await bob.call_tool("helmdeck.plan", {"user_intent": "make an illustration",
                                                                  "model": SONNET})).is_error
                bobs = json.loads((await bob.read_resource("helmdeck://my-plans")).contents[0].text)
            async with http_client(server.url, ALICE) as alice:
                alices = json.loads((await alice.read_resource("helmdeck://my-plans")).contents[0].text)
            return alices, bobs

        alices, bobs = anyio.run(main_)
        assert post_status(server.url) == 401  # tokens configured: no token, no answer
        assert post_status(server.url, "not-a-known-token-at-all") == 401
        assert post_status(server.url, BOB) == 200
    assert alices["scope"] == "caller=token:alice" and bobs["scope"] == "caller=token:bob"
    assert [p["model"] for p in alices["plans"]] == [NEMOTRON, SONNET]
    assert [p["model"] for p in bobs["plans"]] == [SONNET]
    assert {g["intent_sha"] for g in alices["groups"]}.isdisjoint({g["intent_sha"] for g in bobs["groups"]})
    rows = server.service.history.rows()
    assert sorted(r.caller for r in rows) == ["token:alice", "token:alice", "token:bob"]


def test_cli_serves_http_on_a_free_port_with_tokens_and_stops(tmp_path):
    replay = replay_file(tmp_path, TIER_A_ANSWER)
    env = server_env(tmp_path / "home", HELMDECK_DSPY_TOKENS=f"alice={ALICE}")
    log = tmp_path / "server.log"  # a file, not a pipe: a pipe nobody reads would stall the server
    with log.open("w") as err:
        proc = subprocess.Popen([*serve_command(), "--transport", "http", "--port", "0", "--lm", f"replay:{replay}"],
                                env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"(http://127\.0\.0\.1:\d+/mcp), bearer tokens for 1 caller", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = found.group(1)
        assert post_status(url) == 401

        async def main_() -> dict:
            async with http_client(url, ALICE) as client:
                result = await client.call_tool("helmdeck.plan", {"user_intent": INTENT, "model": SONNET})
                assert not result.is_error
                return result.structured_content

        assert anyio.run(main_)["steps"][0]["tool"] == "helmdeck.memory_store"
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode in (0, -15)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_cli_refuses_a_non_loopback_bind_without_tokens(host, capsys, monkeypatch):
    monkeypatch.delenv("HELMDECK_DSPY_TOKENS", raising=False)
    monkeypatch.delenv("HELMDECK_DSPY_TOKENS_FILE", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--transport", "http", "--host", host, "--port", "0"])
    assert exit_info.value.code == 2  # a usage error (issue 52, item 7)
    err = capsys.readouterr().err
    assert err.startswith(f"error: refusing to serve on {host} without bearer tokens")
