"""Over stdio, two requests with one id, the input ending at once: both are answered before the
server exits (found by measure/fuzz_servers.py: the reader counted requests in flight by id, so
the first answer for the id let the end of input pass while the other was still planning, and the
exit cut it off unanswered)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.fault_server import FaultServer, ok, slow
from tests.reliability.conftest import clean_env, cli_command
from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
PLAN = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}}], "complexity": "single-action"}'
CALL = {"jsonrpc": "2.0", "id": "same", "method": "tools/call", "params": {"name": "helmdeck.plan", "arguments": {
    "user_intent": "rewrite my notes as a blog post", "model": "openai/gpt-4o"}}}
PING = {"jsonrpc": "2.0", "id": "same", "method": "ping"}


def test_a_reused_id_still_in_flight_at_the_end_of_input_is_answered(tmp_path):
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in (INIT, CALL, PING))
    with FaultServer(slow(1.0, ok(PLAN))) as lm:  # the plan is still being made when the ping is answered
        proc = subprocess.run([*cli_command(), "serve", "--lm", "openai/scripted", "--api-base", lm.url,
                               "--no-history", "--no-cache"], input=lines, capture_output=True, timeout=120,
                              env=clean_env(tmp_path / "home", OPENAI_API_KEY="sk-loopback"))
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    same = [a for a in answers if a.get("id") == "same"]
    assert len(same) == 2, same
    assert any("content" in a.get("result", {}) for a in same), same  # the plan's answer among them
