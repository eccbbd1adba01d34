"""MCP sessions kept open for a run: :class:`ToolSessions`.

The planner and its loop are synchronous; the MCP SDK is asynchronous. The sessions live on one
event loop in a background thread (an anyio blocking portal), opened from the same source specs as
``catalog import`` (``mcp+stdio:``, ``mcp+http:`` with headers; a JSON file lists tools but cannot
run them). Opening lists every server's tools, so the run's catalog is exactly what the open
sessions serve. Closing stops every stdio server.

A call returns a :class:`~helmdeck_dspy.planning.execution.StepOutcome` (the result's text, its
structured content, the error flag: the server's ``isError``, or a failure text of a server that
reports failures only in text, :mod:`helmdeck_dspy.run.error_texts`). A call the server refuses
with a JSON-RPC error (an unknown tool, invalid arguments) is a failed step the planner can
re-plan from; a server that exits or does not answer within the call's timeout raises
:class:`~helmdeck_dspy.errors.ToolServerError` with one line naming the server and what it said
last.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from helmdeck_dspy.catalog.importing.mcp_fetch import (
    DEFAULT_TIMEOUT_S,
    NEEDS_SDK,
    ServerTarget,
    Witness,
    failure_line,
    list_pages,
    open_client,
    quiet_sdk_logs,
)
from helmdeck_dspy.catalog.importing.merge import merge_sources
from helmdeck_dspy.catalog.importing.shapes import read_tool_list
from helmdeck_dspy.catalog.importing.sources import SourceSpec, SourceTools, default_label, parse_source
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.errors import MissingExtraError, SourceSpecError, ToolListError, ToolServerError, ToolSourceError
from helmdeck_dspy.planning.execution import StepOutcome
from helmdeck_dspy.run.error_texts import reports_error

CALL_TIMEOUT_S = 60.0
"""How long one tool call may take before its server is taken as hung."""


def result_text(result: Any) -> str:
    """A ``CallToolResult``'s content as text: text blocks as they are, an embedded resource's
    text, other blocks named by their kind; the structured content when there is no text."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or type(block).__name__} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class _Server:
    """One open session: its target, the client on the portal's loop, and its witness."""

    def __init__(self, spec: SourceSpec, target: ServerTarget, witness: Witness, logs: Any) -> None:
        self.spec = spec
        self.target = target
        self.witness = witness
        self.logs = logs
        self.client: Any = None
        self.label = spec.label
        self.name = ""
        """The name the server gave in its initialize answer."""


class ToolSessions:
    """Open sessions to MCP servers for the length of a ``with`` block.

    Args:
        sources: Source specs as ``catalog import`` takes them (``LABEL=`` allowed).
        headers: HTTP headers for every ``mcp+http:`` source.
        env: Extra environment for every ``mcp+stdio:`` server.
        cwd: The working folder of every ``mcp+stdio:`` server (default: this process's).
        timeout_s: How long each server may take to start and list its tools.
        prefix: Prefix every tool name with its source's label, not only names two sources share.

    Raises (on entering):
        ToolSourceError: A source that is a file, or a server that cannot be started, reached or
            listed (the servers already started are stopped).
        MissingExtraError: The MCP SDK is not installed.
    """

    def __init__(self, sources: Sequence[str], *, headers: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, cwd: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 prefix: bool = False) -> None:
        self.specs = [parse_source(text, env) for text in sources]
        for spec in self.specs:
            if spec.kind == "file":
                raise SourceSpecError(spec.text, "a tool list file cannot run tools; give the server "
                                                 "(mcp+stdio:COMMAND or mcp+http:URL)")
        self.headers = headers
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.prefix = prefix
        self.sources: list[SourceTools] = []
        self._servers: dict[str, _Server] = {}
        self._stack: ExitStack | None = None
        self._portal: Any = None

    def __enter__(self) -> ToolSessions:
        try:
            import anyio.from_thread
            from mcp import Client  # noqa: F401
        except ImportError:
            raise MissingExtraError(NEEDS_SDK) from None
        stack = ExitStack()
        try:
            self._portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
            for spec in self.specs:
                self._open(spec, stack)
        except BaseException:
            self._close(stack)
            raise
        self._stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._close(self._stack)
            self._stack = None

    @staticmethod
    def _close(stack: ExitStack) -> None:
        try:
            stack.close()
        except Exception:  # noqa: BLE001 - a session that already died cannot be closed cleanly
            pass

    def _open(self, spec: SourceSpec, stack: ExitStack) -> None:
        import anyio

        if spec.kind == "stdio":
            target = ServerTarget(spec.text, command=spec.command, args=spec.args, env=spec.env, cwd=self.cwd)
        else:
            target = ServerTarget(spec.text, url=spec.url, headers=self.headers)
        errlog = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
        logs = stack.enter_context(quiet_sdk_logs())
        server = _Server(spec, target, Witness(errlog), logs)

        async def listed(client: Any) -> tuple[str, list[dict[str, Any]]]:
            with anyio.fail_after(self.timeout_s):
                info = client.server_info
                return (info.name if info is not None else "", await list_pages(client))

        try:
            server.client = stack.enter_context(self._portal.wrap_async_context_manager(
                open_client(target, server.witness, read_timeout_s=self.timeout_s)))
            name, tools = self._portal.call(listed, server.client)
        except Exception as exc:  # noqa: BLE001 - one line naming the source
            raise ToolSourceError(spec.text, failure_line(exc, target, server.witness, logs, self.timeout_s)) from None
        try:
            tool_list = read_tool_list({"tools": tools})
        except ToolListError as exc:
            raise ToolSourceError(spec.text, f"listed a tool that cannot be read: {exc}") from None
        label = spec.label or default_label(spec, name)
        if label in self._servers:
            raise SourceSpecError(spec.text, f"a second source labelled {label!r}; give one LABEL=SOURCE")
        server.label = label
        server.name = name
        self._servers[label] = server
        self.sources.append(SourceTools(spec=spec, label=label, tools=tool_list))

    def catalog(self) -> RoutingGuide:
        """Every open server's tools as one catalog (names prefixed where they clash)."""
        return merge_sources(self.sources, prefix=self.prefix)

    def call(self, server: str, tool: str, args: dict[str, Any], *, timeout_s: float = CALL_TIMEOUT_S) -> StepOutcome:
        """Call ``tool`` (its name on the server) on the server labelled ``server``.

        Raises:
            ToolServerError: The server exited, closed the session or did not answer in time.
            KeyError: No open server has that label.
        """
        import anyio
        from mcp.shared.exceptions import MCPError

        entry = self._servers[server]

        async def call() -> Any:
            with anyio.fail_after(timeout_s):
                return await entry.client.call_tool(tool, args, read_timeout_seconds=timeout_s)

        t0 = time.monotonic()
        try:
            result = self._portal.call(call)
        except MCPError as exc:
            if not _closed(exc):  # the server refused this call: a failed step, the session lives on
                return StepOutcome(text=f"error {exc.code}: {exc.error.message}", error=True,
                                   seconds=round(time.monotonic() - t0, 3))
            raise ToolServerError(server, self._why(entry, exc, timeout_s)) from None
        except TimeoutError:
            raise ToolServerError(server, f"no answer to {tool} within {timeout_s:g} s") from None
        except Exception as exc:  # noqa: BLE001 - a broken stream, an exited process
            raise ToolServerError(server, self._why(entry, exc, timeout_s)) from None
        text = result_text(result)
        return StepOutcome(text=text, structured=result.structured_content,
                           error=bool(result.is_error) or reports_error(entry.name, text),
                           seconds=round(time.monotonic() - t0, 3))

    @staticmethod
    def _why(entry: _Server, exc: BaseException, timeout_s: float) -> str:
        line = failure_line(exc, entry.target, entry.witness, entry.logs, timeout_s)
        return line.replace("before listing its tools", "during a call")


def _closed(exc: Any) -> bool:
    return exc.code == -32000 and "closed" in exc.error.message.lower()

