"""What a server is started with: :class:`ServeConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.domain import DEFAULT_RANKER, MAX_STDIO_LINE_BYTES, MAX_TIMEOUT_S
from helmdeck_dspy.serve.names import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_SESSION_IDLE_S,
    DEFAULT_SESSIONS_PER_CALLER,
    DEFAULT_STEP_CAP,
    HTTP_PATH,
)


class ServeConfig(BaseModel):
    """How ``helmdeck-dspy serve`` runs.

    Attributes:
        transport: ``stdio`` (the client launches the server), ``http`` (streamable HTTP) or
            ``openai`` (OpenAI's chat completions over HTTP: ``serve.openai_http``).
        host / port / path: Where the HTTP transport listens (port 0 picks a free one).
        lm_spec: The LM every plan call uses (``replay:PATH``, ``sim:PROFILE``, ``local:NAME``, a
            LiteLLM string); None calls each request's ``model`` live through LiteLLM.
        api_base: API base URL for a live OpenAI-compatible endpoint.
        catalog_path / budgets_path: The catalog and budget table (None: the bundled ones).
        history: Write plan_history rows and serve them as ``helmdeck://my-plans``.
        history_path: The history store (None: the user data directory's).
        cache: Answer a request the LM was sent before from DSPy's response cache (off for a live
            study: no cached answer may pass as a live one).
        max_steps: The step cap of one single_pick loop.
        ranker: The catalog ranker for planning and routing.
        temperature / seed: The sampling of every plan call (None: the budget row's temperature, 0,
            and seed 7 where the endpoint takes one).
        timeout_s / retries: Per-attempt deadline and retries of a plan call (None: the defaults).
        tokens_file: A TOML file of bearer tokens (``[tokens]`` caller = token).
        session_idle_s: An HTTP session with no request in flight for this long is closed.
        sessions_per_caller: Open HTTP sessions one caller may hold; another one is refused (503)
            until one of them ends or expires.
        max_line_bytes: The longest JSON-RPC message taken over stdio (HTTP: the SDK's 413 limit).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: Literal["stdio", "http", "openai"] = "stdio"
    host: str = DEFAULT_HOST
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    path: str = HTTP_PATH
    lm_spec: str | None = None
    api_base: str | None = None
    catalog_path: Path | None = None
    budgets_path: Path | None = None
    history: bool = True
    history_path: Path | None = None
    cache: bool = True
    max_steps: int = Field(default=DEFAULT_STEP_CAP, ge=1, le=100)
    ranker: str = DEFAULT_RANKER
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, allow_inf_nan=False)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    retries: int | None = Field(default=None, ge=0, le=19)
    session_idle_s: float = Field(default=DEFAULT_SESSION_IDLE_S, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    sessions_per_caller: int = Field(default=DEFAULT_SESSIONS_PER_CALLER, ge=1, le=10_000)
    max_line_bytes: int = Field(default=MAX_STDIO_LINE_BYTES, ge=1024)
    tokens_file: Path | None = None
