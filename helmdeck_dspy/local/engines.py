"""The programs that can serve a local model: one class per engine, chosen by name.

- ``llama-cpp-python`` (the default; the ``local`` extra): its ``llama_cpp.server`` module, run by
  a launcher that bounds its RAM prompt cache, adds the next-token route
  (:mod:`helmdeck_dspy.local.next_token`) and shows the model its earlier tool calls' arguments as
  objects (:mod:`helmdeck_dspy.local.tool_arguments`).
- ``llama-server``: llama.cpp's own server, built from the llama.cpp tree the pinned
  llama-cpp-python source distribution vendors (``scripts/build_llama_server.sh``, ``make
  llama-server``; the flags of the extra, ``scripts/cmake_args.sh``). It reuses chunks of a cached prompt by
  shifting their keys and values (``--cache-reuse``), keeps evaluated prompts in host memory
  (``--cache-ram``), serves ``--parallel`` slots, and says its context and settings at ``GET /props``.
  Found at ``$HELMDECK_LLAMA_SERVER``, else ``<models dir>/engines/llama-server``, else on ``PATH``.

Each engine gives the program and flags of one server (:meth:`Engine.launcher`,
:meth:`Engine.flags`), what it runs with for
records (:meth:`Engine.settings`), and one line naming what is missing when it cannot run
(:meth:`Engine.require`). :class:`~helmdeck_dspy.local.server.LocalServer` runs any of them the same way.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from helmdeck_dspy.errors import LocalModelError, MissingExtraError

EngineName = Literal["llama-cpp-python", "llama-server"]
ENGINE_ENV = "HELMDECK_LOCAL_ENGINE"
"""Names the engine ``local:NAME`` LMs are served with (default: ``llama-cpp-python``)."""
LLAMA_SERVER_ENV = "HELMDECK_LLAMA_SERVER"
"""The ``llama-server`` program to run, when not the one ``make llama-server`` built."""
HOST = "127.0.0.1"


class ServerOptions(Protocol):
    """What an engine reads of :class:`helmdeck_dspy.local.server.ServerOptions`."""

    n_ctx: int
    n_threads: int
    prompt_cache_entries: int
    slots: int
    cache_reuse: int


# Runs the server module after asking Linux to SIGKILL it when its parent thread exits (argv[1]
# is the parent's pid, 0 = do not ask); exits at once if the parent is already gone. SIGKILL, not
# SIGTERM: on SIGTERM uvicorn waits for the answer in progress, which nobody will read.
LAUNCHER = """\
import os, runpy, signal, sys
parent = int(sys.argv.pop(1))
entries = int(sys.argv.pop(1))
if entries:
    from helmdeck_dspy.local.prefix_cache import install
    install(entries)
from helmdeck_dspy.local.next_token import install_route
install_route()
from helmdeck_dspy.local.tool_arguments import install as decode_tool_arguments
decode_tool_arguments()
if parent and sys.platform.startswith("linux"):
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(0)
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


class Engine:
    """A program that serves one GGUF file on an OpenAI-compatible route."""

    name: ClassVar[EngineName]

    def require(self) -> None:
        """Raise :class:`MissingExtraError` (one line saying how to get it) when it cannot run here."""
        raise NotImplementedError

    def version(self) -> str | None:
        """The engine's version, for records (None: unknown)."""
        raise NotImplementedError

    def launcher(self, options: ServerOptions, watch: int) -> list[str]:
        """The program to run, before its flags (``watch``: a parent pid the server should die with,
        0 for none)."""
        raise NotImplementedError

    def flags(self, gguf: Path, alias: str, port: int, options: ServerOptions) -> list[str]:
        """The server's flags."""
        raise NotImplementedError

    def settings(self, options: ServerOptions) -> dict[str, Any]:
        """The settings that shape its answers and speed, beyond the shared ones."""
        return {}


class LlamaCppPython(Engine):
    """llama-cpp-python's server (see :mod:`helmdeck_dspy.local.server` for its flags)."""

    name: ClassVar[EngineName] = "llama-cpp-python"
    MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
    """Top-level modules of ``llama-cpp-python[server]``; looked up without importing them."""
    INSTALL_HINT = "pip install 'helmdeck-dspy[local]'"

    def require(self) -> None:
        missing = [m for m in self.MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise MissingExtraError(f"local models need llama-cpp-python's server (missing: {', '.join(missing)}); "
                                    f"install it with: {self.INSTALL_HINT}")

    def version(self) -> str | None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("llama-cpp-python")
        except PackageNotFoundError:
            return None

    def launcher(self, options: ServerOptions, watch: int) -> list[str]:
        return [sys.executable, "-c", LAUNCHER, str(watch), str(options.prompt_cache_entries)]

    def flags(self, gguf: Path, alias: str, port: int, options: ServerOptions) -> list[str]:
        from helmdeck_dspy.local.prefix_cache import DEFAULT_BYTES

        o = options
        cache = (["--cache", "true", "--cache_type", "ram", "--cache_size", str(DEFAULT_BYTES)]
                 if o.prompt_cache_entries else ["--cache", "false"])
        return ["--model", str(gguf), "--model_alias", alias, "--host", HOST, "--port", str(port),
                "--n_ctx", str(o.n_ctx), "--n_threads", str(o.n_threads), "--n_threads_batch", str(o.n_threads),
                *cache, "--logits_all", "false", "--interrupt_requests", "false"]

    def settings(self, options: ServerOptions) -> dict[str, Any]:
        return {"logits_all": False}


REPEAT_PENALTY = "1.1"
"""llama-cpp-python's server penalises a repeat of the last 64 tokens by 1.1 unless a request says
otherwise, and every answer the project recorded on it was sampled so; llama-server's default is 1.0.
Without it the 0.5B, asked for the weather in Oslo at temperature 0, wrote a list of calls that never
closed (1,500 tokens of cities) where llama-cpp-python's answer closed after one call."""


class LlamaServer(Engine):
    """llama.cpp's ``llama-server``: one slot by default (as llama-cpp-python serves), chunk reuse on, and
    llama-cpp-python's repeat penalty."""

    name: ClassVar[EngineName] = "llama-server"
    BUILD_HINT = "build it with: make llama-server (about 10 minutes on 2 cores), or set HELMDECK_LLAMA_SERVER"

    def program(self) -> str | None:
        """The ``llama-server`` to run, or None when there is none."""
        from helmdeck_dspy.local.registry import models_dir

        named = os.environ.get(LLAMA_SERVER_ENV)
        if named:
            return named if Path(named).is_file() and os.access(named, os.X_OK) else None
        built = models_dir() / "engines" / "llama-server"
        if built.is_file() and os.access(built, os.X_OK):
            return str(built)
        return shutil.which("llama-server")

    def require(self) -> None:
        if self.program() is None:
            named = os.environ.get(LLAMA_SERVER_ENV)
            where = f"{LLAMA_SERVER_ENV}={named} is no executable file" if named else "no llama-server was found"
            raise MissingExtraError(f"{where}; {self.BUILD_HINT}")

    def version(self) -> str | None:
        program = self.program()
        if program is None:
            return None
        try:
            done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        line = next((s for s in (done.stdout + done.stderr).splitlines() if s.startswith("version:")), "")
        return line.removeprefix("version:").strip() or None

    def launcher(self, options: ServerOptions, watch: int) -> list[str]:
        self.require()
        return [str(self.program())]

    def flags(self, gguf: Path, alias: str, port: int, options: ServerOptions) -> list[str]:
        from helmdeck_dspy.local.prefix_cache import DEFAULT_BYTES

        o = options
        cache_mib = DEFAULT_BYTES >> 20 if o.prompt_cache_entries else 0  # the same bound as the other engine's
        return ["--model", str(gguf), "--alias", alias, "--host", HOST, "--port", str(port),
                "--ctx-size", str(o.n_ctx), "--threads", str(o.n_threads), "--threads-batch", str(o.n_threads),
                "--parallel", str(o.slots), "--cache-reuse", str(o.cache_reuse), "--cache-ram", str(cache_mib),
                "--repeat-penalty", REPEAT_PENALTY, "--repeat-last-n", "64", "--jinja", "--no-webui"]

    def settings(self, options: ServerOptions) -> dict[str, Any]:
        return {"slots": options.slots, "cache_reuse": options.cache_reuse}


ENGINES: dict[str, Engine] = {e.name: e for e in (LlamaCppPython(), LlamaServer())}


def engine_named(name: str) -> Engine:
    """The engine called ``name``.

    Raises:
        ValueError: No engine has that name (the message lists them).
    """
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown local engine {name!r}: expected one of {', '.join(ENGINES)}") from None


def default_engine() -> EngineName:
    """The engine ``local:NAME`` LMs use: ``$HELMDECK_LOCAL_ENGINE``, else llama-cpp-python.

    Raises:
        LocalModelError: The variable names no engine.
    """
    name = os.environ.get(ENGINE_ENV) or "llama-cpp-python"
    try:
        return engine_named(name).name
    except ValueError as exc:
        raise LocalModelError(f"{ENGINE_ENV}: {exc}") from None
