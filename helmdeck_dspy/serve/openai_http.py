"""``serve --openai``: the planner behind an OpenAI-compatible HTTP endpoint.

Routes: ``POST /v1/chat/completions`` (:func:`~helmdeck_dspy.serve.chat.complete_chat`) and
``GET /v1/models``. The guards of ``serve --transport http``: loopback unless bearer tokens are
configured (``serve.auth``), a bearer token on every request when they are, a body of at most
:data:`MAX_BODY_BYTES` read before parsing (its text valid Unicode: no lone surrogate), the
request's size bounded by the served LM's budget row, and every failure answered as an OpenAI
error object with its status (no traceback, no secret: the text goes through ``io.redaction``).

``stream: true`` answers with the standard chunks of the final answer: the planner checks a call
before it is sent, so it cannot stream calls it has not finished checking; the chunks come when
the answer is whole.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import ValidationError

from helmdeck_dspy.errors import HelmdeckError, InputError, InputTooLargeError, RunError
from helmdeck_dspy.io.jsonl import json_deeper_than
from helmdeck_dspy.io.redaction import known_secrets, redact
from helmdeck_dspy.serve.auth import ANONYMOUS_HTTP_CALLER, CallerTokens
from helmdeck_dspy.serve.chat import ChatRequest, complete_chat

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body read; a larger one is refused (413) before it is parsed."""
MAX_JSON_DEPTH = 64


def error_body(status: int, message: str, kind: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """An OpenAI error object (its message masked of every known secret)."""
    return {"error": {"message": redact(message, known_secrets()) or "", "type": kind, "param": param, "code": code}}


def _status_of(exc: BaseException) -> tuple[int, str, str | None]:
    if isinstance(exc, InputTooLargeError):
        return 400, "invalid_request_error", "context_length_exceeded"
    if isinstance(exc, InputError):
        return 400, "invalid_request_error", None
    if isinstance(exc, TimeoutError):
        return 504, "api_error", "timeout"
    if isinstance(exc, RunError):
        return 502, "api_error", None
    return 500, "api_error", None


def _chunks(answer: dict[str, Any]) -> list[str]:
    """The answer as the standard stream of chunks (server-sent events), ending with ``[DONE]``."""
    choice = answer["choices"][0]
    base = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    events = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
               "usage": answer["usage"]}]
    return [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events] + ["data: [DONE]\n\n"]


def openai_app(service: Any, tokens: CallerTokens) -> Any:
    """The Starlette app of the endpoint (for uvicorn)."""
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    def refuse(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> Response:
        return JSONResponse(error_body(status, message, kind, code), status_code=status)

    def caller_of(request: Request) -> str | None:
        if not tokens:
            return ANONYMOUS_HTTP_CALLER
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        return tokens.caller_for(token.strip()) if scheme.lower() == "bearer" and token.strip() else None

    async def completions(request: Request) -> Response:
        caller = caller_of(request)
        if caller is None:
            return refuse(401, "a bearer token is required", "authentication_error", "invalid_api_key")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return refuse(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        body = b""
        async for piece in request.stream():
            body += piece
            if len(body) > MAX_BODY_BYTES:
                return refuse(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError):
            return refuse(400, "the body is not JSON")
        if json_deeper_than(raw, MAX_JSON_DEPTH):
            return refuse(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels")
        try:  # a lone surrogate (escaped, or its raw bytes, which json reads too) is text no model can take
            json.dumps(raw, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return refuse(400, "the body holds text that is not valid Unicode (a lone surrogate)")
        try:
            chat = ChatRequest.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return refuse(400, f"invalid request: {where}: {first.get('msg', 'invalid')}")
        try:
            answer = await anyio.to_thread.run_sync(complete_chat, service, chat, caller)
        except (HelmdeckError, TimeoutError) as exc:
            status, kind, code = _status_of(exc)
            return refuse(status, str(exc), kind, code)
        except Exception as exc:  # noqa: BLE001 - an OpenAI client gets an error object, never a traceback
            return refuse(500, f"the server failed: {type(exc).__name__}", "api_error")
        if chat.stream:
            return StreamingResponse(iter(_chunks(answer)), media_type="text/event-stream")
        return JSONResponse(answer)

    async def models(request: Request) -> Response:
        if caller_of(request) is None:
            return refuse(401, "a bearer token is required", "authentication_error", "invalid_api_key")
        names = sorted({row.match for row in service.table.rows})
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": int(time.time()), "owned_by": "helmdeck-dspy"} for name in names]})

    async def not_found(request: Request, exc: Exception) -> Response:
        return refuse(404, f"no route {request.method} {request.url.path}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return refuse(405, f"{request.method} is not allowed on {request.url.path}")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/v1/models", models, methods=["GET"])],
                     exception_handlers={404: not_found, 405: not_allowed})
