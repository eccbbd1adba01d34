"""A bounded multi-prompt cache for llama-cpp-python's server (runs inside the server process).

llama.cpp keeps one evaluated prompt and reuses its longest common prefix with the next one. A
second prompt in between (the planner's narrowed recheck over 10 tools, another caller's request)
evicts it, and the next call over the whole tool list evaluates it again: about 100 s for 57 tools
on 2 cores. llama-cpp-python's ``LlamaRAMCache`` keeps several evaluated states and loads the one
with the longest common prefix, but counts only the llama.cpp state against its capacity: each
state also holds a copy of the logits buffer (``n_batch x vocabulary`` floats, 311 MB for Qwen's
vocabulary), so over many short prompts it grew without bound (23 GB in one run).

:func:`install` replaces the server's RAM cache class, before the server starts, with one that
counts every byte a state holds and keeps at most ``entries`` states, least recently used first out.
"""

from __future__ import annotations

from typing import Any

DEFAULT_ENTRIES = 4
"""States kept: an agent's whole-list prompt, a narrowed recheck, and two more callers' prompts."""
DEFAULT_BYTES = 4 << 30
"""The byte capacity handed to the server (every byte of a state counted)."""


def state_bytes(state: Any) -> int:
    """Every byte a saved state holds: llama.cpp's state, the logits copy and the token ids."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def bounded_cache(base: Any, entries: int) -> type:
    """A subclass of llama-cpp-python's RAM cache ``base`` that counts :func:`state_bytes` and keeps at
    most ``entries`` states."""

    def cache_size(self: Any) -> int:
        return sum(state_bytes(s) for s in self.cache_state.values())

    def setitem(self: Any, key: Any, value: Any) -> None:
        base.__setitem__(self, key, value)  # evicts by capacity, reading cache_size
        while len(self.cache_state) > entries:
            self.cache_state.popitem(last=False)

    return type("BoundedRAMCache", (base,), {"cache_size": property(cache_size), "__setitem__": setitem,
                                             "__module__": __name__})


def install(entries: int) -> None:
    """Make the server's ``--cache true --cache_type ram`` use the bounded cache (import before the server)."""
    import llama_cpp

    llama_cpp.LlamaRAMCache = bounded_cache(llama_cpp.LlamaRAMCache, entries)  # read by llama_cpp.server.model
