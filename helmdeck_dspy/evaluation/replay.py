"""Replaying one trace record through the planner's own parse → classify → guard path.

No LM is involved: the record's content, finish_reason and reasoning go through the one scoring
path (:func:`~helmdeck_dspy.evaluation.scoring.guard_completion`: the planner's decoder and
guards) exactly as a live completion would, and the guarded plan is scored against the record's
gold task when it names one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from helmdeck_dspy.budgets import BudgetTable
from helmdeck_dspy.decoding.causes import (
    FAILURE_CAUSES,
    cause_for_http,
    normalize_finish_reason,
)
from helmdeck_dspy.evaluation.metric import score_plan
from helmdeck_dspy.evaluation.scoring import guard_completion, recorded_reading
from helmdeck_dspy.planning.chains import recorded_chains
from helmdeck_dspy.tasks import PlanTask
from helmdeck_dspy.traces.record import TraceRecord, source_kind

LEAK_VISIBLE_CHARS = 100
"""A reply with reasoning and fewer visible characters than this counts as a reasoning leak
(helmdeck's Nemotron trace: 423 completion tokens, 71 visible characters)."""

SUCCESS_LABELS = frozenset({"success", "strict", "clean"})


@dataclass(frozen=True)
class ReplayContext:
    """What every record is checked against."""

    catalog_ids: frozenset[str]
    pipeline_ids: frozenset[str]
    tasks: dict[str, PlanTask]
    budgets: BudgetTable
    pipeline_chains: Mapping[str, frozenset[str]] = field(default_factory=dict)
    _defaults: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False)

    def tier_and_variant(self, model: str) -> tuple[str, str]:
        """The budget table's tier and resolved variant for ``model`` (memoised)."""
        hit = self._defaults.get(model)
        if hit is None:
            b = self.budgets.lookup(model)
            hit = self._defaults[model] = (b.tier, b.resolved_prompt_variant)
        return hit


@dataclass(slots=True)
class RecordOutcome:
    """One record's replay, reduced to what the report aggregates."""

    kind: str  # source_kind(source): live, imported, published, replay, unknown or sim:<profile>
    model: str
    variant: str
    tier: str
    source: str
    outcome: str  # strict | repaired | native | failed
    cause: str | None
    finish: str
    finish_raw: str | None
    completion_tokens: int | None
    prompt_tokens: int | None
    latency_ms: float | None
    max_tokens: int | None
    reasoning_leak: bool
    reasoning_tags: bool
    reasoning_field: bool
    from_label: bool
    tag_kinds: tuple[str, ...] = ()
    n_steps: int = 0
    n_valid_steps: int = 0
    scored: bool = False
    score: float = 0.0
    f1: float = 0.0
    exact: bool = False
    request: int | None = None  # the planning request the record answered (see request_key)
    mode: str = "text"  # how the request asked for the plan: "text" (JSON text) or "native" (tools offered)
    stopped_early: bool = False  # a runaway list the client stopped before the cap (answer_cut with length)


class _Shared(TypedDict):
    """The fields of a :class:`RecordOutcome` that come from the record, whatever its outcome."""

    kind: str
    model: str
    variant: str
    tier: str
    source: str
    request: int | None
    finish: str
    finish_raw: str | None
    completion_tokens: int | None
    prompt_tokens: int | None
    latency_ms: float | None
    max_tokens: int | None
    mode: str
    stopped_early: bool


def record_group(rec: TraceRecord, ctx: ReplayContext) -> tuple[str, str, str, str]:
    """``(kind, model, tier, variant)`` of a record: its group's key parts and its tier, the tier
    and variant taken from the budget table when the record does not say."""
    tier, variant = rec.tier, rec.prompt_variant
    if not tier or not variant:
        default_tier, default_variant = ctx.tier_and_variant(rec.model)
        tier, variant = tier or default_tier, variant or default_variant
    return source_kind(rec.source), rec.model, tier, variant


def request_key(rec: TraceRecord) -> int | None:
    """The planning request a record belongs to: its ``(task_id, intent)``, which the recorder stamps
    on every exchange of a request, the filter call included. None when the record names neither
    (each such plan record is a request of its own).

    Within a group (kind, model, variant) it counts LM calls per request; across the two variants
    of a model it pairs the full_steps and single_pick answers to the same request. A log that asked
    the very same question twice counts as one request with two plan calls: the count errs towards
    showing extra calls, never towards hiding them.
    """
    if rec.task_id is None and rec.intent is None:
        return None
    raw = f"{rec.task_id}\x1f{rec.intent}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")  # 8 bytes: small to keep


def request_mode(rec: TraceRecord) -> str:
    """``native`` when the record's request offered the catalog as native tools, else ``text``
    (reports compare the two ways per model where both were recorded)."""
    return "native" if rec.native_tools else "text"


def _label_outcome(label: str) -> tuple[str, str | None]:
    """A metadata-only record's outcome label as (outcome, cause)."""
    key = label.strip().lower()
    if key in SUCCESS_LABELS:
        return "strict", None
    if key in FAILURE_CAUSES:
        return "failed", key
    raise ValueError(f"unknown outcome_label {label!r}: expected 'success' or a failure cause")


def replay_record(rec: TraceRecord, ctx: ReplayContext) -> RecordOutcome:
    """Replay ``rec``; raises ValueError only for a record that cannot be interpreted."""
    kind, model, tier, variant = record_group(rec, ctx)
    base = _Shared(
        kind=kind, model=model, variant=variant, tier=tier, source=rec.source, request=request_key(rec),
        finish=normalize_finish_reason(rec.finish_reason),
        finish_raw=rec.finish_reason, completion_tokens=rec.completion_tokens, prompt_tokens=rec.prompt_tokens,
        latency_ms=None if rec.cache_hit else rec.latency_ms,  # a cached answer's latency is not the model's
        max_tokens=rec.max_tokens, mode=request_mode(rec),
        stopped_early=bool(rec.answer_cut) and normalize_finish_reason(rec.finish_reason) == "length",
    )
    http_cause = cause_for_http(rec.http_status, rec.error)
    if http_cause is not None:
        return RecordOutcome(outcome="failed", cause=http_cause, reasoning_leak=False, reasoning_tags=False,
                             reasoning_field=False, from_label=False, **base)
    if rec.content is None and rec.outcome_label:
        outcome, cause = _label_outcome(rec.outcome_label)
        return RecordOutcome(outcome=outcome, cause=cause, reasoning_leak=cause == "reasoning_only",
                             reasoning_tags=False, reasoning_field=bool(rec.reasoning_content), from_label=True, **base)

    guarded = guard_completion(rec.content, rec.finish_reason, rec.reasoning_content, variant=variant,
                               catalog_ids=ctx.catalog_ids, pipeline_ids=ctx.pipeline_ids,
                               tool_calls=rec.tool_calls, refusal=rec.refusal,
                               chains=recorded_chains(rec.run, ctx.pipeline_chains), **recorded_reading(rec.run, rec.intent))
    parse, steps = guarded.parse, guarded.steps
    leak = parse.cause == "reasoning_only" or (parse.saw_reasoning and parse.visible_chars < LEAK_VISIBLE_CHARS)
    out = RecordOutcome(
        outcome=parse.outcome, cause=parse.cause, reasoning_leak=leak, reasoning_tags="tags" in parse.notes,
        reasoning_field="reasoning_field" in parse.notes, from_label=False,
        tag_kinds=tuple(n[4:] for n in parse.notes if n.startswith("tag:")), **base,
    )
    if steps is not None:
        out.n_steps = len(steps)
        out.n_valid_steps = sum(1 for s in steps if not s.demoted)
    task = ctx.tasks.get(rec.task_id) if rec.task_id else None
    if task is not None:  # a completion that did not decode scores 0
        done = _as_int((rec.model_extra or {}).get("done")) if steps is not None else 0
        s = score_plan(task, steps, variant=variant, done=done, pipeline_ids=ctx.pipeline_ids)
        out.scored, out.score, out.f1, out.exact = True, s.score, s.f1, s.exact
    return out


def _as_int(value: Any) -> int:
    """``value`` as an int, 0 when it is missing or not a number."""
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
