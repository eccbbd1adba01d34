"""LM specs: how ``--lm`` strings become ``dspy.LM`` objects.

- ``replay:PATH`` — serve the completions recorded in a trace file, in file order;
- ``sim:PROFILE`` — the simulated tier LM (profiles under ``eval/profiles/``);
- ``local:NAME`` — an installed local model, served by llama.cpp for the life of the process
  (:mod:`helmdeck_dspy.local.endpoint`) and then called as the live OpenAI-compatible endpoint below;
- ``llamacpp/MODEL`` with ``api_base`` — any llama.cpp server (:mod:`helmdeck_dspy.local.provider`:
  ``openai/`` would send the output cap in a field llama.cpp ignores), called through
  :class:`~helmdeck_dspy.engines.streaming.StreamingEngine`: every answer streamed, stopped where it
  closes or when its attempt is cancelled, and checked against the served context;
- anything else — a LiteLLM model string (``openrouter/...``, ``ollama_chat/...``,
  ``openai/...`` with ``api_base``), called live with a timeout and retries.

Live LMs go through DSPy's engine selection (``engine="auto"``: DSPy's native lm15 client for
the providers it knows, LiteLLM for the rest); ``engine="litellm"`` forces LiteLLM. The planner
builds its LMs with ``num_retries=0`` and the timeout of its retry policy: retries are
:func:`helmdeck_dspy.planning.resilience.loop.run_plan`'s, typed and counted, never DSPy's or
LiteLLM's as well. The API key, when given, lives only on the LM object; nothing the project
writes includes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helmdeck_dspy.domain import DEFAULT_TIMEOUT_S
from helmdeck_dspy.errors import LMSpecError
from helmdeck_dspy.io.redaction import (
    protect_loggers,
    register_env_secrets,
    register_secret,
    register_url_secrets,
)
from helmdeck_dspy.local.endpoint import SPEC_PREFIX as LOCAL_PREFIX
from helmdeck_dspy.local.endpoint import local_lm_args, local_run_settings
from helmdeck_dspy.local.provider import PREFIX as LLAMACPP_PREFIX

DEFAULT_RETRIES = 2
"""Retries a live LM built outside the planner makes on its own (the planner builds with 0)."""


def served_model_id(spec: str) -> str | None:
    """The budget-table id of the model an LM spec calls, whose row bounds what a server sends it:
    a ``local:NAME`` spec's local model id, a LiteLLM string itself (``llamacpp/NAME`` and a custom
    ``--api-base`` included: the row that string looks up), and None for the offline engines
    (``replay:``, ``sim:``), which cost nothing and take anything."""
    if spec.startswith(LOCAL_PREFIX):
        from helmdeck_dspy.local.registry import get_model

        return get_model(spec.removeprefix(LOCAL_PREFIX)).model_id
    return spec if lm_kind(spec) == "live" else None


def lm_kind(spec: str) -> str:
    """``replay``, ``sim`` or ``live``."""
    if spec.startswith("replay:"):
        return "replay"
    if spec.startswith("sim:"):
        return "sim"
    return "live"


def trace_source(spec: str | None) -> str:
    """The ``source`` a trace record gets from the LM spec that produced it: ``live`` (also for
    no spec: the model id called live), ``replay``, or the spec itself for ``sim:<profile>``."""
    kind = lm_kind(spec) if spec else "live"
    return spec if kind == "sim" else kind  # type: ignore[return-value]


def run_settings(spec: str | None) -> dict[str, Any] | None:
    """What a trace record needs to be reproduced beyond its own fields, for LMs that have more
    to say than a model name: a ``local:NAME`` model's file hash, llama.cpp version and server
    settings (the server is started if it is not running). None for other LMs."""
    if spec and spec.startswith(LOCAL_PREFIX):
        return local_run_settings(spec.removeprefix(LOCAL_PREFIX))
    return None


def check_lm_spec(spec: str) -> None:
    """Raise unless ``spec`` names an LM :func:`make_lm` can build, without building it (nothing is
    loaded, started or called): a replay file that exists, a simulator profile that exists (bundled
    by name, or a ``.toml`` path), a known local model, or a ``provider/model`` string.

    Raises:
        LMSpecError: The spec names no replay file, profile or ``provider/model``.
        UnknownModelError: ``local:NAME`` names no local model.
    """
    kind = lm_kind(spec)
    if kind == "replay":
        path = Path(spec.removeprefix("replay:"))
        if not path.is_file():
            raise LMSpecError(f"replay file not found: {path}")
        return
    if kind == "sim":
        from helmdeck_dspy.engines.profile import list_profiles, profiles_dir

        name = spec.removeprefix("sim:")
        path = Path(name) if Path(name).suffix == ".toml" else profiles_dir() / f"{name}.toml"
        if not path.is_file():
            known = list_profiles() + list_profiles(fitted=True)
            raise LMSpecError(f"no simulator profile {name!r}; bundled: {', '.join(known)}, or a .toml file")
        return
    if spec.startswith(LOCAL_PREFIX):
        from helmdeck_dspy.local.registry import get_model

        get_model(spec.removeprefix(LOCAL_PREFIX))
        return
    if "/" not in spec:
        raise LMSpecError(f"not a LiteLLM model string (provider/model): {spec!r}; or use replay:PATH / sim:PROFILE")


def make_lm(
    spec: str,
    *,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    num_retries: int = DEFAULT_RETRIES,
    cache: bool = True,
    seed: int = 0,
    sampling: dict[str, Any] | None = None,
    api_key: str | None = None,
    engine: str = "auto",
) -> Any:
    """Build a ``dspy.LM`` for an LM spec (see module docstring).

    Args:
        spec: ``replay:PATH``, ``sim:PROFILE`` or a LiteLLM model string.
        api_base: API base URL for a live OpenAI-compatible endpoint.
        timeout: HTTP timeout of a live LM, in seconds.
        num_retries: Retries a live LM makes on its own.
        cache: Use DSPy's response cache (live and simulated LMs).
        seed: The simulated LM's seed.
        sampling: Sampling settings sent with every call of a live LM (``temperature``, ``seed``).
        api_key: API key of a live LM (kept on the LM only).
        engine: DSPy engine selection of a live LM (``auto``, ``litellm``, ``lm15``).

    Raises:
        LMSpecError: The spec names no replay file, profile or ``provider/model``.
    """
    import dspy  # heavy: kept off the import path of lm_kind / trace_source users

    check_lm_spec(spec)
    kind = lm_kind(spec)
    if kind == "replay":
        from helmdeck_dspy.engines.replay import ReplayEngine  # imports dspy

        path = Path(spec.removeprefix("replay:"))
        # No cache: a cached answer would not consume the next record.
        return dspy.LM(f"replay/{path.name}", engine=ReplayEngine(path), cache=False)
    if kind == "sim":
        from helmdeck_dspy.engines.sim import (  # imports dspy
            SimEngine,
            load_profile,
            sim_model_name,
        )

        profile = load_profile(spec.removeprefix("sim:"))
        return dspy.LM(sim_model_name(profile, seed), engine=SimEngine(profile, seed=seed), cache=cache)
    n_ctx = None
    if spec.startswith(LOCAL_PREFIX):  # a managed local server, then the ordinary live path
        spec, api_base, api_key, n_ctx = local_lm_args(spec.removeprefix(LOCAL_PREFIX))
    register_secret(api_key)
    register_url_secrets(api_base)  # a password in the URL's user info, secret query values
    register_env_secrets()  # keys LiteLLM reads from the environment are masked the same way
    protect_loggers()
    if spec.startswith(f"{LLAMACPP_PREFIX}/") and api_base:  # streamed, cut at the answer's end, cancellable
        from helmdeck_dspy.engines.streaming import StreamingEngine  # imports dspy

        engine_obj = StreamingEngine(api_base, api_key=api_key, timeout=timeout, n_ctx=n_ctx)
        return dspy.LM(spec, num_retries=num_retries, cache=cache, engine=engine_obj, **(sampling or {}))
    kwargs: dict[str, Any] = {"timeout": timeout}
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    kwargs.update(sampling or {})
    return dspy.LM(spec, num_retries=num_retries, cache=cache, engine=engine, **kwargs)
