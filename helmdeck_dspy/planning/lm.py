"""LM specs: how ``--lm`` strings become ``dspy.LM`` objects.

- ``replay:PATH`` — serve the completions recorded in a trace file, in file order;
- ``sim:PROFILE`` — the simulated tier LM (profiles under ``eval/profiles/``);
- anything else — a LiteLLM model string (``openrouter/...``, ``ollama_chat/...``,
  ``openai/...`` with ``api_base``), called live with a timeout and retries.

Live LMs go through DSPy's engine selection (``engine="auto"``: DSPy's native lm15 client for
the providers it knows, LiteLLM for the rest); ``engine="litellm"`` forces LiteLLM. The planner
builds its LMs with ``num_retries=0`` and the timeout of its :class:`RetryPolicy`: retries are
:mod:`helmdeck_dspy.planning.resilience.loop`'s, typed and counted, never DSPy's or LiteLLM's as well. The
API key, when given, lives only on the LM object; nothing the project writes includes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import LMSpecError

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 2



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


def make_lm(
    spec: str,
    *,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    num_retries: int = DEFAULT_RETRIES,
    cache: bool = True,
    seed: int = 0,
    api_key: str | None = None,
    engine: str = "auto",
) -> Any:
    """Build a ``dspy.LM`` for an LM spec (see module docstring).

    ``timeout``, ``num_retries``, ``api_key`` and ``engine`` apply to live LMs only.
    """
    import dspy

    kind = lm_kind(spec)
    if kind == "replay":
        from helmdeck_dspy.engines.replay import ReplayEngine

        path = Path(spec.removeprefix("replay:"))
        if not path.is_file():
            raise LMSpecError(f"replay file not found: {path}")
        # No cache: a cached answer would not consume the next record.
        return dspy.LM(f"replay/{path.name}", engine=ReplayEngine(path), cache=False)
    if kind == "sim":
        from helmdeck_dspy.engines.sim import SimEngine, load_profile, sim_model_name

        profile = load_profile(spec.removeprefix("sim:"))
        return dspy.LM(sim_model_name(profile, seed), engine=SimEngine(profile, seed=seed), cache=cache)
    if "/" not in spec:
        raise LMSpecError(f"not a LiteLLM model string (provider/model): {spec!r}; or use replay:PATH / sim:PROFILE")
    kwargs: dict[str, Any] = {"timeout": timeout}
    if api_base:
        kwargs["api_base"] = api_base
    from helmdeck_dspy.planning.redaction import (
        protect_loggers,
        register_env_secrets,
        register_secret,
    )

    register_secret(api_key)
    register_env_secrets()  # keys LiteLLM reads from the environment are masked the same way
    protect_loggers()
    if api_key:
        kwargs["api_key"] = api_key
    return dspy.LM(spec, num_retries=num_retries, cache=cache, engine=engine, **kwargs)
