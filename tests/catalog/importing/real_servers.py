"""The four real MCP servers the import tests start over stdio, and a plain JSON-RPC listing of
their tools that does not go through the MCP SDK (to check the importer against).

``mcp-server-time`` and ``mcp-server-git`` come from PyPI (the ``dev`` extra);
``@modelcontextprotocol/server-filesystem`` and ``@modelcontextprotocol/server-memory`` from npm,
installed into the ignored folder ``.mcp-servers/`` (``.ci/run`` does it). A server that is not
installed is reported with the command that installs it, and its tests skip with that reason.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, NamedTuple

from tests.conftest import PROJECT_ROOT

NPM_DIR = PROJECT_ROOT / ".mcp-servers"
NPM_INSTALL = ("npm install --prefix .mcp-servers @modelcontextprotocol/server-filesystem "
               "@modelcontextprotocol/server-memory")
PIP_INSTALL = "pip install -e '.[dev]' (mcp-server-time, mcp-server-git)"
LABELS = ("time", "git", "filesystem", "memory")


class RealServer(NamedTuple):
    """One server: the words that start it, or why it cannot start here."""

    label: str
    argv: list[str] | None
    missing: str = ""

    @property
    def source(self) -> str:
        assert self.argv is not None, self.missing
        return "mcp+stdio:" + shlex.join(self.argv)


def _python_server(label: str, module: str, *args: str) -> RealServer:
    if importlib.util.find_spec(module) is None:
        return RealServer(label, None, f"{module} is not installed: {PIP_INSTALL}")
    return RealServer(label, [sys.executable, "-m", module, *args])


def _npm_server(label: str, script: str, *args: str) -> RealServer:
    path = NPM_DIR / "node_modules" / ".bin" / script
    if shutil.which("node") is None:
        return RealServer(label, None, "node is not on PATH (the npm servers run on Node.js)")
    if not path.exists():
        return RealServer(label, None, f"{script} is not installed: {NPM_INSTALL}")
    return RealServer(label, [str(path), *args])


def real_servers(workdir: Path) -> dict[str, RealServer]:
    """The four servers, set up to work only inside ``workdir`` (a git repository and a folder)."""
    repo = workdir / "repo"
    files = workdir / "files"
    files.mkdir(parents=True, exist_ok=True)
    if shutil.which("git") is None:
        git = RealServer("git", None, "git is not on PATH (mcp-server-git needs a repository)")
    else:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        git = _python_server("git", "mcp_server_git", "--repository", str(repo))
    return {
        "time": _python_server("time", "mcp_server_time"),
        "git": git,
        "filesystem": _npm_server("filesystem", "mcp-server-filesystem", str(files)),
        "memory": _npm_server("memory", "mcp-server-memory"),
    }


def server_env(workdir: Path) -> dict[str, str]:
    """Extra environment for the servers: the memory server keeps its graph under ``workdir``."""
    return {"MEMORY_FILE_PATH": str(workdir / "memory.jsonl")}


def raw_tools_list(argv: list[str], env: dict[str, str], timeout_s: float = 60) -> list[dict[str, Any]]:
    """Every tool a stdio server lists, read with plain JSON-RPC lines (initialize, initialized,
    tools/list page by page), not with the MCP SDK. The server is stopped before this returns."""
    import os

    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, **env})
    watchdog = threading.Timer(timeout_s, proc.kill)
    watchdog.start()
    try:
        def call(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                message = json.loads(line)
                if message.get("id") == msg_id:
                    assert "result" in message, message
                    return message["result"]
            raise AssertionError(f"{argv[0]} closed stdout before answering {method}")

        call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw-test-client", "version": "0"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        tools: list[dict[str, Any]] = []
        cursor = None
        for page in range(2, 100):
            result = call(page, "tools/list", {"cursor": cursor} if cursor else {})
            tools += result["tools"]
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise AssertionError("more than 98 pages")
    finally:
        watchdog.cancel()
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
