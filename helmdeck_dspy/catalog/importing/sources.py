"""Where ``catalog import`` reads tools from: the source specs and reading each one.

A source is written as one of:

- ``mcp+stdio:COMMAND ARGS`` — a server started as a subprocess (words split as a shell would);
- ``mcp+http:URL`` — a streamable-HTTP server (``mcp+http://host/mcp`` and
  ``mcp+https://host/mcp`` also work);
- a path to a JSON file holding an MCP ``tools/list`` result, an OpenAI ``tools`` array or
  Anthropic ``tools``.

``LABEL=`` before any of them names the source; otherwise the label comes from the server package
on the command line (``mcp-server-git`` → ``git``, ``@modelcontextprotocol/server-memory`` →
``memory``), else the name the server gave in its handshake, else the file's stem. Labels prefix
tool names that would clash (``git__git_log``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.catalog.importing.mcp_fetch import DEFAULT_TIMEOUT_S, ServerTarget, list_server_tools
from helmdeck_dspy.catalog.importing.shapes import ToolList, read_tool_list
from helmdeck_dspy.errors import SourceSpecError, ToolFileError, ToolListError, ToolSourceError
from helmdeck_dspy.io.datafiles import read_json
from helmdeck_dspy.io.redaction import register_url_secrets

SourceKind = Literal["stdio", "http", "file"]
STDIO_PREFIX = "mcp+stdio:"
HTTP_PREFIXES = ("mcp+http:", "mcp+https:")
_LABEL = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]{0,39})=(.+)$", re.S)
_NOISE = frozenset({"mcp", "server", "servers", "modelcontextprotocol", "main", "index", "py", "js", "mjs", "cjs",
                    "ts", "json", "tools", "node", "modules", "bin"})
_LAUNCHERS = frozenset({"python", "python3", "uv", "uvx", "npx", "node", "bunx", "bun", "deno", "pipx", "run",
                        "exec", "dlx", "pnpm", "yarn", "docker"})


class SourceSpec(BaseModel):
    """One parsed source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(description="The source as given.")
    kind: SourceKind
    label: str = Field(default="", description="The label given with LABEL=, else empty.")
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of a stdio server.")
    url: str = ""
    path: str = ""


class SourceTools(BaseModel):
    """The tools one source gave, under the label its names are prefixed with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: SourceSpec
    label: str
    tools: ToolList


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte: not a file
        return False


def parse_source(text: str, env: dict[str, str] | None = None) -> SourceSpec:
    """Parse a source as written on the command line.

    The credentials an ``mcp+http:`` URL carries are registered as secrets (every error line,
    log record and trace masks them) and the source is shown through
    :func:`~helmdeck_dspy.io.redaction.redact_url` wherever it is printed or written.

    Raises:
        SourceSpecError: An empty command, an unknown kind, a URL that is not http(s), or a path
            that is not a file (a usage error).
    """
    label, body = "", text.strip()
    if not _is_file(body) and (m := _LABEL.match(body)):
        label, body = m.group(1).lower(), m.group(2).strip()
    if body.startswith(STDIO_PREFIX):
        try:
            words = shlex.split(body[len(STDIO_PREFIX):])
        except ValueError as exc:
            raise SourceSpecError(text, f"cannot split the command line: {exc}") from None
        if not words:
            raise SourceSpecError(text, "expected a command after mcp+stdio:")
        return SourceSpec(text=text, kind="stdio", label=label, command=words[0], args=tuple(words[1:]),
                          env=dict(env or {}))
    for prefix in HTTP_PREFIXES:
        if body.startswith(prefix):
            url = body[len(prefix):].strip()
            if url.startswith("//"):  # mcp+http://host/mcp: the scheme is the source kind's
                url = prefix[len("mcp+"):] + url
            if not re.match(r"^https?://[^/\s]+", url):
                raise SourceSpecError(text, "expected an http:// or https:// URL after mcp+http:")
            register_url_secrets(url)
            return SourceSpec(text=text, kind="http", label=label, url=url)
    if body.startswith("mcp+"):
        raise SourceSpecError(text, "unknown source kind; expected mcp+stdio:COMMAND, mcp+http:URL or a JSON file")
    if not _is_file(body):
        raise SourceSpecError(text, "no such file (a source is mcp+stdio:COMMAND, mcp+http:URL or a JSON file)")
    return SourceSpec(text=text, kind="file", label=label, path=body)


def label_words(text: str) -> str:
    """A label from a package, module or server name: lower case, words joined by '-', the words
    every server shares (mcp, server, ...) left out; '' when nothing else is left."""
    text = re.sub(r"@[\d.^~<>=*x-]+$", "", text.rsplit("/", 1)[-1])  # a path's last part, no @version
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in _NOISE]
    return "-".join(words)[:40]


def _command_label(spec: SourceSpec) -> str:
    """The label a command line suggests: its first word (command or argument) that names a server."""
    words = [spec.command, *spec.args]
    for word in words:
        if word.startswith("-") or word.rsplit("/", 1)[-1].lower() in _LAUNCHERS:
            continue
        lowered = word.lower()
        if ("mcp" in lowered or "server" in lowered) and (label := label_words(word)):
            return label
    return ""


def default_label(spec: SourceSpec, server_name: str = "") -> str:
    """The label of a source given none: from the command line, else the server's name, else the
    file's stem or the URL's host, else ``server``."""
    if spec.kind == "stdio" and (label := _command_label(spec)):
        return label
    if server_name and (label := label_words(server_name)):
        return label
    if spec.kind == "file":
        return label_words(Path(spec.path).stem) or "tools"
    if spec.kind == "http":
        try:
            host = urlsplit(spec.url).hostname or ""
        except ValueError:
            host = ""
        return label_words(host.replace(".", "-")) or "server"  # never the user info: it may be a token
    return "server"


def read_tool_file(path: str | Path) -> ToolList:
    """A JSON file holding a tool list in one of the shapes (a single page: no cursor to follow).

    Raises:
        ToolFileError: Unreadable, not JSON, or in none of the shapes (naming the tool at fault).
    """
    data = read_json(path, ToolFileError)
    try:
        return read_tool_list(data)
    except ToolListError as exc:
        raise ToolFileError(str(path), str(exc)) from None


def read_source(spec: SourceSpec, *, headers: dict[str, str] | None = None,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> SourceTools:
    """Read one source's tools (every page of a server's list).

    Raises:
        ToolSourceError: A server that cannot be started, reached or listed, or that lists a
            malformed tool.
        ToolFileError: A file that is unreadable or in none of the shapes.
    """
    if spec.kind == "file":
        tools = read_tool_file(spec.path)
        return SourceTools(spec=spec, label=spec.label or default_label(spec), tools=tools)
    if spec.kind == "stdio":
        target = ServerTarget(spec.text, command=spec.command, args=spec.args, env=spec.env)
    else:
        target = ServerTarget(spec.text, url=spec.url, headers=headers)
    listed = list_server_tools(target, timeout_s=timeout_s)
    try:
        tools = read_tool_list({"tools": listed.tools})
    except ToolListError as exc:
        raise ToolSourceError(spec.text, f"listed a tool that cannot be read: {exc}") from None
    return SourceTools(spec=spec, label=spec.label or default_label(spec, listed.server_name), tools=tools)
