"""A loopback OpenAI-compatible server that answers from a script of faults, for tests.

Bounded on every side: it binds 127.0.0.1 on an ephemeral port, serves from a daemon thread,
shuts itself down after ``deadline_s`` or when its ``with`` block ends, and answers at most
``max_requests`` requests (later ones get a plain 503 and are counted in ``over_cap``). Stalling
replies wait on the server's stop event, so nothing outlives the server.

Each server has a random path prefix of its own (in ``url``): a request without it, from a client
an earlier test abandoned on a port this server now holds, is answered 404 and counted in
``strays``, never as one of this test's requests. Each request to ``<prefix>/v1/chat/completions``
or ``<prefix>/chat/completions`` takes the next :class:`Reply` of the script (the last one repeats once the script runs out) and is recorded with its headers,
JSON body and arrival time, so tests can assert on retries, backoff and what was sent::

    with FaultServer([status(503), ok(PLAN)]) as server:
        lm = make_lm("openai/fault-model", api_base=server.url, ...)
        ...
        assert len(server.requests) == 2
"""

from __future__ import annotations

import itertools
import json
import secrets
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``kind`` selects the behaviour: ``json`` (a chat completion built from ``content``,
    ``finish_reason`` and ``reasoning_content``), ``status`` (an error status with a JSON error
    body), ``reset`` (the TCP connection is reset with no reply), ``stall_headers`` (status line
    and headers, then nothing), ``stall_body`` (headers and half of the body, then nothing),
    ``trickle`` (the body one byte every ``interval_s``). ``delay_s`` holds back the first byte.
    """

    kind: str = "json"
    status: int = 200
    content: str | None = ""
    finish_reason: str | None = "stop"
    reasoning_content: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    interval_s: float = 0.0
    error_body: str | None = None


# ------------------------------------------------------------------ reply builders


def ok(content: str, **kw: Any) -> Reply:
    """200 with ``content`` and finish_reason stop. ``{authorization}`` in any scripted text is
    replaced by the request's Authorization header (to test that echoed credentials are masked)."""
    return Reply(content=content, **kw)


def empty() -> Reply:
    """200 with empty content and finish_reason stop."""
    return Reply(content="")


def content_filter(content: str = "") -> Reply:
    """200, finish_reason content_filter."""
    return Reply(content=content, finish_reason="content_filter")


def length(content: str) -> Reply:
    """200, finish_reason length: ``content`` is cut mid-way (callers pass a prefix)."""
    return Reply(content=content, finish_reason="length")


def think_only(thought: str = "Let me think about which tool fits this request.") -> Reply:
    """200: a ``<think>`` block and nothing after it."""
    return Reply(content=f"<think>{thought}</think>")


def reasoning_only(thought: str = "The user wants a blog post; the blog pack fits.") -> Reply:
    """200: empty content, the answer's reasoning in ``reasoning_content``."""
    return Reply(content="", reasoning_content=thought)


def malformed(content: str = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience" "args": {]]}') -> Reply:
    """200 with JSON-shaped content no decoder accepts."""
    return Reply(content=content)


def status(code: int, *, retry_after: str | float | None = None, message: str | None = None) -> Reply:
    """An error status with an OpenAI-style error body (and a Retry-After header when given)."""
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return Reply(kind="status", status=code, headers=headers, error_body=message)


def reset() -> Reply:
    """The connection is reset (RST) after the request is read; no status line is sent."""
    return Reply(kind="reset")


def slow(delay_s: float, then: Reply | None = None) -> Reply:
    """``then`` (default: an ok plan-less reply), after holding back the first byte for ``delay_s``."""
    base = then or ok("{}")
    return Reply(**{**base.__dict__, "delay_s": delay_s})


def stall_headers() -> Reply:
    """200 headers with a Content-Length, then no body."""
    return Reply(kind="stall_headers", content="{}")


def stall_body() -> Reply:
    """200 headers and the first half of the body, then nothing."""
    return Reply(kind="stall_body", content='{"steps": []}')


def trickle(interval_s: float, then: Reply | None = None) -> Reply:
    """The reply's bytes one at a time, ``interval_s`` apart (never silent long enough for a read timeout)."""
    base = then or ok("{}")
    return Reply(**{**base.__dict__, "kind": "trickle", "interval_s": interval_s})


# ------------------------------------------------------------------ the server


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    at: float  # time.monotonic() on arrival
    reply: Reply | None = None
    pieces_sent: int = 0  # a streamed reply: content pieces written before it ended
    client_closed: bool = False  # a streamed reply: the client closed the stream before its end
    ended: threading.Event = field(default_factory=threading.Event)  # the reply is over (sent, or given up)
    ended_at: float | None = None  # time.monotonic() then
    closed_at: float | None = None  # a streamed reply: when the client was seen closing it

    @property
    def streamed(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


def _echo(text: str | None, headers: dict[str, str]) -> str | None:
    """``{authorization}`` in scripted text becomes the request's Authorization header (a leaky proxy)."""
    if text is None or "{authorization}" not in text:
        return text
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    return text.replace("{authorization}", auth)


def _canonical(items: Any) -> dict[str, str]:
    """Headers under their canonical spelling (``authorization`` → ``Authorization``): clients differ
    in case (the OpenAI SDK 3.x sends lower case), and HTTP header names are case-insensitive."""
    return {"-".join(part.capitalize() for part in name.split("-")): value for name, value in items}


def completion_body(reply: Reply, model: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    headers = headers or {}
    message: dict[str, Any] = {"role": "assistant", "content": _echo(reply.content, headers)}
    if reply.reasoning_content is not None:
        message["reasoning_content"] = _echo(reply.reasoning_content, headers)
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server  # type: ignore[assignment]
    protocol_version = "HTTP/1.0"  # one request per connection: every reply decides its own socket

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner = self.server.owner
        if not self.path.startswith(owner.prefix + "/"):  # a client of an earlier server on a reused port
            owner.strays += 1
            self._send_json(404, {"error": {"message": "not this server's client"}})
            return
        path = self.path[len(owner.prefix):]
        if path.rstrip("/") not in CHAT_PATHS:
            owner.unrouted.append(path)
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        reply = owner._take(Received("POST", path, _canonical(self.headers.items()), body, raw, time.monotonic()))
        if reply is None:
            self._send_json(503, {"error": {"message": "fault server request cap reached"}})
            return
        received = owner.requests[-1]
        model = (body or {}).get("model", "fault-model") if isinstance(body, dict) else "fault-model"
        try:
            if received.streamed and reply.kind not in ("status", "reset"):
                self._serve_stream(reply, model, received)
            else:
                self._serve(reply, model)
        finally:
            received.ended_at = time.monotonic()
            received.ended.set()

    # -------------------------------------------------------------- behaviours

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; False when the server is stopping."""
        return not self.server.owner.stopping.wait(seconds)

    def _send_json(self, code: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, reply: Reply, model: str) -> None:
        if reply.delay_s and not self._wait(reply.delay_s):
            return
        if reply.kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if reply.kind == "status":
            message = _echo(reply.error_body, dict(self.headers.items())) or f"scripted fault {reply.status}"
            self._send_json(reply.status, {"error": {"message": message, "type": "fault", "code": str(reply.status)}},
                            reply.headers)
            return
        payload = completion_body(reply, model, dict(self.headers.items()))
        if reply.kind == "json":
            self._send_json(reply.status, payload, reply.headers)
            return
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        if reply.kind == "stall_headers":
            self._wait(self.server.owner.stall_s)
        elif reply.kind == "stall_body":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._wait(self.server.owner.stall_s)
        elif reply.kind == "trickle":
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                if not self._wait(reply.interval_s):
                    return
        else:  # pragma: no cover - a typo in a test script
            raise ValueError(f"unknown reply kind {reply.kind!r}")


    def _serve_stream(self, reply: Reply, model: str, received: Received) -> None:
        """A streamed reply (``"stream": true``): server-sent events as llama.cpp's server sends them,
        the content in :data:`STREAM_PIECE`-character pieces ``interval_s`` apart, then the finish
        chunk, a usage chunk and ``[DONE]``. A client that closes early is noted on ``received``."""
        if reply.delay_s and not self._wait(reply.delay_s):
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.flush()
        if reply.kind == "stall_headers":
            self._wait(self.server.owner.stall_s)
            return
        content = _echo(reply.content, dict(self.headers.items())) or ""
        pieces = [content[i : i + STREAM_PIECE] for i in range(0, len(content), STREAM_PIECE)]

        def event(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
            chunk = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage is not None:
                chunk["usage"] = usage
            return f"data: {json.dumps(chunk)}\n\n".encode()

        try:
            self.wfile.write(event({"role": "assistant", "content": ""}))
            self.wfile.flush()
            for piece in pieces:
                if reply.interval_s and not self._wait_open(reply.interval_s, received):
                    return
                self.wfile.write(event({"content": piece}))
                self.wfile.flush()
                received.pieces_sent += 1
            if reply.kind == "stall_body":
                self._wait(self.server.owner.stall_s)
                return
            usage = {"prompt_tokens": 100, "completion_tokens": len(pieces), "total_tokens": 100 + len(pieces)}
            self.wfile.write(event({}, reply.finish_reason, usage) + b"data: [DONE]\n\n")
            self.wfile.flush()
        except OSError:  # a broken pipe or a reset: the client closed the stream
            received.client_closed = True
            received.closed_at = received.closed_at or time.monotonic()

    def _wait_open(self, seconds: float, received: Received) -> bool:
        """Wait up to ``seconds`` while the client keeps the stream open; False (noting when) as soon
        as it closes it, or when the server is stopping."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            if self.server.owner.stopping.is_set():
                return False
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.01))
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                received.client_closed, received.closed_at = True, time.monotonic()
                return False
        return True


STREAM_PIECE = 4
"""Characters of content per streamed chunk (about a token)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    owner: FaultServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # resets and clients that gave up are the point of this server


class FaultServer:
    """See the module docstring.

    Args:
        script: Replies in order; the last repeats when the script runs out.
        deadline_s: The server shuts itself down this long after it starts.
        max_requests: Requests answered from the script; later ones get 503.
        stall_s: How long stalling replies hold the connection (capped by the server's life).
    """

    def __init__(
        self, script: list[Reply] | Reply, *, deadline_s: float = 30.0, max_requests: int = 50, stall_s: float = 10.0,
    ) -> None:
        self.script = list(script) if isinstance(script, list) else [script]
        if not self.script:
            raise ValueError("empty script")
        self.deadline_s = deadline_s
        self.max_requests = max_requests
        self.stall_s = stall_s
        self.requests: list[Received] = []
        self.over_cap = 0
        self.prefix = "/" + secrets.token_hex(6)  # its own clients' paths: a stray from an earlier test is not counted
        self.strays = 0
        self.unrouted: list[str] = []  # this server's POSTs to a path it has no route for
        self._offset = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fault-server", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.deadline_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        httpd, self._httpd = self._httpd, None
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -------------------------------------------------------------- what tests read

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The API base to hand a client (``http://127.0.0.1:<port>/<this server's prefix>/v1``)."""
        return f"http://127.0.0.1:{self.port}{self.prefix}/v1"

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests' arrivals."""
        at = [r.at for r in self.requests]
        return [b - a for a, b in itertools.pairwise(at)]

    def set_script(self, script: list[Reply] | Reply) -> None:
        """Answer the next requests from ``script`` (from its start)."""
        with self._lock:
            self.script = list(script) if isinstance(script, list) else [script]
            self._offset = len(self.requests)

    def _take(self, received: Received) -> Reply | None:
        with self._lock:
            if len(self.requests) >= self.max_requests:
                self.over_cap += 1
                return None
            index = min(len(self.requests) - self._offset, len(self.script) - 1)
            received.reply = self.script[index]
            self.requests.append(received)
            return received.reply
