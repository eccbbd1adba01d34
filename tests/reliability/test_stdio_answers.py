"""Every stdio request gets its answer (issue 40, item 6), as a client piping into the server sees
it: a call followed at once by end of input is answered before the server exits; a line that is
not JSON gets a parse error; a line over the limit is answered with its own id when the id can be
read from its first kilobyte."""

from __future__ import annotations

import json
import subprocess

import pytest

from helmdeck_dspy.domain import MAX_STDIO_LINE_BYTES
from tests.reliability.conftest import clean_env, cli_command

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _serve(tmp_path, *messages: bytes) -> list[dict]:
    proc = subprocess.run([*cli_command(), "serve", "--lm", "sim:frontier-like", "--no-history"],
                          input=b"".join(messages), capture_output=True, timeout=120, env=clean_env(tmp_path / "home"))
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_a_call_followed_by_end_of_input_is_answered(tmp_path):
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "helmdeck.plan", "arguments": {"user_intent": "rewrite my notes as a blog post",
                                               "model": "anthropic/claude-sonnet-4-6"}}}
    answers = {a.get("id"): a for a in _serve(tmp_path, _line(INIT), _line(READY), _line(call))}
    assert 7 in answers and "result" in answers[7]


def test_garbage_gets_a_parse_error_and_an_oversize_line_its_own_id(tmp_path):
    oversize = b'{"jsonrpc": "2.0", "id": "big-1", "method": "ping", "params": {"x": "' + b"a" * (5 << 20) + b'"}}\n'
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    answers = _serve(tmp_path, _line(INIT), _line(READY), b"this is not json\n", oversize, _line(ping))
    by_id = {a.get("id"): a for a in answers}
    assert any(a.get("id") is None and a.get("error", {}).get("code") == -32700 for a in answers)
    assert by_id["big-1"]["error"]["code"] == -32600 and str(MAX_STDIO_LINE_BYTES) in by_id["big-1"]["error"]["message"]
    assert "result" in by_id[3]  # and the server goes on
