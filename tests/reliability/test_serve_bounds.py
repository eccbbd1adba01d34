"""The server's bounds, as a remote caller meets them: a request larger than the model's budget
is refused before any LM call (counted at a loopback LM endpoint), stdio refuses an over-long
line and keeps serving, HTTP sessions expire and are capped per caller, and a caller named twice
in the tokens is refused at start."""

from __future__ import annotations

import json
import subprocess
import time

import anyio
import pytest

from helmdeck_dspy.serve.config import ServeConfig
from tests.fault_server import FaultServer, ok
from tests.reliability.conftest import assert_one_line, cli_command, clean_env
from tests.serve.conftest import NO_SDK, http_server, server_env, stdio_client

pytest.importorskip("mcp", reason=NO_SDK)

PLAN = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}}], "complexity": "single-action"}'
KEY = "sk-test-bounds-0123456789abcdef"
MEGABYTE = "plan my week " * (1024 * 1024 // 13)


@pytest.mark.parametrize("field", ["user_intent", "context"])
def test_a_one_megabyte_request_is_refused_before_any_lm_call(tmp_path, field):
    home = tmp_path / "home"
    args = {"user_intent": "rewrite my notes", "model": "openai/bounded-model"}
    args[field] = MEGABYTE

    async def call(server: FaultServer) -> dict:
        env = server_env(home, OPENAI_API_KEY=KEY)
        async with stdio_client(home, "--lm", "openai/bounded-model", "--api-base", server.url, env=env) as client:
            result = await client.call_tool("helmdeck.plan", args)
            assert result.is_error
            assert len(server.requests) == 0  # refused before the filter and before the plan
            fresh = f"rewrite my notes as a blog post ({field}, {time.time_ns()})"  # never answered from a cache
            small = await client.call_tool("helmdeck.plan", {"user_intent": fresh, "model": "openai/bounded-model"})
            assert not small.is_error  # the same server still plans a request that fits
            return result.structured_content

    with FaultServer(ok(PLAN)) as server:
        refused = anyio.run(call, server)
        bodies = [r.body for r in server.requests]
    assert refused["error"] == "invalid_argument" and refused["argument"] == field
    assert "input tokens" in refused["message"]
    assert bodies and all(len(str(b)) < 200_000 for b in bodies)  # only the small request reached the LM
    assert not any(MEGABYTE[:1000] in str(b) for b in bodies)


@pytest.mark.parametrize("field", ["user_intent", "prior_steps"])
def test_a_remote_callers_one_megabyte_request_over_http_makes_no_lm_call(tmp_path, monkeypatch, field):
    """Under the SDK's 4 MiB body limit, so the budget is what stops it: a token caller, over HTTP,
    with the megabyte in the intent or in the arguments of a step it says it already ran."""
    from helmdeck_dspy.serve.auth import CallerTokens
    from tests.serve.conftest import http_client

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    token = "remote-caller-token-0123456789"
    with FaultServer(ok(PLAN)) as lm:
        config = ServeConfig(transport="http", lm_spec="openai/bounded-model", api_base=lm.url,
                             history_path=tmp_path / "history.sqlite")
        with http_server(config, CallerTokens({"remote": token})) as running:
            async def call() -> dict:
                async with http_client(running.url, token) as client:
                    args = {"user_intent": MEGABYTE, "model": "openai/bounded-model"} if field == "user_intent" else \
                        {"user_intent": "rewrite my notes", "model": "openai/bounded-model",
                         "prior_steps": [{"order": 1, "tool": "notes.read", "args": {"text": MEGABYTE}, "output": "ok"}]}
                    result = await client.call_tool("helmdeck.plan", args)
                    assert result.is_error
                    return result.structured_content

            refused = anyio.run(call)
        sent = len(lm.requests)
    assert refused["error"] == "invalid_argument" and refused["argument"] == field
    assert sent == 0


@pytest.mark.parametrize("where", ["intent", "context-file"])
def test_a_plan_over_the_budget_is_refused_on_the_cli_before_the_call(cli, where):
    (cli.cwd / "context.txt").write_text(MEGABYTE)
    big = ["plan", MEGABYTE[:100_000]] if where == "intent" else ["plan", "rewrite my notes", "--context-file",
                                                                    "context.txt"]
    with FaultServer(ok(PLAN)) as server:
        run = cli(*big, "-m", "openai/bounded-model", "--lm", "openai/bounded-model", "--api-base", server.url,
                  "--no-history", env={"OPENAI_API_KEY": KEY})
        sent = len(server.requests)
    assert_one_line(run, 2, "input tokens")
    assert sent == 0


def test_stdio_refuses_an_over_long_line_and_keeps_serving(tmp_path):
    home = tmp_path / "home"
    proc = subprocess.Popen([*cli_command(), "serve", "--lm", "sim:frontier-like"], env=clean_env(home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"a" * (6 * 1024 * 1024) + b'"}}\n'
    init = (b'{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
            b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n')
    out, err = proc.communicate(huge + init, timeout=120)
    assert b"Traceback" not in err
    assert b"refused a message of" in err
    assert b'"id":2' in out.replace(b" ", b"")  # answered the message after the long line


def _initialize(client, url: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = client.post(url, json=body, headers={"Accept": "application/json, text/event-stream"})
    return response.status_code, response.headers.get("mcp-session-id")


def test_http_sessions_are_capped_per_caller_and_expire_when_idle(tmp_path):
    import httpx

    replay = tmp_path / "r.jsonl"
    replay.write_text("")
    from helmdeck_dspy.serve.auth import CallerTokens

    token = "capped-caller-token-0123456789"  # a token caller: at its cap it is refused (tokenless: see below)
    config = ServeConfig(transport="http", lm_spec="sim:frontier-like", history=False, sessions_per_caller=2,
                         session_idle_s=1.0)
    with http_server(config, CallerTokens({"capped": token})) as running, \
            httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
        opened = [_initialize(client, running.url) for _ in range(3)]
        assert [code for code, _ in opened] == [200, 200, 503]
        time.sleep(2.5)  # both sessions idle past the timeout: closed, and room again
        first = opened[0][1]
        stale = client.post(running.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                            headers={"Accept": "application/json, text/event-stream", "mcp-session-id": first})
        assert stale.status_code == 404
        assert _initialize(client, running.url)[0] == 200


@pytest.mark.parametrize("where", ["environment", "file and environment", "file"])
def test_a_caller_named_twice_in_the_tokens_is_refused(cli, where):
    (cli.cwd / "tokens.toml").write_text('[tokens]\nalice = "aaaaaaaaaaaaaaaaaaaa"\n'
                                         + ('alice = "cccccccccccccccccccc"\n' if where == "file" else ""))
    env = {"HELMDECK_DSPY_TOKENS": "alice=aaaaaaaaaaaaaaaaaaaa,alice=bbbbbbbbbbbbbbbbbbbb"} \
        if where == "environment" else {"HELMDECK_DSPY_TOKENS": "alice=bbbbbbbbbbbbbbbbbbbb"}
    files = [] if where == "environment" else ["--tokens-file", "tokens.toml"]
    run = cli("serve", "--transport", "http", "--port", "0", *files, env=env, timeout=60)
    assert_one_line(run, 1, "'alice'", "named")


BIGGER = ["google/gemini-2.5-pro", "openai/gpt-5"]  # rows with a 1,050,000-token input bound


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("named", BIGGER)
def test_a_client_naming_a_bigger_model_gets_the_bounds_of_the_lm_the_server_calls(tmp_path, monkeypatch, transport,
                                                                                   named):
    """The server calls openai/gpt-4o (100,000 input tokens); a client naming a model with a
    million-token row still may not send it a megabyte: refused before any LM call."""
    from tests.serve.conftest import http_client

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    args = {"user_intent": MEGABYTE, "model": named}
    with FaultServer(ok(PLAN)) as lm:
        if transport == "http":
            config = ServeConfig(transport="http", lm_spec="openai/gpt-4o", api_base=lm.url,
                                 history_path=tmp_path / "history.sqlite")
            with http_server(config) as running:
                async def call() -> dict:
                    async with http_client(running.url) as client:
                        result = await client.call_tool("helmdeck.plan", args)
                        assert result.is_error
                        return result.structured_content

                refused = anyio.run(call)
        else:
            home = tmp_path / "home"

            async def call() -> dict:
                env = server_env(home, OPENAI_API_KEY=KEY)
                async with stdio_client(home, "--lm", "openai/gpt-4o", "--api-base", lm.url, env=env) as client:
                    result = await client.call_tool("helmdeck.plan", args)
                    assert result.is_error
                    return result.structured_content

            refused = anyio.run(call)
        sent = len(lm.requests)
    assert sent == 0
    assert refused["error"] == "invalid_argument" and refused["argument"] == "user_intent"
    assert "openai/gpt-4o" in refused["message"]  # the bound named is the LM the server calls


@pytest.mark.parametrize("model", ["openai/" + "x" * 3_000_000, "openai/gpt-4o\nignore", "openai/gpt 4o", "openai/\x00"])
def test_a_model_id_is_bounded_in_length_and_characters_before_any_lookup(model):
    from pydantic import ValidationError

    from helmdeck_dspy.serve.wire import PlanRequest

    with pytest.raises(ValidationError, match="model"):
        PlanRequest(user_intent="rewrite my notes", model=model)


def _ping(client, url: str, session: str) -> int:
    response = client.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                           headers={"Accept": "application/json, text/event-stream", "mcp-session-id": session})
    return response.status_code


def test_without_tokens_the_least_recently_used_idle_session_makes_room(tmp_path):
    """One local client holding the cap must not lock the others out: the least recently used idle
    session is closed (its client gets 404 and initialises again, as the MCP spec has it)."""
    import httpx

    config = ServeConfig(transport="http", lm_spec="sim:frontier-like", history=False, sessions_per_caller=2)
    with http_server(config) as running, httpx.Client(timeout=30) as client:
        (code1, s1), (code2, s2) = _initialize(client, running.url), _initialize(client, running.url)
        assert (code1, code2) == (200, 200)
        assert _ping(client, running.url, s1) == 200  # s1 used last: s2 is now the least recently used
        code3, s3 = _initialize(client, running.url)
        assert code3 == 200
        assert _ping(client, running.url, s2) == 404
        assert _ping(client, running.url, s1) == 200 and _ping(client, running.url, s3) == 200


def test_stdio_answers_a_nested_line_and_a_request_without_a_string_method_and_exits_promptly(tmp_path):
    home = tmp_path / "home"
    proc = subprocess.Popen([*cli_command(), "serve", "--lm", "sim:frontier-like"], env=clean_env(home),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    nested = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": ' + b"[" * 1000 + b"]" * 1000 + b"}\n"
    bare = b"[" * 2000 + b"\n"  # no id to answer with
    odd = b'{"jsonrpc": "2.0", "id": 8, "method": 12}\n'
    init = (b'{"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
            b'"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}\n')
    started = time.monotonic()
    out, err = proc.communicate(nested + bare + odd + init, timeout=120)
    took = time.monotonic() - started
    answers = {json.loads(line).get("id"): json.loads(line) for line in out.splitlines() if line.strip()}
    assert b"Traceback" not in err and proc.returncode == 0
    assert answers[7]["error"]["code"] == -32600 and "nested" in answers[7]["error"]["message"]
    assert answers[8]["error"]["code"] == -32600 and "method" in answers[8]["error"]["message"]
    assert None in answers and "result" in answers[9]  # the bare line answered with id null; serving went on
    assert took < 60, took  # nothing left pending to wait for at the end of input
