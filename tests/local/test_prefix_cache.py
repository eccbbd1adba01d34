"""The bounded prompt cache the local server runs with: every byte of a state counted, at most N states."""

from __future__ import annotations

import numpy as np
import pytest

from helmdeck_dspy.local.prefix_cache import bounded_cache, state_bytes

llama = pytest.importorskip("llama_cpp.llama", reason="the local extra (llama-cpp-python) is not installed")
llama_cache = pytest.importorskip("llama_cpp.llama_cache")


def _state(tokens: list[int], logits_rows: int = 4) -> object:
    return llama.LlamaState(input_ids=np.array(tokens, dtype=np.intc),
                            scores=np.zeros((logits_rows, 1000), dtype=np.single), n_tokens=len(tokens),
                            llama_state=b"x" * 100, llama_state_size=100, seed=0)


def test_at_most_n_states_are_kept_and_the_longest_prefix_is_found():
    cache = bounded_cache(llama_cache.LlamaRAMCache, 2)(capacity_bytes=1 << 30)
    whole, narrowed, other = [1, 2, 3, 4, 5, 6], [1, 9, 9], [7, 8]
    cache[whole] = _state(whole)
    cache[narrowed] = _state(narrowed)
    assert cache[[1, 2, 3, 4, 5, 6, 10]].input_ids.tolist() == whole  # the whole list's state, not the last one
    cache[other] = _state(other)  # a third: the least recently used (narrowed) goes
    assert len(cache.cache_state) == 2 and tuple(narrowed) not in cache.cache_state
    assert tuple(whole) in cache.cache_state


def test_the_logits_copy_counts_against_the_capacity():
    one = _state([1, 2], logits_rows=64)
    assert state_bytes(one) == 100 + 64 * 1000 * 4 + 2 * 4
    cache = bounded_cache(llama_cache.LlamaRAMCache, 10)(capacity_bytes=state_bytes(one) * 2)
    for i in range(5):
        cache[[i, 1]] = _state([i, 1], logits_rows=64)
    assert len(cache.cache_state) == 2  # llama-cpp-python's own count (100 bytes each) would keep all 5
    plain = llama_cache.LlamaRAMCache(capacity_bytes=state_bytes(one) * 2)
    for i in range(5):
        plain[[i, 1]] = _state([i, 1], logits_rows=64)
    assert len(plain.cache_state) == 5
