"""Streamable HTTP: every refusal in JSON.

The MCP SDK answers most refusals with a JSON-RPC error, but its guards answer a wrong
Content-Type (400), a Host or Origin it does not allow (421, 403) and an oversized body (413) in
plain text, and a path it does not serve gets Starlette's text 404. :class:`JsonErrorBodies`, in
front of the SDK's app, rewrites an error response (status 400 or more) whose body is not JSON
into a JSON-RPC error (id null, -32600 for a 4xx, -32603 for a 5xx) holding that text, its status
and other headers kept.
"""

from __future__ import annotations

import json
from typing import Any

MAX_TEXT = 500
"""The most characters of the original text carried into the error message."""


class JsonErrorBodies:
    """ASGI middleware: error responses that are not JSON become JSON-RPC errors (see the module)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}
        text = b""

        async def rewrite(message: dict[str, Any]) -> None:
            nonlocal text
            if message["type"] == "http.response.start" and message["status"] >= 400 and not _is_json(message):
                held["start"] = message
                return
            if "start" not in held or message["type"] != "http.response.body":
                await send(message)
                return
            text += message.get("body", b"")
            if message.get("more_body"):
                return
            start = held.pop("start")
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600 if start["status"] < 500 else -32603,
                "message": text.decode("utf-8", "replace")[:MAX_TEXT] or f"HTTP {start['status']}"}}).encode()
            headers = [(k, v) for k, v in start.get("headers", ())
                       if k.lower() not in (b"content-type", b"content-length")]
            await send({**start, "headers": [*headers, (b"content-type", b"application/json"),
                                             (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewrite)


def _is_json(start: dict[str, Any]) -> bool:
    kind = next((v for k, v in start.get("headers", ()) if k.lower() == b"content-type"), b"")
    return bytes(kind).lower().startswith(b"application/json")
