"""Mergeable per-group accumulators: constant memory per group, merged across workers."""

from __future__ import annotations

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
    from_label: int = 0
    finish: Counter = field(default_factory=Counter)
    finish_raw: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    sources: Counter = field(default_factory=Counter)
    max_tokens: Counter = field(default_factory=Counter)
    tiers: Counter = field(default_factory=Counter)
    tag_kinds: Counter = field(default_factory=Counter)
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

    def add(self, o: RecordOutcome) -> None:
        self.n += 1
        self.strict += o.outcome == "strict"
        self.repaired += o.outcome == "repaired"
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
        # A cut-off far below the cap was not the cap's doing (the context ran out, or a provider limit).
        below = cut and o.completion_tokens is not None and bool(o.max_tokens) and o.completion_tokens < BELOW_CAP * o.max_tokens
        self.length_below_cap += below
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
        for name in ("n", "strict", "repaired", "from_label", "leak", "tags", "reasoning_field", "scored", "length_below_cap",
                     "score_sum", "score_sq", "f1_sum", "exact", "steps", "valid_steps"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("finish", "finish_raw", "causes", "sources", "max_tokens", "tiers", "tag_kinds"):
            getattr(self, name).update(getattr(other, name))
        for name in ("tokens", "clean_tokens", "latency", "prompt_tokens"):
            getattr(self, name).merge(getattr(other, name))
        for bucket, counts in other.length_by_prompt.items():
            mine = self.length_by_prompt.setdefault(bucket, [0, 0, 0])
            for i, c in enumerate(counts):
                mine[i] += c


GroupKey = tuple[str, str]  # (model, prompt_variant)


def merge_groups(into: dict[GroupKey, GroupAgg], other: dict[GroupKey, GroupAgg]) -> None:
    for key, agg in other.items():
        if key in into:
            into[key].merge(agg)
        else:
            into[key] = agg
