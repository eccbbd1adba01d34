"""A bounded multi-prompt cache for llama-cpp-python's server (runs inside the server process).

llama.cpp keeps one evaluated prompt and reuses its longest common prefix with the next one. A
second prompt in between (the planner's narrowed recheck over 10 tools, another caller's request)
evicts it, and the next call over the whole tool list evaluates it again: about 100 s for 57 tools
on 2 cores. llama-cpp-python's ``LlamaRAMCache`` keeps several evaluated states and loads the one
with the longest common prefix, but counts only the llama.cpp state against its capacity: each
state also holds a copy of the logits buffer (``n_batch x vocabulary`` floats, 311 MB for Qwen's
vocabulary), so over many short prompts it grew without bound (23 GB in one run).

:func:`install` replaces the server's RAM cache class, before the server starts, with one that
counts every byte a state holds and keeps at most ``entries`` states. Which state goes is chosen by
openings, not by age alone (experiments/e2e/openings-dev): a prompt that repeats most of a kept
state (:func:`repeats`: the next request over the same tool list, the next turn of a conversation)
replaces it, so each opening holds one state; and a state whose opening no later prompt repeated (a
narrowed recheck, asked once per request) goes before one whose opening did. Plain least-recently-used
order let a task's one-off prompts push the planner's whole-list opening and the conversation's
opening out, and each came back as a cold prefill of 80-114 s (experiments/e2e/fallback-test).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DEFAULT_ENTRIES = 4
"""States kept: the planner's whole-list opening, the conversation's, one more caller's and a one-off."""
DEFAULT_BYTES = 4 << 30
"""The byte capacity handed to the server (every byte of a state counted)."""
REPEAT_SHARE = 0.5
"""A prompt repeats a kept state when their common prefix is at least this share of the state's tokens."""


def state_bytes(state: Any) -> int:
    """Every byte a saved state holds: llama.cpp's state, the logits copy and the token ids."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def repeats(kept: Sequence[int], tokens: Sequence[int]) -> bool:
    """Whether ``tokens`` repeat most of the kept state's tokens (:data:`REPEAT_SHARE`)."""
    return bool(kept) and common_prefix(kept, tokens) >= REPEAT_SHARE * len(kept)


def bounded_cache(base: Any, entries: int) -> type:
    """A subclass of llama-cpp-python's RAM cache ``base`` that counts :func:`state_bytes`, keeps at most
    ``entries`` states, one per opening, and evicts one-off states first (least recently used among
    them), then the least recently used."""

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        base.__init__(self, *args, **kwargs)
        self.reused = set()  # keys whose opening a later prompt repeated

    def cache_size(self: Any) -> int:
        return sum(state_bytes(s) for s in self.cache_state.values())

    def getitem(self: Any, key: Sequence[int]) -> Any:
        key = tuple(key)
        best = max(self.cache_state, key=lambda k: common_prefix(k, key), default=None)
        if best is None or not common_prefix(best, key):
            raise KeyError("Key not found")
        if repeats(best, key):  # a shared preamble alone neither refreshes nor marks a state
            self.cache_state.move_to_end(best)
            self.reused.add(best)
        return self.cache_state[best]

    def setitem(self: Any, key: Sequence[int], value: Any) -> None:
        key = tuple(key)
        replaced = [k for k in self.cache_state if k == key or repeats(k, key)]
        for k in replaced:
            del self.cache_state[k]
        inherited = any(k in self.reused for k in replaced)
        self.reused.difference_update(replaced)
        if inherited:
            self.reused.add(key)
        self.cache_state[key] = value
        while len(self.cache_state) > entries or self.cache_size > self.capacity_bytes:
            others = [k for k in self.cache_state if k != key]
            if not others:
                break
            victim = next((k for k in others if k not in self.reused), others[0])
            del self.cache_state[victim]
            self.reused.discard(victim)

    return type("BoundedRAMCache", (base,), {"__init__": init, "cache_size": property(cache_size),
                                             "__getitem__": getitem, "__setitem__": setitem,
                                             "__module__": __name__})


def install(entries: int) -> None:
    """Make the server's ``--cache true --cache_type ram`` use the bounded cache (import before the server)."""
    import llama_cpp

    llama_cpp.LlamaRAMCache = bounded_cache(llama_cpp.LlamaRAMCache, entries)  # read by llama_cpp.server.model
