"""``helmdeck-dspy serve``: the planner as an MCP server (tools helmdeck.plan and helmdeck.route)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from helmdeck_dspy.cli.options import (
    FiniteFloat,
    api_base_option,
    budgets_option,
    catalog_option,
    lm_option,
    not_empty,
    plan_sampling,
    ranker_option,
    retries_option,
    timeout_option,
    to_stderr,
)
from helmdeck_dspy.domain import MAX_TIMEOUT_S
from helmdeck_dspy.serve.names import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEFAULT_SESSION_IDLE_S,
    DEFAULT_SESSIONS_PER_CALLER,
    DEFAULT_STEP_CAP,
)


@click.command("serve")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: the MCP client launches this command; http: streamable HTTP on --host/--port.")
@click.option("--openai", "openai_wire", is_flag=True, default=False,
              help="Serve OpenAI's chat completions (POST /v1/chat/completions, GET /v1/models) on --host/--port "
                   "instead of MCP: an agent points its base URL here and its tool calls go through the planner.")
@click.option("--host", default=DEFAULT_HOST, show_default=True, callback=not_empty,
              help="HTTP bind address. Anything but loopback requires bearer tokens.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="HTTP port (0: a free one, announced on stderr).")
@lm_option("LM for every plan call: replay:PATH, sim:PROFILE, local:NAME or a LiteLLM string "
           "(default: call each request's model live).")
@api_base_option("API base URL for an OpenAI-compatible endpoint (vLLM, llama.cpp...).")
@catalog_option
@budgets_option
@click.option("--cache/--no-cache", default=True, show_default=True,
              help="Answer a request sent before from DSPy's response cache (--no-cache: every answer is live).")
@click.option("--history/--no-history", default=True, show_default=True,
              help="Record plans per caller and serve them as helmdeck://my-plans.")
@click.option("--max-steps", type=click.IntRange(1, 100), default=DEFAULT_STEP_CAP, show_default=True,
              help="Step cap of one single_pick loop (prior_steps per intent).")
@click.option("--tokens-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help='TOML file with a [tokens] table of caller = "token" (also $HELMDECK_DSPY_TOKENS_FILE; '
                   "$HELMDECK_DSPY_TOKENS takes name=token pairs). HTTP only.")
@ranker_option
@plan_sampling
@timeout_option
@retries_option
@click.option("--session-idle", "session_idle_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S),
              default=DEFAULT_SESSION_IDLE_S, show_default=True,
              help="HTTP: seconds a session may sit with no request in flight before it is closed.")
@click.option("--sessions-per-caller", type=click.IntRange(1, 10_000), default=DEFAULT_SESSIONS_PER_CALLER,
              show_default=True, help="HTTP: open sessions one caller may hold (tokenless clients share one count).")
def serve_cmd(
    transport: Literal["stdio", "http"], openai_wire: bool, host: str, port: int, lm_spec: str | None, api_base: str | None,
    catalog_path: str | None, budgets_path: str | None, cache: bool, history: bool, max_steps: int, tokens_file: Path | None,
    ranker: str,
    temperature: float | None, seed: int | None, timeout_s: float | None, retries: int | None, session_idle_s: float, sessions_per_caller: int,
) -> None:
    """Serve the planner over MCP: tools helmdeck.plan and helmdeck.route, resources
    helmdeck://context-budgets, helmdeck://my-plans, helmdeck://routing-guide and helmdeck://models.
    With --openai, serve it as an OpenAI-compatible chat completions endpoint instead."""
    from helmdeck_dspy.serve.config import ServeConfig
    from helmdeck_dspy.serve.server import run

    _check_transport(transport, openai_wire)
    config = ServeConfig(
        transport="openai" if openai_wire else transport, host=host, port=port, lm_spec=lm_spec, api_base=api_base,
        catalog_path=Path(catalog_path) if catalog_path else None,
        budgets_path=Path(budgets_path) if budgets_path else None,
        history=history, cache=cache, max_steps=max_steps, ranker=ranker, temperature=temperature, seed=seed, timeout_s=timeout_s,
        retries=retries, tokens_file=tokens_file, session_idle_s=session_idle_s,
        sessions_per_caller=sessions_per_caller,
    )
    try:
        run(config, to_stderr)
    except KeyboardInterrupt:
        pass


HTTP_ONLY = (("host", "--host"), ("port", "--port"), ("tokens_file", "--tokens-file"),
             ("session_idle_s", "--session-idle"), ("sessions_per_caller", "--sessions-per-caller"))
"""The options that only an HTTP server (``--transport http`` or ``--openai``) has a use for."""


def _check_transport(transport: str, openai_wire: bool) -> None:
    """Refuse options the chosen transport would ignore (a usage error, exit 2): ``--openai`` with
    ``--transport stdio`` given, and an HTTP option given for a stdio server."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    given = {name for name in ("transport", *(n for n, _ in HTTP_ONLY))
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)}
    if openai_wire and transport == "stdio" and "transport" in given:
        raise click.BadParameter("stdio cannot carry --openai: it serves HTTP on --host/--port", param_hint="--transport")
    unused = [option for name, option in HTTP_ONLY if name in given]
    if transport == "stdio" and not openai_wire and unused:
        raise click.UsageError(f"{', '.join(unused)}: only an HTTP server uses {'it' if len(unused) == 1 else 'them'}"
                               " (--transport http or --openai); over stdio the MCP client starts this command")
