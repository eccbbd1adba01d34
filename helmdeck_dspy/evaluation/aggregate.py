"""Mergeable per-group accumulators: constant memory per group, merged across workers."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from helmdeck_dspy.evaluation.replay import RecordOutcome
from helmdeck_dspy.evaluation.stats import Reservoir

PROMPT_BUCKET_TOKENS = 1000
BELOW_CAP = 0.9  # a length cut-off with fewer completion tokens than this share of max_tokens


@dataclass
class GroupAgg:
    """Counts and bounded samples for one group of records."""

    n: int = 0
    strict: int = 0
    repaired: int = 0
    native: int = 0
    from_label: int = 0
    finish: Counter = field(default_factory=Counter)
    finish_raw: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    max_tokens: Counter = field(default_factory=Counter)
    tiers: Counter = field(default_factory=Counter)
    tag_kinds: Counter = field(default_factory=Counter)
    # records, and records that produced a plan, per request mode ("text" JSON, "native" tools offered)
    mode_n: Counter = field(default_factory=Counter)
    mode_ok: Counter = field(default_factory=Counter)
    tokens: Reservoir = field(default_factory=Reservoir)
    clean_tokens: Reservoir = field(default_factory=Reservoir)
    latency: Reservoir = field(default_factory=Reservoir)
    prompt_tokens: Reservoir = field(default_factory=Reservoir)
    # prompt-size bucket -> [records, length cut-offs, cut-offs well below the output cap]
    length_by_prompt: dict[int, list[int]] = field(default_factory=dict)
    length_below_cap: int = 0
    leak: int = 0
    tags: int = 0
    reasoning_field: int = 0
    scored: int = 0
    score_sum: float = 0.0
    score_sq: float = 0.0
    f1_sum: float = 0.0
    exact: int = 0
    steps: int = 0
    valid_steps: int = 0
    # LM calls per planning request: request key -> [plan records, filter records]; records that
    # name no request (no task_id, no intent) are counted apart, each plan record as one request.
    # The one state that grows with the input: about 150 bytes per distinct request.
    requests: dict[int, list[int]] = field(default_factory=dict)
    unkeyed_plan: int = 0
    unkeyed_filter: int = 0
    # The last answer to each request, whatever the variant (pair key -> 2 strict, 1 repaired or
    # native, 0 failed), for the paired single_pick - full_steps comparison; grows like ``requests``.
    answers: dict[int, int] = field(default_factory=dict)

    def add_call(self, call: str, request: int | None) -> None:
        """Count one exchange (``plan`` or ``filter``) of the planning request ``request``."""
        is_filter = call == "filter"
        if request is None:
            if is_filter:
                self.unkeyed_filter += 1
            else:
                self.unkeyed_plan += 1
            return
        counts = self.requests.get(request)
        if counts is None:
            counts = self.requests[request] = [0, 0]
        counts[is_filter] += 1

    def add(self, o: RecordOutcome) -> None:
        if o.request is not None:  # a retried request counts with its last answer
            self.answers[o.request] = 2 if o.outcome == "strict" else 0 if o.outcome == "failed" else 1
        self.n += 1
        self.strict += o.outcome == "strict"
        self.repaired += o.outcome == "repaired"
        self.native += o.outcome == "native"
        self.mode_n[o.mode] += 1
        self.mode_ok[o.mode] += o.outcome != "failed"
        self.from_label += o.from_label
        self.finish[o.finish] += 1
        self.finish_raw[o.finish_raw if o.finish_raw is not None else "(none)"] += 1
        if o.cause:
            self.causes[o.cause] += 1
        self.sources[o.source] += 1
        self.tiers[o.tier] += 1
        if o.max_tokens is not None:
            self.max_tokens[o.max_tokens] += 1
        if o.completion_tokens is not None:
            self.tokens.add(o.completion_tokens)
            if o.outcome == "strict":
                self.clean_tokens.add(o.completion_tokens)
        if o.latency_ms is not None:
            self.latency.add(o.latency_ms)
        cut = o.cause == "length_truncated"
        # A cut-off far below the cap was not the cap's doing (the context ran out, or a provider
        # limit), nor was a runaway the client stopped (which says nothing of the prompt's size either).
        early = cut and o.stopped_early
        cap = o.max_tokens or 0
        below = (cut and not early and o.completion_tokens is not None and cap != 0
                 and o.completion_tokens < BELOW_CAP * cap)
        self.length_below_cap += below or early
        if o.prompt_tokens is not None:
            self.prompt_tokens.add(o.prompt_tokens)
            bucket = self.length_by_prompt.setdefault(o.prompt_tokens // PROMPT_BUCKET_TOKENS, [0, 0, 0])
            bucket[0] += 1
            bucket[1] += cut
            bucket[2] += below
        self.leak += o.reasoning_leak
        self.tags += o.reasoning_tags
        self.tag_kinds.update(o.tag_kinds)
        self.reasoning_field += o.reasoning_field
        if o.scored:
            self.scored += 1
            self.score_sum += o.score
            self.score_sq += o.score * o.score
            self.f1_sum += o.f1
            self.exact += o.exact
            self.steps += o.n_steps
            self.valid_steps += o.n_valid_steps

    def merge(self, other: GroupAgg) -> None:
        """Add ``other``'s counts and samples to this group's."""
        for name in _SCALARS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in _COUNTERS:
            getattr(self, name).update(getattr(other, name))
        for name in ("tokens", "clean_tokens", "latency", "prompt_tokens"):
            getattr(self, name).merge(getattr(other, name))
        for bucket, counts in other.length_by_prompt.items():
            mine = self.length_by_prompt.setdefault(bucket, [0, 0, 0])
            for i, c in enumerate(counts):
                mine[i] += c
        for request, (plan, filt) in other.requests.items():
            mine = self.requests.setdefault(request, [0, 0])
            mine[0] += plan
            mine[1] += filt
        self.answers.update(other.answers)  # chunks fold in file order: the later answer is the last


GroupKey = tuple[str, str, str]
"""(kind, model, prompt_variant): the kind from :func:`~helmdeck_dspy.traces.record.source_kind`,
so records of different kinds (live, imported, published, replay, sim:<profile>) never share a group."""


def merge_groups(into: dict[GroupKey, GroupAgg], other: dict[GroupKey, GroupAgg]) -> None:
    """Fold ``other``'s groups into ``into`` (a group new to ``into`` is taken as it is)."""
    for key, agg in other.items():
        if key in into:
            into[key].merge(agg)
        else:
            into[key] = agg


# ------------------------------------------------------------------ checkpoint serialisation
#
# A resumed evaluation must end with exactly the numbers an uninterrupted one gives, so the
# state round-trips losslessly: Counter keys keep their types (pairs, not a JSON object), floats
# are written with repr precision by json, and each reservoir keeps its random generators' state
# so sampling beyond its capacity continues the same stream.

_COUNTERS = ("finish", "finish_raw", "causes", "sources", "max_tokens", "tiers", "tag_kinds", "mode_n", "mode_ok")
_RESERVOIRS = ("tokens", "clean_tokens", "latency", "prompt_tokens")
_SCALARS = ("n", "strict", "repaired", "native", "from_label", "length_below_cap", "leak", "tags", "reasoning_field", "scored",
            "score_sum", "score_sq", "f1_sum", "exact", "steps", "valid_steps", "unkeyed_plan", "unkeyed_filter")


def _reservoir_state(r: Reservoir) -> dict:
    state = {"capacity": r.capacity, "seed": r.seed, "values": r.values, "weights": r.weights, "count": r.count,
             "maximum": r.maximum, "total": r.total}
    rnd = getattr(r, "_random", None)
    if rnd is not None:
        version, internal, gauss = rnd.getstate()
        state["random"] = [version, list(internal), gauss]
    gen = getattr(r, "_np_random", None)
    if gen is not None:
        state["np_random"] = gen.bit_generator.state
    return state


def _reservoir_from(state: dict) -> Reservoir:
    r = Reservoir(capacity=state["capacity"], seed=state["seed"], values=list(state["values"]),
                  weights=list(state["weights"]), count=state["count"], maximum=state["maximum"], total=state["total"])
    if "random" in state:
        version, internal, gauss = state["random"]
        r._random = random.Random()  # type: ignore[attr-defined]
        r._random.setstate((version, tuple(internal), gauss))  # type: ignore[attr-defined]
    if "np_random" in state:
        import numpy as np

        gen = np.random.default_rng()
        gen.bit_generator.state = state["np_random"]
        r._np_random = gen  # type: ignore[attr-defined]
    return r


def agg_to_state(agg: GroupAgg) -> dict:
    """A JSON-ready, lossless snapshot of ``agg`` (see :func:`agg_from_state`)."""
    state: dict = {name: getattr(agg, name) for name in _SCALARS}
    for name in _COUNTERS:
        state[name] = [[k, v] for k, v in getattr(agg, name).items()]
    for name in _RESERVOIRS:
        state[name] = _reservoir_state(getattr(agg, name))
    state["length_by_prompt"] = [[k, v] for k, v in agg.length_by_prompt.items()]
    state["requests"] = [[k, p, f] for k, (p, f) in agg.requests.items()]
    state["answers"] = [[k, v] for k, v in agg.answers.items()]
    return state


def agg_from_state(state: dict) -> GroupAgg:
    """Rebuild a group from :func:`agg_to_state`'s output (reservoir generators included)."""
    agg = GroupAgg(**{name: state[name] for name in _SCALARS})
    for name in _COUNTERS:
        setattr(agg, name, Counter({k: v for k, v in state[name]}))
    for name in _RESERVOIRS:
        setattr(agg, name, _reservoir_from(state[name]))
    agg.length_by_prompt = {int(k): list(v) for k, v in state["length_by_prompt"]}
    agg.requests = {int(k): [int(p), int(f)] for k, p, f in state["requests"]}
    agg.answers = {int(k): int(v) for k, v in state["answers"]}
    return agg
