"""How DSPy talks to a llama.cpp server: the ``llamacpp/`` model-string prefix.

DSPy's native engine sends an ``openai/...`` model's output cap as ``max_completion_tokens``, the
field OpenAI's own API wants. llama.cpp's server (``llama_cpp.server`` 0.3.x) knows only
``max_tokens`` and silently drops the other, so an ``openai/`` LM pointed at it generates until
the context window is full, whatever cap the budget set (measured: Gemma 3 270M ran 6,711 tokens
for a 1,500-token cap).

:func:`declare_llamacpp` registers a provider ``llamacpp`` with DSPy's native engine that speaks
the same Chat Completions wire but names the cap ``max_tokens``. ``llamacpp/MODEL`` with an
``api_base`` is then the LM spec for any llama.cpp server; ``local:NAME`` uses it for the servers
this project starts. Importing this module imports dspy: callers import it when they build an LM.
"""

from __future__ import annotations

PREFIX = "llamacpp"


def declare_llamacpp() -> str:
    """Register the ``llamacpp`` provider (idempotent) and return the model-string prefix."""
    from dspy.lm15 import AccessPolicy, OpenAIChatCompat, ProviderDefinition, register_provider

    wire = OpenAIChatCompat(
        instruction_role="system",
        max_tokens_field="max_tokens",  # the one field llama.cpp reads for the output cap
        thinking_format="none",  # no reasoning dial on llama.cpp's server
        cache_control="none",
        tool_result_name="omit",
        strict_tools="omit",
    )
    access = AccessPolicy(provider=PREFIX, env_keys=(), base_url="http://127.0.0.1:8080/v1")
    register_provider(ProviderDefinition.chat(access, compat=wire, placeholder_key="none"))
    return PREFIX
