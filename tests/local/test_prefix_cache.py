"""The bounded prompt cache the local server runs with: every byte of a state counted, at most N states,
one per opening, one-off states evicted first."""

from __future__ import annotations

import numpy as np
import pytest

from helmdeck_dspy.local.prefix_cache import bounded_cache, common_prefix, repeats, state_bytes

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


def _cache(entries: int) -> object:
    return bounded_cache(llama_cache.LlamaRAMCache, entries)(capacity_bytes=1 << 30)


def _opening(tag: int, n: int = 20) -> list[int]:
    """A long shared prefix (a tool list) that differs per ``tag``."""
    return [tag] * n


def test_repeats_is_a_share_of_the_kept_state():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2 and common_prefix([], [1]) == 0
    assert repeats([1, 2, 3, 4], [1, 2, 9])  # half of the kept tokens
    assert not repeats([1, 2, 3, 4, 5], [1, 2, 9])
    assert not repeats([], [1])


def test_a_prompt_that_repeats_a_state_replaces_it():
    cache = _cache(4)
    first = _opening(1) + [50, 51]  # the whole list, then request A and its answer
    cache[first] = _state(first)
    second = _opening(1) + [60, 61, 62]  # the same list, request B
    assert cache[second[:-1]].input_ids.tolist() == first  # asked: the kept state serves the shared prefix
    cache[second] = _state(second)
    assert list(cache.cache_state) == [tuple(second)]  # one state per opening
    assert tuple(second) in cache.reused  # the opening was repeated, so the new state keeps that mark


def test_one_off_states_go_before_repeated_openings():
    cache = _cache(3)
    planner, conversation = _opening(1), _opening(2)
    for opening in (planner, conversation):  # each opening asked twice: repeated
        cache[opening + [7]] = _state(opening + [7])
        cache[opening + [8]]  # noqa: B018 - the lookup a completion makes before it evaluates
        cache[opening + [8]] = _state(opening + [8])
    for i in range(5):  # narrowed rechecks: each asked once
        oneoff = _opening(10 + i)
        cache[oneoff] = _state(oneoff)
    kept = set(cache.cache_state)
    assert tuple(planner + [8]) in kept and tuple(conversation + [8]) in kept  # older, yet kept
    assert kept - {tuple(planner + [8]), tuple(conversation + [8])} == {tuple(_opening(14))}


def test_a_shared_preamble_alone_does_not_refresh_a_state():
    cache = _cache(2)
    a, b = [0] + _opening(1), [0] + _opening(2)
    cache[a] = _state(a)
    cache[b] = _state(b)
    assert cache[[0, 5, 5]].input_ids.tolist() in (a, b)  # a one-token match still serves
    assert list(cache.cache_state) == [tuple(a), tuple(b)] and not cache.reused  # order and marks unchanged
    with pytest.raises(KeyError):
        cache[[9, 9]]
