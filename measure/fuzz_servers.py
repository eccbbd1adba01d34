"""Fuzzing the servers as a client meets them (issue 52): ``helmdeck-dspy serve`` over stdio (MCP
JSON-RPC lines), over streamable HTTP (``--transport http``, POSTs to /mcp in one session) and as
an OpenAI endpoint (``--openai``: POST /v1/chat/completions, GET /v1/models), each the real CLI in
a subprocess on 127.0.0.1.

Generated inputs, by kind: ``valid`` requests (plan calls included: they reach planning, and a
loopback scripted model, ``tests.fault_server.FaultServer``, answers them through
``--lm openai/scripted --api-base``), ``wrong_types`` (one field anywhere replaced by a value of
another type, or dropped), ``shapes`` (wrong JSON-RPC shapes, scalars, responses, odd ids),
``notifications``, ``duplicate_ids`` (several requests with one id; concurrent over HTTP),
``batches``, ``encodings`` (invalid UTF-8, UTF-16/32 with BOMs, a UTF-8 BOM, raw and escaped NULs,
lone surrogates, bad escapes, overlong forms), ``numbers`` (huge, tiny, NaN, 5,000 digits),
``nesting`` (depth 10 to 20,000, the id before or after it), ``sizes`` (64 KB to 6 MB),
``truncated`` (a valid input cut anywhere), ``mutated`` (bytes flipped, deleted, repeated) and, over
HTTP, ``headers`` (no session, a wrong session, wrong Content-Type or Accept, chunked bodies,
other methods and paths).

The contracts checked: no traceback in a server's stderr; over stdio, every line that is a
request with an id (valid JSON, UTF-8 with undecodable bytes replaced as the server documents,
an object with ``method`` and an ``id`` that is a string or an integer) is answered with that
id, a result or an error (a ``notifications/cancelled`` of an earlier id excuses it, as the
protocol says); over HTTP, every exchange ends with a status and a JSON body (202 without a body
for what is not a request), never a dropped connection, a hang or a 500. After the stdio input
ends the process must be gone: the seconds from closing its stdin to its exit are measured per
stdio run (the input is split into runs of ``--lines-per-run``), and split into the wait for the
last answer (requests still in flight) and the shutdown after it.

    nice -n 19 .venv/bin/python measure/fuzz_servers.py [--n 10000] [--seed 0] [--targets stdio,http,openai]

``--n`` is the total number of lines and bodies, split over the targets (stdio 40%, http 30%,
openai 30%). Exit status: 0 when every contract held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helmdeck_dspy.io.offline import OFFLINE_ENV, apply_offline_defaults  # noqa: E402

KINDS = ("valid", "wrong_types", "shapes", "notifications", "duplicate_ids", "batches", "encodings", "numbers",
         "nesting", "sizes", "truncated", "mutated", "headers")
WEIGHTS = {"valid": 14, "wrong_types": 16, "shapes": 10, "notifications": 6, "duplicate_ids": 5, "batches": 5,
           "encodings": 12, "numbers": 6, "nesting": 6, "sizes": 1.2, "truncated": 8, "mutated": 10, "headers": 4}
NOT_FOR = {"stdio": {"headers"}, "openai": {"notifications"}}
SHARE = {"stdio": 0.4, "http": 0.3, "openai": 0.3}
PLAN = json.dumps({"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {"audience": "developers"},
                              "rationale": "rewrite the notes"}], "complexity": "single-action"})
MODELS = ["openai/gpt-4o", "anthropic/claude-sonnet-4-6", "local/qwen2.5-coder-1.5b-instruct",
          "openrouter/nvidia/nemotron-3-super-120b-a12b:free", "groq/llama-3.1-8b-instant"]
INTENTS = ["rewrite my notes as a blog post", "remember this launch, write a blog about it and make an illustration",
           "what time is it in Tokyo?", "show the git log of this repository", "résumé ✓ 東京 🙂 «quotes»"]
URIS = ["helmdeck://context-budgets", "helmdeck://models", "helmdeck://routing-guide", "helmdeck://my-plans"]
ODD = [None, True, False, 0, -1, 1.5, -0.0, 2**63, 2**64 + 1, 10**30, 1e308, float("nan"), float("inf"), "", "x",
       "\u0000", "\ud800", "a" * 5000, [], [1, "a", None], {}, {"a": {"b": []}}, "\\", '"', "\n"]
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MCP_ACCEPT = "application/json, text/event-stream"


@dataclass
class Case:
    """One generated input: one or more bodies (stdio: lines, written in turn; HTTP: requests,
    sent concurrently), with how an HTTP body is sent."""

    kind: str
    bodies: list[bytes]
    method: str = "POST"
    path: str | None = None  # None: the target's own path
    headers: dict[str, str | None] = field(default_factory=dict)  # None removes a default header
    chunked: bool = False


# ------------------------------------------------------------------------------ generators


def _dumps(obj: Any, rng: random.Random) -> bytes:
    """JSON text, ASCII-escaped or raw UTF-8 (lone surrogates then go out as their 3-byte forms)."""
    if rng.random() < 0.5:
        return json.dumps(obj).encode()
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")


class Ids:
    """Fresh request ids: strings and integers, never reused unless a generator means to."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def __call__(self) -> str | int:
        self.n += 1
        return self.n * 7 + 1_000_000 if self.rng.random() < 0.3 else f"q-{self.n}"


def _small_tools(rng: random.Random) -> list[dict[str, Any]]:
    names = rng.sample(["blog_write", "image_make", "notes_read", "git_log", "get_time", "search"], rng.randint(1, 4))
    return [{"name": n, "description": f"Does {n.replace('_', ' ')}.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}} for n in names]


def mcp_valid(rng: random.Random, rid: Any) -> dict[str, Any]:
    """A well-formed MCP request (a third of them plan, and so reach the model)."""
    roll = rng.random()
    if roll < 0.34:
        args: dict[str, Any] = {"user_intent": rng.choice(INTENTS), "model": rng.choice(MODELS)}
        if rng.random() < 0.3:
            args["tools"] = _small_tools(rng)
        if rng.random() < 0.2:
            args["context"] = rng.choice(["a short paste", {"notes": ["a", "b"], "n": 3}])
        if rng.random() < 0.15:
            args["prior_steps"] = [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}, "output": "done"}]
        if rng.random() < 0.15:
            args["max_tokens"] = rng.choice([1, 64, 2048])
        params: dict[str, Any] = {"name": "helmdeck.plan", "arguments": args}
        method = "tools/call"
    elif roll < 0.5:
        method, params = "tools/call", {"name": "helmdeck.route", "arguments": {
            "user_intent": rng.choice(INTENTS), "model": rng.choice(MODELS)}}
    else:
        method, params = rng.choice([("ping", None), ("tools/list", {}), ("resources/list", {}), ("prompts/list", {}),
                                     ("resources/read", {"uri": rng.choice(URIS)}),
                                     ("resources/templates/list", {}), ("initialize", INIT["params"])])
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def chat_valid(rng: random.Random, rid: Any = None) -> dict[str, Any]:
    """A well-formed chat completions body (with tools it is planned, without them answered in text)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": rng.choice(INTENTS)}]
    if rng.random() < 0.2:
        messages.insert(0, {"role": "system", "content": "You are a helpful agent."})
    body: dict[str, Any] = {"model": rng.choice(MODELS), "messages": messages}
    if rng.random() < 0.7:
        body["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                           "parameters": t["inputSchema"]}} for t in _small_tools(rng)]
        if rng.random() < 0.2:
            messages += [{"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": body["tools"][0]["function"]["name"],
                                                                  "arguments": "{\"text\": \"x\"}"}}]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
        if rng.random() < 0.3:
            body["tool_choice"] = rng.choice(["auto", "required", "none", {
                "type": "function", "function": {"name": body["tools"][0]["function"]["name"]}}])
        if rng.random() < 0.1:
            body["parallel_tool_calls"] = False
    for key, values in (("stream", [True, False]), ("max_tokens", [1, 128]), ("temperature", [0, 0.7]),
                        ("seed", [1, 7])):
        if rng.random() < 0.1:
            body[key] = rng.choice(values)
    return body


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into ``obj`` (the root excluded): keys of objects, indexes of lists."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


def _replaced(obj: Any, path: tuple, value: Any, drop: bool = False) -> Any:
    if not path:
        return value
    copy = dict(obj) if isinstance(obj, dict) else list(obj)
    if len(path) == 1 and drop:
        del copy[path[0]]
    else:
        copy[path[0]] = _replaced(copy[path[0]], path[1:], value, drop)
    return copy


def wrong_type(rng: random.Random, obj: dict[str, Any]) -> Any:
    """``obj`` with one field (anywhere) given a value of another type, or dropped."""
    path = rng.choice(list(_paths(obj)) or [()])
    if rng.random() < 0.12:
        return _replaced(obj, path, None, drop=True) if path else {}
    return _replaced(obj, path, rng.choice(ODD))


def deep(depth: int, opener: str, leaf: str = "1") -> str:
    close = {"[": "]", "{": "}"}[opener]
    if opener == "[":
        return "[" * depth + leaf + "]" * depth
    return '{"k":' * depth + leaf + close * depth


class Generator:
    """The inputs of one target, reproducible from (seed, target)."""

    def __init__(self, target: str, seed: int) -> None:
        self.target = target
        self.rng = random.Random(f"{seed}:{target}")
        self.ids = Ids(self.rng)
        self.kinds = [k for k in KINDS if k not in NOT_FOR.get(target, set())]
        self.weights = [WEIGHTS[k] for k in self.kinds]
        self.recent: list[bytes] = []

    @property
    def chat(self) -> bool:
        return self.target == "openai"

    def valid_obj(self) -> dict[str, Any]:
        return chat_valid(self.rng) if self.chat else mcp_valid(self.rng, self.ids())

    def valid_bytes(self) -> bytes:
        return _dumps(self.valid_obj(), self.rng)

    def cases(self, n: int) -> Iterator[Case]:
        """Cases until ``n`` bodies have been produced."""
        made = 0
        while made < n:
            kind = self.rng.choices(self.kinds, self.weights)[0]
            case = getattr(self, "_" + kind)()
            case.bodies = case.bodies[: n - made]
            made += len(case.bodies)
            for body in case.bodies:
                if len(body) < 20_000:
                    self.recent = [*self.recent[-199:], body]
            yield case

    # -------------------------------------------------------------- one method per kind

    def _valid(self) -> Case:
        return Case("valid", [self.valid_bytes()])

    def _wrong_types(self) -> Case:
        return Case("wrong_types", [_dumps(wrong_type(self.rng, self.valid_obj()), self.rng)])

    def _shapes(self) -> Case:
        rng = self.rng
        base = self.valid_obj()
        if self.chat:
            options: list[Any] = [[], [base], 1, "x", None, True, {}, {"messages": base["messages"]},
                                  {**base, "messages": []}, {**base, "messages": [{"role": "robot", "content": "x"}]},
                                  {**base, "messages": {"role": "user"}}, {**base, "tools": []},
                                  {**base, "messages": [{"role": "tool", "content": "x"}]},
                                  {**base, "tool_choice": {"type": "function", "function": {"name": "absent"}}},
                                  {**base, "model": "x" * 300}, {**base, "extra": {"n": 1}}]
            return Case("shapes", [_dumps(rng.choice(options), rng)])
        rid = base["id"]
        options = [
            {k: v for k, v in base.items() if k != "jsonrpc"}, {**base, "jsonrpc": "1.0"}, {**base, "jsonrpc": 2.0},
            {**base, "jsonrpc": None}, {**base, "jsonrpc": "2.0 "}, {k: v for k, v in base.items() if k != "method"},
            {**base, "method": rng.choice([1, None, [], {}, "", "no/such", "x" * 5000, "ping\u0000"])},
            {**base, "id": rng.choice([None, 1.5, True, [], {}, -1, 0, 2**63, 2**64, 10**40, "", "i" * 5000])},
            {**base, "params": rng.choice([[], [1, 2], "x", 1, None, True])}, {**base, "result": {}},
            {"jsonrpc": "2.0", "id": rid, "result": {}}, {"jsonrpc": "2.0", "id": rid, "error": {"code": 1}},
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "client error"}},
            {"jsonrpc": "2.0", "id": rid}, {"jsonrpc": "2.0"}, {}, 1, "x", None, True, [],
            {**base, "extra": {"n": 1}}, {"ID": rid, "Method": "ping", "JSONRPC": "2.0"},
        ]
        choice = rng.choice(options + ["dup-keys"])
        if choice == "dup-keys":  # the same key twice: the last one counts
            other = self.ids()
            return Case("shapes", [b'{"jsonrpc":"2.0","id":%s,"method":"ping","id":%s}' % (
                json.dumps(rid).encode(), json.dumps(other).encode())])
        return Case("shapes", [_dumps(choice, rng)])

    def _notifications(self) -> Case:
        rng = self.rng
        method, params = rng.choice([
            ("notifications/initialized", None), ("notifications/cancelled", {"requestId": f"never-sent-{self.ids()}"}),
            ("notifications/cancelled", {"requestId": None}), ("notifications/cancelled", "x"),
            ("notifications/progress", {"progressToken": "t", "progress": 0.5}),
            ("notifications/progress", {"progressToken": [], "progress": "x"}),
            ("notifications/roots/list_changed", {}), ("notifications/no-such", {"x": 1}), ("ping", None),
            ("tools/call", {"name": "helmdeck.plan", "arguments": {"user_intent": "x", "model": "openai/gpt-4o"}})])
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return Case("notifications", [_dumps(message, rng)])

    def _duplicate_ids(self) -> Case:
        copies = self.rng.randint(2, 4)
        if self.chat:
            body = self.valid_bytes()
            return Case("duplicate_ids", [body] * copies)
        rid = self.ids()
        return Case("duplicate_ids", [_dumps(mcp_valid(self.rng, rid), self.rng) for _ in range(copies)])

    def _batches(self) -> Case:
        rng = self.rng
        items: list[Any] = [self.valid_obj() for _ in range(rng.randint(1, 5))]
        if not self.chat and rng.random() < 0.5:
            items.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
        batch = rng.choice([items, [], [[]], [1, "x"], [items], items * 10])
        return Case("batches", [_dumps(batch, rng)])

    def _encodings(self) -> Case:
        rng = self.rng
        obj = self.valid_obj()
        text = json.dumps(obj, ensure_ascii=False)
        op = rng.choice([0, 1, 2, 3, 4, 5, 5, 5, 6, 7, 8, 9, 10])  # lone surrogates three times as often
        if op == 0:  # invalid UTF-8 bytes somewhere
            raw = text.encode()
            i = rng.randint(0, len(raw))
            body = raw[:i] + rng.choice([b"\xff", b"\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80\x80"]) + raw[i:]
        elif op == 1:  # UTF-16 or UTF-32, with or without a BOM
            body = text.encode(rng.choice(["utf-16", "utf-16-le", "utf-16-be", "utf-32"]))
        elif op == 2:
            body = b"\xef\xbb\xbf" + text.encode()
        elif op == 3:  # a raw NUL byte
            raw = text.encode()
            i = rng.randint(0, len(raw))
            body = raw[:i] + b"\x00" + raw[i:]
        elif op == 4:  # escaped NULs in every string
            body = json.dumps(_map_strings(obj, lambda s: s + "\u0000" + s)).encode()
        elif op == 5:  # a lone surrogate escape at the end of a string or two (the id's included)
            lone = rng.choice(["\\ud800", "\\udfff", "\\udbff\\u0041", "\\ud83d"])
            raw = json.dumps(obj)
            strings = list(re.finditer(r'"((?:[^"\\]|\\.)*)"', raw))
            for m in sorted(rng.sample(strings, min(len(strings), rng.choice([1, 1, 2, 5]))), key=lambda m: -m.end()):
                raw = raw[: m.end() - 1] + lone + raw[m.end() - 1 :]  # at the end of one string (or key), or a few
            body = raw.encode()
            if not self.chat and rng.random() < 0.5:
                body = json.dumps({**obj, "id": "q" + chr(0xD800)}).encode()
        elif op == 6:  # a backslash with nothing valid after it
            raw = json.dumps(obj)
            quotes = [m.start() for m in re.finditer('"', raw)]
            i = rng.choice(quotes) if quotes else 0
            body = (raw[:i] + rng.choice(["\\", "\\x", "\\u12", "\\u", "\\U0001F600", "\\'"]) + raw[i:]).encode()
        elif op == 7:  # overlong forms of ASCII characters
            body = text.encode().replace(b'"', b"\xc0\xa2", 1)
        elif op == 8:  # CR line ends, CRLF
            body = text.encode() + rng.choice([b"\r", b"\r\n" + self.valid_bytes()])
        elif op == 9:  # every non-ASCII character as UTF-8 that Python writes, plus emoji and RTL marks
            body = json.dumps(_map_strings(obj, lambda s: s + "\u202e🙂\U0010ffff\ufffe")).encode()
        else:  # Latin-1 instead of UTF-8
            body = json.dumps(_map_strings(obj, lambda s: s + "é")).encode("latin-1", "replace")
        return Case("encodings", [body])

    def _numbers(self) -> Case:
        rng = self.rng
        obj = self.valid_obj()
        number = rng.choice(["1e999", "-1e999", "1e-999", "9" * 5000, "9" * 4300, "-" + "9" * 4301, "18446744073709551616",
                             "-9223372036854775809", "0.1e1", "1E400", "-0", "01", "NaN", "Infinity", "-Infinity",
                             "1.0e+", ".5", "0x10", "1_000", "+1"])
        paths = [p for p in _paths(obj) if not isinstance(_at(obj, p), (dict, list))]
        path = rng.choice(paths or [("id",)])
        marker = "__NUMBER__"
        body = json.dumps(_replaced(obj, path, marker)).replace(json.dumps(marker), number)
        return Case("numbers", [body.encode()])

    def _nesting(self) -> Case:
        rng = self.rng
        obj = self.valid_obj()
        depth = rng.choice([10, 64, 65, 127, 128, 129, 200, 1000, 5000, 20000])
        value = deep(depth, rng.choice("[{"), rng.choice(["1", '"x"', "null", "[]"]))
        marker = "__DEEP__"
        key = "messages" if self.chat and rng.random() < 0.3 else "params" if not self.chat else "metadata"
        if not self.chat and rng.random() < 0.5 and "params" in obj and isinstance(obj["params"], dict) \
                and isinstance(obj["params"].get("arguments"), dict):
            placed = {**obj, "params": {**obj["params"], "arguments": {**obj["params"]["arguments"],
                                                                       "context": marker}}}
        else:
            placed = {**obj, key: marker}
        if not self.chat and rng.random() < 0.5:  # the id after the deep value
            placed = {k: v for k, v in placed.items() if k != "id"} | {"id": obj["id"]}
        return Case("nesting", [json.dumps(placed).replace(json.dumps(marker), value).encode()])

    def _sizes(self) -> Case:
        rng = self.rng
        size = rng.choice([64 << 10, 1 << 20, 3_900_000, (4 << 20) + 1, 6 << 20])
        obj = self.valid_obj()
        filler = rng.choice(["a", "plan my week ", "é", "\\u0000", "[", "\U0001f600"]) * (size // 4)
        filler = filler[:size]
        if self.chat:
            obj = {**obj, rng.choice(["messages", "extra"]): [{"role": "user", "content": filler}]}
        elif isinstance(obj.get("params"), dict) and isinstance(obj["params"].get("arguments"), dict) and rng.random() < 0.6:
            obj = {**obj, "params": {**obj["params"], "arguments": {
                **obj["params"]["arguments"], rng.choice(["user_intent", "context", "extra"]): filler}}}
        else:
            obj = {**obj, "params": {**(obj.get("params") or {}), "_meta": {"filler": filler}}}
        return Case("sizes", [json.dumps(obj, ensure_ascii=False).encode()])

    def _truncated(self) -> Case:
        body = self.valid_bytes()
        return Case("truncated", [body[: self.rng.randint(0, max(0, len(body) - 1))]])

    def _mutated(self) -> Case:
        rng = self.rng
        body = bytearray(rng.choice(self.recent) if self.recent and rng.random() < 0.6 else self.valid_bytes())
        for _ in range(rng.randint(1, 6)):
            i = rng.randint(0, len(body))
            op = rng.randrange(5)
            if op == 0 and body:
                body[min(i, len(body) - 1)] ^= 1 << rng.randrange(8)
            elif op == 1:
                del body[i : i + rng.randint(1, 16)]
            elif op == 2:
                body[i:i] = rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b"null", b"\x00", b"\xff",
                                        b'"id":', b'"method":"ping"', b"\n"])
            elif op == 3:
                body[i:i] = body[i : i + rng.randint(1, 64)] * rng.randint(2, 5)
            else:
                body[i:i] = rng.choice(self.recent or [b""])[: rng.randint(0, 200)]
        return Case("mutated", [bytes(body)])

    def _headers(self) -> Case:
        rng = self.rng
        body = self.valid_bytes()
        variants: list[dict[str, Any]] = [
            {"headers": {"Content-Type": None}}, {"headers": {"Content-Type": "text/plain"}},
            {"headers": {"Content-Type": "application/json; charset=utf-16"}}, {"headers": {"Accept": None}},
            {"headers": {"Accept": "text/html"}}, {"chunked": True}, {"method": "GET"}, {"method": "PUT"},
            {"method": "DELETE", "path": "/nowhere"}, {"path": "/nowhere"}, {"path": "/mcp/../mcp?x=%00"},
        ]
        if self.chat:
            variants += [{"method": "GET", "path": "/v1/models"}, {"method": "POST", "path": "/v1/models"},
                         {"method": "GET", "path": "/v1/chat/completions"}, {"path": "/v1/embeddings"},
                         {"headers": {"Authorization": "Bearer x"}}]
        else:
            variants += [{"headers": {"mcp-session-id": None}}, {"headers": {"mcp-session-id": "no-such-session"}},
                         {"headers": {"mcp-session-id": "\u00e9" * 3}}, {"headers": {"mcp-protocol-version": "1999-01-01"}}]
        return Case("headers", [body], **rng.choice(variants))


def _at(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _map_strings(obj: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _map_strings(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_strings(v, fn) for v in obj]
    return obj


# ------------------------------------------------------------------------------ the contract


def request_id(line: bytes) -> str | None:
    """The id a line must be answered with, as JSON text (None: the line is no request with an id).

    A request with an id: valid JSON once undecodable bytes are replaced (the server documents that
    reading), an object with ``method`` and an ``id`` that is a string or an integer, writable
    back as UTF-8 (no lone surrogate). Python's JSON reader decides; integers over its 4,300 digits
    make a line unreadable."""
    try:
        message = json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    rid = message["id"]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None
    try:
        return json.dumps(rid, ensure_ascii=False).encode("utf-8") and json.dumps(rid)
    except UnicodeEncodeError:
        return None


def cancelled_id(line: bytes) -> str | None:
    """The request id a ``notifications/cancelled`` line names (JSON text), if any."""
    try:
        message = json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and message.get("method") == "notifications/cancelled" \
            and isinstance(message.get("params"), dict) and "requestId" in message["params"]:
        try:
            return json.dumps(message["params"]["requestId"])
        except (TypeError, ValueError):
            return None
    return None


@dataclass
class Tally:
    """Counts of one target, per kind."""

    sent: Counter = field(default_factory=Counter)  # lines or bodies
    with_id: Counter = field(default_factory=Counter)  # of which requests with an id (stdio)
    answered: Counter = field(default_factory=Counter)
    unanswered: Counter = field(default_factory=Counter)
    bad: Counter = field(default_factory=Counter)  # HTTP: dropped, hung, 500, a body that is not JSON
    statuses: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    tracebacks: int = 0
    lm_calls: int = 0
    exits: list[float] = field(default_factory=list)  # stdio: seconds from the end of input to the exit
    last_answer: list[float] = field(default_factory=list)  # stdio: seconds from the end of input to the last answer
    shutdown: list[float] = field(default_factory=list)  # stdio: seconds from the last answer to the exit
    notes: Counter = field(default_factory=Counter)

    def note_problem(self, text: str) -> None:
        if len(self.problems) < 12:
            self.problems.append(text[:400])


# ------------------------------------------------------------------------------ the servers


def server_env(work: Path) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    return {**keep, **OFFLINE_ENV, "HOME": str(work), "HELMDECK_DSPY_HOME": str(work / "home"),
            "HELMDECK_DSPY_CACHE": str(work / "cache"), "DSPY_CACHEDIR": str(work / "cache"),
            "OPENAI_API_KEY": "sk-fuzz-loopback", "NO_PROXY": "127.0.0.1,localhost", "NO_COLOR": "1"}


def serve_command(lm_url: str, *extra: str) -> list[str]:
    script = Path(sys.executable).with_name("helmdeck-dspy")
    cli = [str(script)] if script.exists() else [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()"]
    return [*cli, "serve", "--lm", "openai/scripted", "--api-base", lm_url, "--no-history", "--no-cache",
            "--timeout", "30", "--retries", "0", *extra]


def _niced(level: int) -> Callable[[], None] | None:
    return (lambda: os.nice(level)) if level else None


def traceback_count(text: str) -> int:
    return text.count("Traceback (most recent call last)")


@contextmanager
def scripted_lm(deadline_s: float) -> Iterator[Any]:
    """The loopback model every planning request is answered by (``tests.fault_server``)."""
    from tests.fault_server import FaultServer, ok

    with FaultServer(ok(PLAN), deadline_s=deadline_s, max_requests=10**9) as lm:
        yield lm


def lm_calls(lm: Any) -> int:
    """The model requests served since the last call (the record is emptied: it holds every body)."""
    with lm._lock:
        count = len(lm.requests)
        lm.requests.clear()
    return count


def run_stdio(cases: list[Case], lm: Any, work: Path, tally: Tally, nice: int, timeout: float = 600) -> None:
    """One stdio server: the harness's initialize, then every case's lines, then end of input."""
    stream: list[tuple[str, bytes]] = [("", json.dumps(INIT).encode()), ("", json.dumps(INITIALIZED).encode())]
    for case in cases:
        stream += [(case.kind, body) for body in case.bodies]
    data = b"".join(body + b"\n" for _, body in stream)
    head = len(stream[0][1]) + 1
    expected: list[tuple[str, str]] = []  # (kind, id) of each request with an id, in order
    for kind, body in stream:
        for line in body.split(b"\n"):  # what the server reads as lines
            if kind:
                tally.sent[kind] += 1
            if (key := request_id(line)) is not None and kind:
                expected.append((kind, key))
                tally.with_id[kind] += 1
            elif (cancel := cancelled_id(line)) is not None:
                expected = [(k, i) if i != cancel else (k, "cancelled:" + i) for k, i in expected]
    err_path = work / f"stdio-{time.monotonic_ns()}.err"
    answers: list[tuple[float, bytes]] = []
    with err_path.open("wb") as err:
        proc = subprocess.Popen(serve_command(lm.url), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                env=server_env(work), preexec_fn=_niced(nice))
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout

    def read() -> None:
        for line in iter(out.readline, b""):
            answers.append((time.monotonic(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = time.monotonic()
    try:
        proc.stdin.write(data[:head])  # the harness's initialize, answered before the fuzz lines go out:
        proc.stdin.flush()  # the time to the exit is then the server's, not its start-up's
        while not answers and proc.poll() is None and time.monotonic() - started < 120:
            time.sleep(0.01)
        proc.stdin.write(data[head:])
        proc.stdin.close()
    except BrokenPipeError:
        tally.note_problem("stdio: the server closed its stdin before the input ended")
    eof = time.monotonic()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        tally.note_problem(f"stdio: still running {timeout} s after the end of input; killed")
        proc.kill()
        proc.wait()
    gone = time.monotonic()
    reader.join(10)
    tally.exits.append(gone - eof)
    tally.lm_calls += lm_calls(lm)
    got: Counter = Counter()
    for _, line in answers:
        try:
            message = json.loads(line)
        except ValueError:
            tally.notes["stdout line that is not JSON"] += 1
            tally.note_problem(f"stdio: stdout line that is not JSON: {line[:200]!r}")
            continue
        if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
            got[json.dumps(message["id"])] += 1
            if message["id"] is None:
                tally.notes["answers with id null"] += 1
    if answers:
        tally.last_answer.append(max(at for at, _ in answers) - eof)
        tally.shutdown.append(gone - max(at for at, _ in answers))
    for kind, key in expected:
        if key.startswith("cancelled:"):
            tally.notes["requests cancelled by a later notification"] += 1
            continue
        if got[key] > 0:
            got[key] -= 1
            tally.answered[kind] += 1
        else:
            tally.unanswered[kind] += 1
            tally.note_problem(f"stdio: no answer to id {key[:120]} ({kind})")
    tally.notes["answers to no request with an id"] += sum(got.values())
    text = err_path.read_text("utf-8", "replace")
    tally.tracebacks += traceback_count(text)
    if traceback_count(text):
        tally.note_problem("stdio stderr: " + text[text.index("Traceback"):][:1500])
    tally.notes[f"exit code {proc.returncode}"] += 1


@contextmanager
def http_server(lm: Any, work: Path, mode: str, tally: Tally, nice: int) -> Iterator[int]:
    """``serve --transport http`` or ``serve --openai`` on 127.0.0.1 and a free port; its port."""
    log = work / f"{mode}-{time.monotonic_ns()}.err"
    flag = ["--openai"] if mode == "openai" else ["--transport", "http"]
    with log.open("wb") as err:
        proc = subprocess.Popen(serve_command(lm.url, *flag, "--port", "0"), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, env=server_env(work), preexec_fn=_niced(nice))
    try:
        deadline = time.monotonic() + 120
        while not (found := re.search(r"http://127\.0\.0\.1:(\d+)", log.read_text("utf-8", "replace"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the {mode} server did not start: {log.read_text('utf-8', 'replace')[-2000:]}")
            time.sleep(0.05)
        yield int(found.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = log.read_text("utf-8", "replace")
        tally.tracebacks += traceback_count(text)
        if traceback_count(text):
            tally.note_problem(f"{mode} stderr: " + text[text.index("Traceback"):][:1500])


@dataclass
class Exchange:
    status: int | None
    content_type: str
    body: bytes
    error: str | None = None
    session: str | None = None


def exchange(port: int, method: str, path: str, body: bytes, headers: dict[str, str | None], chunked: bool = False,
             deadline_s: float = 60) -> Exchange:
    """One HTTP request on a fresh connection. A dropped connection, or a response not whole within
    ``deadline_s`` (an event stream kept alive by pings included), is ``error``."""
    until = time.monotonic() + deadline_s
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=deadline_s)
    sent = {k: v for k, v in headers.items() if v is not None}
    try:
        try:
            if chunked:
                conn.request(method, path, body=iter([body[: len(body) // 2], body[len(body) // 2 :]]), headers=sent,
                             encode_chunked=True)
            else:
                conn.putrequest(method, path, skip_accept_encoding=True)
                for k, v in {**sent, "Content-Length": str(len(body))}.items():
                    conn.putheader(k, v.encode("utf-8") if isinstance(v, str) else v)
                conn.endheaders(body if body else None)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered before reading the whole body (413): read that answer
        response = conn.getresponse()
        kind = response.getheader("content-type") or ""
        session = response.getheader("mcp-session-id")
        if method == "GET" and kind.startswith("text/event-stream"):
            return Exchange(response.status, kind, b"", session=session)  # the server's event stream: left open
        data = b""
        while piece := response.read1(1 << 16):  # an event stream's pings arrive every 15 s: the deadline still holds
            data += piece
            if time.monotonic() > until:
                return Exchange(response.status, kind, data, f"no end to the response after {deadline_s:.0f} s", session)
        return Exchange(response.status, kind, data, session=session)
    except (OSError, http.client.HTTPException) as exc:
        return Exchange(None, "", b"", f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


def json_messages(ex: Exchange) -> list[Any] | None:
    """The JSON values a response carries (server-sent events: each data line), None when one is not JSON."""
    try:
        if ex.content_type.startswith("text/event-stream"):
            data = [line[5:].strip() for line in ex.body.decode().splitlines() if line.startswith("data:")]
            return [json.loads(d) for d in data if d and d != "[DONE]"]
        return [json.loads(ex.body)]
    except ValueError:
        return None


def judge_http(ex: Exchange, case: Case, body: bytes, tally: Tally, target: str) -> None:
    """An exchange answers when it has a status that is not 500 and a JSON body (202: none)."""
    tally.sent[case.kind] += 1
    label = f"{ex.status}" if ex.status else "no status"
    tally.statuses[label] += 1
    problem = None
    if ex.error is not None:
        problem = f"dropped or hung: {ex.error}"
    elif ex.status is not None and ex.status >= 500 and ex.status not in (502, 503, 504):
        problem = f"status {ex.status}: {ex.body[:300]!r}"
    elif b"Traceback" in ex.body:
        problem = f"a traceback in the body: {ex.body[:300]!r}"
    elif case.method == "GET" and ex.status == 200 and ex.content_type.startswith("text/event-stream"):
        tally.notes["GET: an event stream opened (closed by the client)"] += 1
    elif ex.status == 202 and not ex.body:
        key = request_id(body) if target == "http" and case.method == "POST" else None
        problem = f"202 with no answer to request {key}" if key is not None else None
    else:
        messages = json_messages(ex)
        if messages is None or not messages:
            problem = f"status {ex.status} without a JSON body ({ex.content_type}): {ex.body[:200]!r}"
        elif target == "http" and ex.status == 200 and case.method == "POST" and (key := request_id(body)) is not None:
            ids = {json.dumps(m.get("id")) for m in messages if isinstance(m, dict)}
            if key not in ids:
                tally.notes["200 whose messages lack the request's id"] += 1
    if problem is None and ex.status in (502, 503, 504):
        messages = json_messages(ex) or [{}]
        error = messages[0].get("error") if isinstance(messages[0], dict) else None
        tally.notes[f"{ex.status}: {(error or {}).get('message', '')}"[:100]] += 1
    if problem is None:
        tally.answered[case.kind] += 1
    else:
        tally.bad[case.kind] += 1
        tally.note_problem(f"{target} {case.kind} {case.method} {case.path or ''}: {problem} <- {body[:160]!r}")


def run_http(cases: list[Case], lm: Any, work: Path, tally: Tally, nice: int, mode: str, deadline_s: float = 60) -> None:
    """One HTTP server (MCP over streamable HTTP, or the OpenAI endpoint) and every case's bodies."""
    from concurrent.futures import ThreadPoolExecutor

    with http_server(lm, work, mode, tally, nice) as port, ThreadPoolExecutor(4) as pool:
        session = {"id": None}

        def open_session() -> None:
            ex = exchange(port, "POST", "/mcp", json.dumps(INIT).encode(),
                          {"Content-Type": "application/json", "Accept": MCP_ACCEPT})
            session["id"] = ex.session
            exchange(port, "POST", "/mcp", json.dumps(INITIALIZED).encode(), headers())
            tally.notes["MCP sessions opened"] += 1

        def headers() -> dict[str, str | None]:
            if mode == "openai":
                return {"Content-Type": "application/json"}
            return {"Content-Type": "application/json", "Accept": MCP_ACCEPT, "mcp-session-id": session["id"]}

        if mode == "http":
            open_session()
        default_path = "/v1/chat/completions" if mode == "openai" else "/mcp"
        for case in cases:
            sent = {**headers(), **case.headers}
            path = case.path or default_path
            method = case.method
            calls = [pool.submit(exchange, port, method, path, body if method != "GET" else b"", sent, case.chunked,
                                 deadline_s)
                     for body in case.bodies]
            for body, call in zip(case.bodies, calls):
                ex = call.result()
                judge_http(ex, case, body, tally, mode)
                if mode == "http" and ex.status == 404 and path == "/mcp" and "mcp-session-id" not in case.headers:
                    open_session()  # the session ended (a fuzzed DELETE?): open another
        tally.lm_calls += lm_calls(lm)


# ------------------------------------------------------------------------------ running


def fuzz(targets: list[str], n: int, seed: int, lines_per_run: int, nice: int, work: Path, deadline_s: float = 60,
         progress: Callable[[str], None] = lambda _: None) -> dict[str, Tally]:
    """Generate ``n`` inputs over ``targets`` and run them; a tally per target."""
    shares = {t: SHARE[t] for t in targets}
    total = sum(shares.values())
    counts = {t: round(n * s / total) for t, s in shares.items()}
    tallies: dict[str, Tally] = {}
    with scripted_lm(deadline_s=6 * 3600) as lm:
        for target in targets:
            tally = tallies[target] = Tally()
            cases = list(Generator(target, seed).cases(counts[target]))
            t0 = time.monotonic()
            if target == "stdio":
                chunk: list[Case] = []
                for case in cases:
                    chunk.append(case)
                    if sum(len(c.bodies) for c in chunk) >= lines_per_run:
                        run_stdio(chunk, lm, work, tally, nice)
                        chunk = []
                        progress(f"  stdio: {sum(tally.sent.values())} lines, exit {tally.exits[-1]:.2f} s after EOF")
                if chunk:
                    run_stdio(chunk, lm, work, tally, nice)
            else:
                run_http(cases, lm, work, tally, nice, target, deadline_s)
            tally.notes["seconds"] = round(time.monotonic() - t0)
            progress(f"  {target}: {sum(tally.sent.values())} inputs in {tally.notes['seconds']} s")
    return tallies


def failed(tally: Tally) -> bool:
    return bool(tally.tracebacks or sum(tally.unanswered.values()) or sum(tally.bad.values())
                or (tally.exits and max(tally.exits) > 2.0))


LEGEND = {
    "stdio": "lines sent; 'with id': lines that are requests with an id, each owed an answer with that id",
    "http": "bodies sent; answered: a status and a JSON body (202 and none for what is no request); failed: "
            "dropped, hung, a 500 or a body that is not JSON",
}


def report(tallies: dict[str, Tally]) -> str:
    lines = []
    for target, t in tallies.items():
        stdio = target == "stdio"
        lines.append(f"\n== {target} ({LEGEND['stdio' if stdio else 'http']}) ==")
        lines.append(f"{'kind':<15} {'sent':>7} {'with id':>8} {'answered':>9} {'unanswered' if stdio else 'failed':>11}")
        rows = [(kind, t.sent[kind], t.with_id[kind] if stdio else "-", t.answered[kind],
                 t.unanswered[kind] if stdio else t.bad[kind]) for kind in KINDS if t.sent[kind]]
        rows.append(("total", sum(t.sent.values()), sum(t.with_id.values()) if stdio else "-",
                     sum(t.answered.values()), sum(t.unanswered.values()) if stdio else sum(t.bad.values())))
        lines += [f"{k:<15} {sent:>7} {with_id:>8} {answered:>9} {missed:>11}" for k, sent, with_id, answered, missed in rows]
        lines.append(f"tracebacks in stderr: {t.tracebacks}; model calls answered by the scripted LM: {t.lm_calls}")
        if t.statuses:
            lines.append("statuses: " + ", ".join(f"{s} x{c}" for s, c in sorted(t.statuses.items())))
        if t.exits:
            lines.append(f"exit after the end of input, {len(t.exits)} runs: p50 {statistics.median(t.exits):.2f} s, "
                         f"max {max(t.exits):.2f} s")
        if t.last_answer:
            lines.append(f"  of which to the last answer (requests in flight at the end): "
                         f"p50 {statistics.median(t.last_answer):.2f} s, max {max(t.last_answer):.2f} s; "
                         f"from the last answer to the exit: p50 {statistics.median(t.shutdown):.2f} s, "
                         f"max {max(t.shutdown):.2f} s")
        for note, count in sorted(t.notes.items()):
            lines.append(f"  {note}: {count}")
        for problem in t.problems:
            lines.append(f"  ! {problem}")
    total = sum(sum(t.sent.values()) for t in tallies.values())
    verdict = "FAILED" if any(failed(t) for t in tallies.values()) else "every contract held"
    lines.append(f"\ninputs in total: {total}; {verdict}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="lines and bodies in total over the targets (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--targets", default="stdio,http,openai", help="comma-separated subset of stdio,http,openai")
    ap.add_argument("--lines-per-run", type=int, default=500, help="stdio lines per server process (default 500)")
    ap.add_argument("--deadline", type=float, default=60, help="seconds an HTTP exchange may take (default 60)")
    ap.add_argument("--nice", type=int, default=19, help="niceness of the servers (default 19; 0 leaves it)")
    args = ap.parse_args()
    apply_offline_defaults()
    sys.set_int_max_str_digits(4300)  # the reading the contract names, whatever the environment sets
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if unknown := [t for t in targets if t not in SHARE]:
        ap.error(f"unknown target(s) {unknown}; expected some of {list(SHARE)}")
    with tempfile.TemporaryDirectory(prefix="fuzz-servers-") as tmp:
        tallies = fuzz(targets, args.n, args.seed, args.lines_per_run, args.nice, Path(tmp), args.deadline,
                       progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(f"fuzz_servers: --n {args.n} --seed {args.seed} --targets {','.join(targets)} "
          f"--lines-per-run {args.lines_per_run} --deadline {args.deadline:g}")
    print(report(tallies))
    return 1 if any(failed(t) for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
