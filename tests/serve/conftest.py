"""Helpers for the MCP server tests: servers over stdio (a spawned ``helmdeck-dspy serve``) and
over streamable HTTP (in process, on 127.0.0.1 and a free port, stopped by the test), and the MCP
SDK's own client for both. Replay files are written by each test in its tmp_path."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from helmdeck_dspy.serve.auth import CallerTokens
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.server import http_app, listen_socket
from helmdeck_dspy.serve.service import PlanService

NO_SDK = "the 'serve' extra is not installed: pip install 'helmdeck-dspy[serve]'"
"""The skip reason of the tests that talk MCP (the SDK is imported inside the helpers below)."""

LOOPBACK = "127.0.0.1"


def serve_command() -> list[str]:
    """The console script beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("helmdeck-dspy")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", "serve"]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a spawned server: user data under ``home``, the suite's DSPy cache."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "XDG_CACHE_HOME", "HELMDECK_DSPY_CACHE", "DSPY_CACHEDIR",
                                       "HELMDECK_DSPY_MODELS")
            if k in os.environ}
    return {**keep, "HELMDECK_DSPY_HOME": str(home), **extra}


def stdio_client(home: Path, *args: str, env: dict[str, str] | None = None, read_timeout: float = 120) -> Any:
    """An SDK client that spawns ``helmdeck-dspy serve ARGS`` and talks to it over stdio (each
    request may take ``read_timeout`` seconds)."""
    from mcp import Client, StdioServerParameters

    command, *rest = serve_command()
    params = StdioServerParameters(command=command, args=[*rest, *args], env=env or server_env(home))
    return Client(params, read_timeout_seconds=read_timeout)


class RunningServer(NamedTuple):
    url: str
    service: PlanService


@contextmanager
def http_server(config: ServeConfig, tokens: CallerTokens | None = None) -> Iterator[RunningServer]:
    """``config``'s server over streamable HTTP on 127.0.0.1 and a free port, in a thread; stopped
    (and its socket closed) when the block ends."""
    import uvicorn

    service = PlanService(config)
    sock = listen_socket(LOOPBACK, 0)
    port = sock.getsockname()[1]
    app = http_app(service, tokens or CallerTokens(), host=LOOPBACK, port=port, path=config.path)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the HTTP server did not start"
    try:
        yield RunningServer(f"http://{LOOPBACK}:{port}{config.path}", service)
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
        assert not thread.is_alive(), "the HTTP server did not stop"


@asynccontextmanager
async def http_client(url: str, token: str | None = None) -> AsyncIterator[Any]:
    """An SDK client over streamable HTTP, sending ``token`` as a bearer token when given."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client):
        yield client


def config_for(tmp_path: Path, replay: Path, **kw: Any) -> ServeConfig:
    """A server config with a replay LM and its own history store under ``tmp_path``."""
    return ServeConfig(transport="http", lm_spec=f"replay:{replay}", history_path=tmp_path / "history.sqlite", **kw)
