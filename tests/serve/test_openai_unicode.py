"""``serve --openai``: a body whose text is not valid Unicode (a lone surrogate, escaped or as its
raw bytes) is the client's error, 400, not the server's (found by measure/fuzz_servers.py: a lone
surrogate in a tool's description failed as a 500 UnicodeEncodeError while the tool list was
hashed, one in a message without tools as a 500 ValueError from the LM client, and one in a
message with tools as a 502 transport error)."""

from __future__ import annotations

import json

import pytest

from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)  # the HTTP server stack (starlette, uvicorn) comes with it

from measure.fuzz_servers import Tally, exchange, http_server, scripted_lm  # noqa: E402

TOOL = {"type": "function", "function": {"name": "blog_write", "description": "Writes a blog post.",
                                         "parameters": {"type": "object", "properties": {}}}}
ASK = [{"role": "user", "content": "write a blog post"}]
BODIES = {
    "raw surrogate in a tool description": json.dumps(
        {"model": "openai/gpt-4o", "messages": ASK, "tools": [{**TOOL, "function": {**TOOL["function"],
                                                                                   "description": "\ud800"}}]},
        ensure_ascii=False).encode("utf-8", "surrogatepass"),
    "escaped surrogate in a message, no tools": json.dumps(
        {"model": "openai/gpt-4o", "messages": [{"role": "user", "content": "hi \ud83d"}]}).encode(),
    "escaped surrogate in a message, with tools": json.dumps(
        {"model": "openai/gpt-4o", "messages": [{"role": "user", "content": "blog \udc00"}], "tools": [TOOL]}).encode(),
}


def test_text_that_is_not_unicode_is_a_400_not_a_server_failure(tmp_path):
    tally = Tally()
    with scripted_lm(deadline_s=300) as lm, http_server(lm, tmp_path, "openai", tally, nice=0) as port:
        replies = {name: exchange(port, "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"},
                                  deadline_s=60) for name, body in BODIES.items()}
        calls = len(lm.requests)
    assert tally.tracebacks == 0, tally.problems
    wrong = {name: (reply.status, reply.body[:200]) for name, reply in replies.items() if reply.status != 400}
    assert not wrong, wrong
    assert all(json.loads(r.body)["error"]["type"] == "invalid_request_error" for r in replies.values())
    assert calls == 0  # refused before any model call
