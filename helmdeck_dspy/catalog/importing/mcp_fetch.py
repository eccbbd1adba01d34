"""Listing a live MCP server's tools with the official SDK's client (``mcp`` 2.x).

:func:`list_server_tools` starts a stdio server (or connects to a streamable-HTTP one), performs
the ``initialize`` handshake, calls ``tools/list`` page by page until no ``nextCursor`` is left,
and closes the connection, which stops a stdio server. Every tool comes back as its wire JSON, so
the one MCP shape reader (:mod:`.shapes`) reads it, as it reads a saved ``tools/list`` file.

A server's stderr and the SDK's log records are captured, not shown: a failure becomes one
:class:`~helmdeck_dspy.errors.ToolSourceError` line that says what happened (the command is not
found, the server closed the connection, it did not answer in time) with the server's last
stderr line. The ``mcp`` package is imported inside the functions, so the CLI starts without it.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, NamedTuple

from helmdeck_dspy.errors import MissingExtraError, ToolSourceError

DEFAULT_TIMEOUT_S = 60.0
"""How long one server may take to start, answer the handshake and list every page."""
MAX_PAGES = 1000
"""The most ``tools/list`` pages followed: a server whose cursor never ends is an error, not a hang."""
HTTP_TIMEOUT_S = 30.0
"""Connect, read and write limit of one HTTP request (the whole listing has ``timeout_s``)."""
NEEDS_SDK = "importing from an MCP server needs the MCP SDK: pip install 'helmdeck-dspy[serve]'"


class ServerTools(NamedTuple):
    """What one server listed: its name from the handshake and its tools as wire JSON objects."""

    server_name: str
    tools: list[dict[str, Any]]


class ServerTarget(NamedTuple):
    """How to reach one server: a command to start (stdio) or a URL (streamable HTTP)."""

    source: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    cwd: str | None = None


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def quiet_sdk_logs() -> Iterator[_LogCapture]:
    """The SDK's log records (a line that is not JSON-RPC, a failed read) captured, not printed."""
    logger = logging.getLogger("mcp")
    capture = _LogCapture()
    saved = logger.propagate
    logger.addHandler(capture)
    logger.propagate = False
    try:
        yield capture
    finally:
        logger.removeHandler(capture)
        logger.propagate = saved


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _describe(leaf: BaseException, target: ServerTarget, timeout_s: float) -> str:
    """One line for what stopped the listing."""
    from mcp.shared.exceptions import MCPError

    command = target.command
    if isinstance(leaf, FileNotFoundError) and command is not None:
        return f"command not found: {command}"
    if isinstance(leaf, PermissionError) and command is not None:
        return f"cannot run {command}: permission denied"
    if isinstance(leaf, TimeoutError):
        return f"no answer within {timeout_s:g} s (is it an MCP server? see --timeout)"
    if isinstance(leaf, MCPError):
        if leaf.code == -32000 and "closed" in leaf.error.message.lower():
            return "the server closed the connection before listing its tools" + (
                " (it exited)" if command is not None else "")
        if leaf.code == -32700 or "content type" in leaf.error.message.lower():
            return "not an MCP endpoint: its answer is not an MCP message (" + _last_line(
                leaf.error.message.splitlines()[0] if leaf.error.message else "")[:120] + ")"
        return f"the server answered with error {leaf.code}: {_last_line(leaf.error.message)}"
    text = " ".join(str(leaf).split())[:200]
    if command is None and type(leaf).__module__.split(".")[0] in ("httpx2", "httpcore2"):
        return f"cannot reach {target.url}: {text or type(leaf).__name__}"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


async def list_pages(client: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools
        if cursor in seen:
            raise ToolSourceError("tools/list", f"the server repeated the cursor {cursor[:40]!r}")
        seen.add(cursor)
    raise ToolSourceError("tools/list", f"more than {MAX_PAGES} pages")


class Witness:
    """What a failed connection leaves to explain it: the server's stderr (stdio) and the HTTP
    error statuses it answered with (HTTP; the SDK turns them into a generic JSON-RPC error)."""

    def __init__(self, errlog: Any) -> None:
        self.errlog = errlog
        self.http_errors: list[int] = []

    async def on_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self.http_errors.append(response.status_code)

    def stderr_line(self) -> str:
        self.errlog.seek(0)
        return _last_line(self.errlog.read())


@asynccontextmanager
async def open_client(target: ServerTarget, witness: Witness, read_timeout_s: float | None = None) -> AsyncIterator[Any]:
    """An initialized MCP client connected as ``target`` says (a spawned stdio server, or streamable
    HTTP with its headers), each request answered within ``read_timeout_s`` (None: no limit);
    leaving the block closes it (and stops a stdio server)."""
    from mcp import Client

    if target.command is not None:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=target.command, args=list(target.args), env=target.env or None,
                                        cwd=target.cwd)
        async with Client(stdio_client(params, errlog=witness.errlog), mode="legacy", cache=None,
                          read_timeout_seconds=read_timeout_s) as client:
            yield client
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=target.headers, timeout=httpx2.Timeout(HTTP_TIMEOUT_S),
                                  event_hooks={"response": [witness.on_response]}) as http:
        async with Client(streamable_http_client(str(target.url), http_client=http), mode="legacy",
                          cache=None, read_timeout_seconds=read_timeout_s) as client:
            yield client


async def _fetch_target(target: ServerTarget, witness: Witness) -> ServerTools:
    async with open_client(target, witness) as client:
        info = client.server_info
        return ServerTools(info.name if info is not None else "", await list_pages(client))


def target_secrets(target: ServerTarget) -> list[str]:
    """What a server was given that it may echo: the values of its ``--env`` variables and of the
    ``--header`` headers (a bearer token alone as well)."""
    values = [*(target.env or {}).values(), *(target.headers or {}).values()]
    return [*values, *(v.split(None, 1)[1] for v in values if len(v.split(None, 1)) == 2)]


def failure_line(exc: BaseException, target: ServerTarget, witness: Witness, logs: _LogCapture,
                 timeout_s: float) -> str:
    """One line for what stopped a session with ``target``: a typed cause, the HTTP status it
    answered with, or the exception, with the server's last stderr (or SDK log) line. Nothing the
    server was given to keep secret is repeated (:func:`target_secrets`, a URL's credentials)."""
    from helmdeck_dspy.io.redaction import redact

    leaf = _leaves(exc)[0]
    if isinstance(leaf, ToolSourceError):
        return redact(leaf.detail, target_secrets(target)) or leaf.detail
    if witness.http_errors:
        return _http_status_text(witness.http_errors[0])
    said = witness.stderr_line() or _last_line("\n".join(logs.messages[:1]))
    line = _describe(leaf, target, timeout_s)
    line += f"; it said: {said}" if said and said not in line else ""
    return redact(line, target_secrets(target)) or line


def _http_status_text(code: int) -> str:
    if code in (401, 403):
        return f"the server refused the request with HTTP {code} (pass credentials with --header 'Authorization: ...')"
    return f"the server answered HTTP {code}"


def list_server_tools(target: ServerTarget, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> ServerTools:
    """List every tool of the server ``target`` names (a stdio command or a streamable-HTTP URL).

    Args:
        target: The command (with arguments and extra environment) or the URL (with headers).
        timeout_s: The limit for start, handshake and every page together.

    Raises:
        ToolSourceError: The server could not be started, reached or listed (one line).
        MissingExtraError: The MCP SDK is not installed.
    """
    try:
        import anyio
        from mcp import Client  # noqa: F401
    except ImportError:
        raise MissingExtraError(NEEDS_SDK) from None

    async def run(witness: Witness) -> ServerTools:
        with anyio.fail_after(timeout_s):
            return await _fetch_target(target, witness)

    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog, quiet_sdk_logs() as logs:
        witness = Witness(errlog)
        try:
            return anyio.run(run, witness)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line naming the source
            raise ToolSourceError(target.source, failure_line(exc, target, witness, logs, timeout_s)) from None
