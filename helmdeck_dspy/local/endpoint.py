"""The ``local:NAME`` LM spec: a managed llama.cpp server for the life of the process.

:func:`local_lm_args` starts (once per model per process, then reuses) a server for an
installed model on a free 127.0.0.1 port and returns what an OpenAI-compatible endpoint needs:
the model string ``llamacpp/NAME`` (see :mod:`helmdeck_dspy.local.provider`), the ``api_base``
and a placeholder API key.
:func:`helmdeck_dspy.engines.lm_spec.make_lm` passes them down its ordinary live path, so a local
model is called exactly as any OpenAI-compatible endpoint is. The servers stop when the process
exits (see :mod:`helmdeck_dspy.local.server`).
"""

from __future__ import annotations

import threading

from helmdeck_dspy.local.engines import default_engine
from helmdeck_dspy.local.install import require_installed
from helmdeck_dspy.local.provider import PREFIX as LLAMACPP_PREFIX
from helmdeck_dspy.local.registry import get_model
from helmdeck_dspy.errors import LocalModelError
from helmdeck_dspy.local.server import LocalServer, ServerOptions, require_engine

SPEC_PREFIX = "local:"
LOCAL_API_KEY = "helmdeck-local-no-key"
"""Sent as the API key (the OpenAI client insists on one; the local server checks none). Long and
distinctive on purpose: the planner masks API keys wherever they appear in what it writes."""

_SERVERS: dict[str, LocalServer] = {}
_LOCK = threading.Lock()


def managed_server(name: str, options: ServerOptions | None = None) -> LocalServer:
    """The running server for local model ``name`` in this process, started on first use.

    Raises:
        UnknownModelError: ``name`` is not in the registry (the message lists the known ones).
        MissingExtraError: The ``local`` extra is not installed.
        ModelNotInstalledError: The model is not installed (the message names the install command).
        LocalModelError: The server would not start (with the log's last lines), or it runs already
            with other ``options`` than asked for.
    """
    model = get_model(name)
    with _LOCK:
        server = _SERVERS.get(name)
        if server is not None and server.running:
            if options is not None and (options.n_ctx, options.engine) != (server.options.n_ctx, server.options.engine):
                raise LocalModelError(f"local model {name} runs already on {server.options.engine} with a "
                                      f"{server.options.n_ctx}-token context in this process; {options.engine} "
                                      f"with {options.n_ctx} was asked for")
            return server
        options = options or ServerOptions(engine=default_engine())
        require_engine(options.engine)
        path = require_installed(model)
        server = LocalServer(path, model.name, options=options)
        server.start()
        _SERVERS[name] = server
        return server


def local_lm_args(name: str) -> tuple[str, str, str, int]:
    """``(model string, api_base, api_key, served context)`` for the LM spec ``local:NAME``."""
    server = managed_server(name)
    return f"{LLAMACPP_PREFIX}/{server.alias}", server.api_base, LOCAL_API_KEY, server.options.n_ctx


def local_run_settings(name: str) -> dict[str, object]:
    """What reproduces a call to local model ``name``: its file's SHA-256 and GGUF name, the
    llama.cpp version and the server settings that shape answers (not the port or the path)."""
    model = get_model(name)
    settings = managed_server(name).settings()
    kept = ("n_ctx", "n_threads", "prompt_cache", "logits_all", "slots", "cache_reuse", "engine", "engine_version",
            "cpu_features")
    return {"local_model": model.name, "model_sha256": model.sha256, **{k: settings[k] for k in kept if k in settings}}
