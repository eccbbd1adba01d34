"""Over stdio, a request with an id that the MCP SDK cannot read (a wrong ``jsonrpc``, ``params``
that are not an object, a lone surrogate, a line nested too deep with its id after the first kilobyte, even past the depth Python's JSON reader can parse)
is answered with that id, and the end of input is not held up waiting for answers the SDK will
never send (found by measure/fuzz_servers.py: the SDK drops such lines unanswered, and the reader
had counted them as requests in flight, so each one held the exit for the whole drain)."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from tests.reliability.conftest import clean_env, cli_command
from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
UNREADABLE = {
    "version-1": b'{"jsonrpc": "1.0", "id": "version-1", "method": "ping"}',
    "no-version": b'{"id": "no-version", "method": "ping"}',
    "list-params": b'{"jsonrpc": "2.0", "id": "list-params", "method": "ping", "params": [1, 2]}',
    "text-params": b'{"jsonrpc": "2.0", "id": "text-params", "method": "tools/list", "params": "x"}',
    "surrogate": b'{"jsonrpc": "2.0", "id": "surrogate", "method": "ping", "params": {"x": "\\ud800"}}',
    "number-version": b'{"jsonrpc": 2.0, "id": "number-version", "method": "ping"}',
    "deep-id-last": b'{"jsonrpc": "2.0", "method": "ping", "params": {"x": ' + b"[" * 600 + b"]" * 600
                    + b'}, "id": "deep-id-last"}',
    # past Python's own recursion limit, so its JSON reader cannot find the id either (fuzz seed 52, in CI)
    "deeper-than-python-reads": b'{"jsonrpc": "2.0", "method": "ping", "params": ' + b'{"k":' * 1500 + b"1"
                                + b"}" * 1500 + b', "id": "deeper-than-python-reads"}',
}


def test_requests_the_sdk_cannot_read_are_answered_and_the_exit_is_prompt(tmp_path):
    proc = subprocess.Popen([*cli_command(), "serve", "--lm", "sim:frontier-like", "--no-history", "--timeout", "20",
                             "--retries", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(tmp_path / "home"))
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict] = []
    reader = threading.Thread(target=lambda: answers.extend(json.loads(line) for line in proc.stdout), daemon=True)
    reader.start()
    proc.stdin.write(json.dumps(INIT).encode() + b"\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while not answers and time.monotonic() < deadline:  # started: the exit below is the server's own
        time.sleep(0.01)
    ping = b'{"jsonrpc": "2.0", "id": "ping", "method": "ping"}'
    proc.stdin.write(b"\n".join([*UNREADABLE.values(), ping]) + b"\n")
    proc.stdin.close()
    eof = time.monotonic()
    try:
        proc.wait(60)
    finally:
        proc.kill()
    exit_s = time.monotonic() - eof
    reader.join(10)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in err, err[-2000:]
    by_id = {a.get("id"): a for a in answers}
    assert "result" in by_id["ping"]
    missing = [i for i in UNREADABLE if i not in by_id]
    assert not missing, f"no answer to {missing}"
    for request_id in UNREADABLE:
        assert by_id[request_id]["error"]["code"] in (-32700, -32600), by_id[request_id]
    # waiting for the unanswered lines took the whole drain (25 s with --timeout 20); the exit's own time
    # is measure/fuzz_servers.py's figure, not a test's
    assert exit_s < 10.0, f"the server exited {exit_s:.1f} s after the end of its input"
