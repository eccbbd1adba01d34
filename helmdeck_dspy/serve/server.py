"""Building the MCP server (``mcp`` 2.x ``MCPServer``) and running it over stdio or streamable HTTP.

:func:`run` is what ``helmdeck-dspy serve`` calls: it loads the tokens and refuses an unsafe bind
before anything heavy loads, builds the :class:`~.service.PlanService`, then serves until the
client closes stdin (stdio) or the process is interrupted (HTTP). The HTTP listener is bound here,
so ``--port 0`` works and the announced URL carries the real port.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from helmdeck_dspy.errors import MissingExtraError, RunError
from helmdeck_dspy.serve.auth import (
    ANONYMOUS_HTTP_CALLER,
    CallerTokens,
    StaticTokenVerifier,
    check_bind,
    current_caller,
    load_tokens,
    process_owner,
)
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.http_errors import JsonErrorBodies
from helmdeck_dspy.serve.inflight import OneIdInFlight
from helmdeck_dspy.serve.lines import INVALID, NOT_JSON, NOTIFICATION, REQUEST, RESPONSE, BoundedLines, Ledger, Reading
from helmdeck_dspy.serve.names import (
    CONTEXT_BUDGETS_URI,
    MODELS_URI,
    MY_PLANS_URI,
    ROUTING_GUIDE_URI,
    SERVER_NAME,
)
from helmdeck_dspy.serve.service import PlanService

_LOG = logging.getLogger("helmdeck_dspy.serve")

INSTRUCTIONS = (
    "helmdeck-dspy plans tool calls over a tool catalog for a given model. Use helmdeck.route to pick one tool "
    "for a single action, helmdeck.plan for a request with several actions (loop on more_steps_likely with "
    "prior_steps for Tier C models). helmdeck://context-budgets and helmdeck://models tell what each model "
    "gets, helmdeck://routing-guide is the catalog, helmdeck://my-plans your own plan history."
)
RESOURCES = (
    (CONTEXT_BUDGETS_URI, "context-budgets", "Every per-model budget row, the fallback, and the unknown-model policy."),
    (MODELS_URI, "models", "The tiers: their models and what each tier changes in a plan call."),
    (ROUTING_GUIDE_URI, "routing-guide", "The catalog (packs and pipelines) this server plans over."),
    (MY_PLANS_URI, "my-plans", "Your plan history: intent hashes, complexity, tools, outcome, model, time."),
)


SDK_MAJOR = 2
"""The ``mcp`` major version this module is written against (``MCPServer``; 1.x had ``FastMCP``)."""


def require_sdk() -> None:
    """Check the MCP SDK is installed in the major version this package uses.

    Raises:
        MissingExtraError: ``mcp`` is absent or not 2.x.
    """
    try:
        found = version("mcp")
    except PackageNotFoundError:
        raise MissingExtraError("helmdeck-dspy serve needs the MCP SDK: pip install 'helmdeck-dspy[serve]'") from None
    if found.split(".")[0] != str(SDK_MAJOR):
        raise MissingExtraError(f"helmdeck-dspy serve needs mcp {SDK_MAJOR}.x, found {found}: "
                                "pip install 'helmdeck-dspy[serve]'")


def _version() -> str:
    try:
        return version("helmdeck-dspy")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def build_server(service: PlanService, *, default_caller: str, tokens: CallerTokens | None = None,
                 issuer_url: str | None = None) -> Any:
    """The ``MCPServer`` with both tools and the four resources.

    Args:
        service: What the tools and resources answer with.
        default_caller: The caller of a request that carries no bearer token.
        tokens: When non-empty, every HTTP request must carry one of them (401 otherwise).
        issuer_url: The server's own base URL, named in the SDK's auth settings.
    """
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from pydantic import AnyHttpUrl

    from helmdeck_dspy.serve.tools import plan_tool, route_tool

    auth: dict[str, Any] = {}
    if tokens:
        auth = {"token_verifier": StaticTokenVerifier(tokens),
                "auth": AuthSettings(issuer_url=AnyHttpUrl(issuer_url or "http://127.0.0.1"),
                                     resource_server_url=None)}
    server = MCPServer(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS, log_level="WARNING",
                       tools=[plan_tool(service, default_caller), route_tool(service)], **auth)
    readers: dict[str, Callable[[], Any]] = {
        CONTEXT_BUDGETS_URI: service.context_budgets,
        MODELS_URI: service.models,
        ROUTING_GUIDE_URI: service.routing_guide,
        MY_PLANS_URI: lambda: service.my_plans(current_caller(default_caller)),
    }
    for uri, name, description in RESOURCES:
        server.resource(uri, name=name, description=description, mime_type="application/json")(
            _as_json(readers[uri]))
    return server


def _as_json(read: Callable[[], Any]) -> Callable[[], str]:
    """A resource function (no parameters) returning ``read()`` as indented JSON."""

    def resource() -> str:
        return _json(read())

    return resource


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one).

    Raises:
        RunError: The address cannot be resolved or bound (e.g. the port is in use).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise RunError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise RunError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def http_url(host: str, port: int, path: str) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


def http_app(service: PlanService, tokens: CallerTokens, *, host: str, port: int, path: str) -> Any:
    """The Starlette app of the streamable HTTP transport (for uvicorn), with the session limits
    of ``service.config``: an idle timeout, and at most ``sessions_per_caller`` open sessions per
    caller (a request that would open one more gets 503 until one ends or expires), a request id
    in flight in a session refused a second time (``serve.inflight``), and every refusal in JSON
    (``serve.http_errors``)."""
    config = service.config
    server = build_server(service, default_caller=ANONYMOUS_HTTP_CALLER, tokens=tokens,
                          issuer_url=http_url(host, port, ""))
    app = server.streamable_http_app(streamable_http_path=path, host=host, session_idle_timeout=config.session_idle_s)
    cap_sessions_per_caller(server.session_manager, config.sessions_per_caller)
    return JsonErrorBodies(OneIdInFlight(app))


def cap_sessions_per_caller(manager: Any, cap: int) -> None:
    """Hold each caller to ``cap`` open sessions in the SDK's session manager.

    A token caller at the cap is refused a new session (503) until one of its sessions ends or
    expires. Tokenless clients (loopback only) share one caller, so there the least recently used
    idle session (no request in flight) is closed to make room: its client gets 404 on its next
    request and initialises again, as the MCP spec describes; only when every session is busy is
    the new one refused. Each refusal is logged with its real reason.

    The manager admits sessions in ``_admit_session(requestor)`` (None refuses with 503) and keeps
    each session's owner in ``_session_owners``.

    Raises:
        MissingExtraError: The installed SDK manages sessions differently (not the 2.x this is written for).
    """
    admit = getattr(manager, "_admit_session", None)
    if admit is None or not hasattr(manager, "_session_owners") or not hasattr(manager, "_server_instances"):
        raise MissingExtraError("this mcp version's session manager has no per-caller hook; install mcp 2.x")
    _quiet_sdk_refusal_line()

    def owner(session_id: str) -> str | None:
        found = manager._session_owners.get(session_id)
        return found.get("client_id") if found else None

    def admit_capped(requestor: Any) -> Any:
        caller = requestor.get("client_id") if requestor else None
        mine = [session_id for session_id in list(manager._server_instances) if owner(session_id) == caller]
        if len(mine) >= cap:
            if caller is not None:
                _LOG.warning("refusing a new session: caller %s already holds %d open (serve --sessions-per-caller)",
                             caller, len(mine))
                return None
            victim = _least_recently_used_idle(manager, mine)
            if victim is None:
                _LOG.warning("refusing a new session: all %d tokenless sessions have a request in flight "
                             "(serve --sessions-per-caller)", len(mine))
                return None
            _close_idle(manager, victim)
        return admit(requestor)

    manager._admit_session = admit_capped


def _least_recently_used_idle(manager: Any, session_ids: list[str]) -> str | None:
    """The session among ``session_ids`` with no request in flight whose last one ended first."""
    idle = []
    for session_id in session_ids:
        transport = manager._server_instances.get(session_id)
        scope = getattr(transport, "idle_scope", None)
        if transport is not None and scope is not None and not getattr(transport, "_requests_in_flight", 1):
            idle.append((scope.deadline, session_id))  # the deadline is the last request's end plus the timeout
    return min(idle)[1] if idle else None


def _close_idle(manager: Any, session_id: str) -> None:
    """Forget an idle session now (its id answers 404 from here on) and end its server task, which
    terminates the transport as any expired session's does."""
    transport = manager._server_instances.pop(session_id)
    manager._session_owners.pop(session_id, None)
    transport.idle_scope.cancel()
    _LOG.info("closed the least recently used idle session %s to make room for a new one", session_id[:8])


class _DropSdkRefusal(logging.Filter):
    """The SDK logs every refused session as over its global limit ("10000 sessions are already
    open"); the refusals here are per caller and are logged with their reason instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Refusing to open a new session")


def _quiet_sdk_refusal_line() -> None:
    sdk = logging.getLogger("mcp.server.streamable_http_manager")
    if not any(isinstance(f, _DropSdkRefusal) for f in sdk.filters):
        sdk.addFilter(_DropSdkRefusal())


async def run_stdio(server: Any, max_line_bytes: int, announce: Callable[[str], None], drain_s: float = 300.0) -> None:
    """Serve ``server`` over this process's stdin and stdout, refusing lines over ``max_line_bytes``
    and answering every request read before the end of input (waiting up to ``drain_s``)."""
    import sys

    import mcp_types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    ledger = Ledger()
    lines = BoundedLines(sys.stdin.buffer, max_line_bytes, announce, ledger=ledger, drain_s=drain_s, read=sdk_reading)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        async def send(message: dict[str, Any]) -> None:
            await write_stream.send(SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(message)))

        ledger.send = send
        ledger.written = lambda: _writer_idle(write_stream)
        ledger.ready.set()
        low = server._lowlevel_server
        await low.run(read_stream, _Answers(write_stream, ledger), low.create_initialization_options())


def sdk_reading(line: str) -> Reading:
    """How the SDK's stdio reader takes ``line`` (it drops a line it cannot validate, unanswered).
    A line with an ``id`` that it reads as a notification (the id is not a string or an integer)
    is an invalid request."""
    import mcp_types
    from pydantic import ValidationError
    from pydantic_core import from_json

    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return (NOT_JSON if exc.errors()[0]["type"] == "json_invalid" else INVALID), None
    if isinstance(message, mcp_types.JSONRPCRequest):
        return REQUEST, message.id
    if isinstance(message, mcp_types.JSONRPCNotification):
        return (INVALID if '"id"' in line and "id" in from_json(line) else NOTIFICATION), None  # the same reader
    return RESPONSE, None


def _writer_idle(stream: Any) -> bool:
    """Whether the SDK's stdout writer is back waiting for a message, so the last answer it was
    handed is written and flushed (an answer handed over is not yet out: a server that exits then
    loses it). Unknown stream internals count as idle."""
    inner = getattr(stream, "_inner", None)
    try:
        return inner is None or inner.statistics().tasks_waiting_receive > 0
    except Exception:  # noqa: BLE001 - another SDK's stream: no way to tell, do not wait
        return True


class _Answers:
    """The server's write stream, noting the id of every answer it sends in the ledger."""

    def __init__(self, stream: Any, ledger: Ledger) -> None:
        self._stream = stream
        self._ledger = ledger

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        answered = getattr(message, "id", None)
        if answered is not None and not hasattr(message, "method"):  # a response or an error
            self._ledger.answered[Ledger.key(answered)] += 1
        await self._stream.send(item)

    async def __aenter__(self) -> _Answers:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run(config: ServeConfig, announce: Callable[[str], None]) -> None:
    """Serve until the client hangs up (stdio) or the process is interrupted (HTTP).

    Args:
        config: The server's settings.
        announce: Receives one line saying where the server is (stderr in the CLI).

    Raises:
        ServeRefusedError: An HTTP bind beyond loopback without tokens, or malformed token pairs.
        TokenFileError: A malformed token file.
        DataFileError / LMSpecError: A catalog, budget table or LM that cannot be loaded.
        MissingExtraError: The MCP SDK (the ``serve`` extra) is not installed.
        RunError: The HTTP address cannot be bound.
    """
    require_sdk()
    if config.transport == "stdio":
        service = PlanService(config)
        server = build_server(service, default_caller=process_owner())
        announce(f"helmdeck-dspy serve: MCP over stdio for {process_owner()}")
        import anyio

        drain = service.retry.timeout_s * service.retry.max_attempts + 5  # a call read just before the end
        anyio.run(run_stdio, server, config.max_line_bytes, announce, drain)
        return
    import uvicorn

    tokens = load_tokens(config.tokens_file)
    check_bind(config.host, tokens)
    sock = listen_socket(config.host, config.port)  # before loading: a taken port fails fast
    try:
        port = sock.getsockname()[1]
        who = f"bearer tokens for {len(tokens)} caller(s)" if tokens else "no tokens (loopback only)"
        if config.transport == "openai":
            from helmdeck_dspy.serve.openai_http import openai_app

            app = openai_app(PlanService(config), tokens)
            announce(f"helmdeck-dspy serve: OpenAI-compatible chat completions at {http_url(config.host, port, '/v1')}"
                     f", {who}")
        else:
            app = http_app(PlanService(config), tokens, host=config.host, port=port, path=config.path)
            announce(f"helmdeck-dspy serve: MCP over streamable HTTP at {http_url(config.host, port, config.path)}, "
                     f"{who}")
        uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
    finally:
        sock.close()
