"""Streamable HTTP: one request id in flight per session.

The MCP SDK (2.x) keys the answer stream of each POST by its request id, as text, so a second POST
with an id already in flight in the same session takes over the first one's stream, and the POSTs
left without one are never answered (the SDK's pings keep them open). The protocol forbids reusing
an id within a session; :class:`OneIdInFlight`, in front of the SDK's app, answers such a POST at
once with a JSON-RPC error carrying its id (-32600, status 409) and passes everything else on,
the body it read first included.
"""

from __future__ import annotations

import json
from typing import Any

MAX_PEEK_BYTES = 4 * 1024 * 1024
"""The most body read to find a request id: the SDK's own limit (it refuses a larger body, 413)."""


def request_key(body: bytes) -> tuple[str, Any] | None:
    """The key the SDK files a request under (its id as text) and the id, for a body that is one
    JSON-RPC request; None for anything else."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return str(request_id), request_id


class OneIdInFlight:
    """ASGI middleware: a POST whose request id is in flight in its session (``mcp-session-id``)
    is refused with 409 and a JSON-RPC error instead of reaching ``app``."""

    def __init__(self, app: Any, max_peek: int = MAX_PEEK_BYTES) -> None:
        self.app = app
        self.max_peek = max_peek
        self.in_flight: dict[str, set[str]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        session = _header(scope, b"mcp-session-id") if scope["type"] == "http" and scope["method"] == "POST" else None
        if session is None:
            await self.app(scope, receive, send)
            return
        read: list[dict[str, Any]] = []
        body = b""
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body") or len(body) > self.max_peek:
                break

        async def replay() -> dict[str, Any]:
            return read.pop(0) if read else await receive()

        found = request_key(body) if len(body) <= self.max_peek else None
        if found is None:
            await self.app(scope, replay, send)
            return
        held = self.in_flight.setdefault(session, set())
        if found[0] in held:
            await _refuse(send, found[1])
            return
        held.add(found[0])
        try:
            await self.app(scope, replay, send)
        finally:
            held.discard(found[0])
            if not held:
                self.in_flight.pop(session, None)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _refuse(send: Any, request_id: Any) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": -32600, "message": f"Invalid request: a request with id {json.dumps(request_id)[:200]} is already "
                                   "in flight in this session (ids must not be reused)"}}).encode()
    await send({"type": "http.response.start", "status": 409,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
