"""PlanResult and the one path from a parsed completion to it.

:func:`build_result` is shared by the planner (after a live, replayed or simulated call) and by
the evaluator (replaying a trace record with no LM), so both see exactly the same parse →
classify → guard behaviour.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.decoding.causes import FailureCause
from helmdeck_dspy.decoding.parsing import Outcome, ParseResult
from helmdeck_dspy.domain import Complexity, Variant
from helmdeck_dspy.planning.chains import collapse_chains
from helmdeck_dspy.planning.grounding import Grounding
from helmdeck_dspy.planning.guards import (
    GuardedStep,
    derive_complexity,
    guard_steps,
    render_rewritten_prompt,
)
from helmdeck_dspy.program.store import ProgramRef
from helmdeck_dspy.signatures.types import PlanOutput, PlanStep


class Attempt(BaseModel):
    """One try at a plan call: which model and variant, how it ended, how long it took.

    ``cause`` is None for the attempt that produced the plan; ``http_status`` is set when the
    exchange failed at the HTTP level; ``retry_in_ms`` is the backoff waited before the next try.
    """

    model: str
    variant: str
    cause: FailureCause | None = None
    http_status: int | None = None
    elapsed_ms: int = 0
    max_tokens: int | None = None
    retry_in_ms: int | None = None


class PlanResult(BaseModel):
    """What a plan call returns.

    Attributes:
        steps: The guarded steps (renumbered; unknown tools demoted to ``unknown``).
        complexity: Derived from the steps' shape; the model's value is ignored.
        reasoning: The model's reasoning text.
        rewritten_prompt: The steps as numbered instructions ("" when there are none).
        prompt_variant_used: ``full_steps`` or ``single_pick``.
        more_steps_likely: single_pick only: the model expects more calls.
        model / tier: The model id the plan was made for and its tier.
        compaction: The trim record when selection dropped anything, else None.
        failure_cause: None on success.
        dropped_steps: Extra steps a single_pick answer carried (removed, reported here).
        parse_outcome: ``strict``, ``repaired`` or ``failed``.
        finish_reason: The provider's finish_reason (raw).
        error: A short diagnostic when the call failed.
        raw_completion: The visible completion on failure (for debugging), else None.
        usage: prompt/completion tokens and latency of the plan call.
        answered_by: The model id whose answer this is (a fallback model's, after a fallback);
            None when no attempt produced a plan.
        attempts: Every attempt made, in order (retries and fallbacks included).
        program: Which program planned: the model's own or the tier's (path and SHA-256), bare, or a file.
        strategy: The answer strategy of the plan call (``schema``, ``plain`` ...; None: no call made).
        rechecked: Asked once more: a declined first ``plain`` plan over the top-ranked tools, or a
            decline a decline threshold overruled (``planning.decision``).
        p_decline: The probability that the first answer declines, where the endpoint gives it
            (``PlannerOptions.probe_decision``, ``planning.decision``); else None.
    """

    steps: list[GuardedStep] = Field(default_factory=list)
    complexity: Complexity = "single-action"
    reasoning: str = ""
    rewritten_prompt: str = ""
    prompt_variant_used: Variant
    more_steps_likely: bool = False
    model: str
    tier: str
    compaction: Trim | None = None
    failure_cause: FailureCause | None = None
    dropped_steps: list[PlanStep] = Field(default_factory=list)
    parse_outcome: Outcome = "failed"
    finish_reason: str | None = None
    error: str | None = None
    raw_completion: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    catalog_in: Literal["system", "user"] | None = Field(
        default=None, description="Where the catalog block was rendered (system for prefix-cache models)."
    )
    answered_by: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    program: ProgramRef | None = None
    strategy: str | None = None
    rechecked: bool = False
    p_decline: float | None = None

    @property
    def ok(self) -> bool:
        return self.failure_cause is None


def guard_plan(
    plan: PlanOutput, variant: str, catalog_ids: Collection[str], pipeline_ids: Collection[str],
    schemas: Mapping[str, dict[str, Any]] | None = None, chains: Mapping[str, frozenset[str]] | None = None,
    map_names: bool = False, ground: Grounding | None = None,
) -> tuple[list[GuardedStep], list[PlanStep], bool]:
    """The guard stage shared by the planner and the evaluator: with ``chains``, a pipeline's
    spelled-out packs become a run of it (:func:`~helmdeck_dspy.planning.chains.collapse_chains`);
    single_pick keeps one step (the rest are returned as dropped), every kept step is guarded (its
    args checked against ``schemas`` when given); returns (steps, dropped, more_steps_likely)."""
    steps = list(plan.steps) if plan.tool_fits is not False else []  # the model said nothing fits
    if chains:
        steps = collapse_chains(steps, chains)
    dropped: list[PlanStep] = []
    if variant == "single_pick" and len(steps) > 1:
        steps, dropped = steps[:1], steps[1:]
    guarded = guard_steps(steps, catalog_ids, pipeline_ids, schemas, map_names, ground)
    more = variant == "single_pick" and (bool(plan.more_steps_likely) or bool(dropped))
    return guarded, dropped, more


def build_result(
    parse: ParseResult,
    *,
    intent: str,
    variant: Variant,
    model: str,
    tier: str,
    catalog_ids: Collection[str],
    pipeline_ids: Collection[str],
    trim: Trim | None = None,
    raw_completion: str | None = None,
    usage: dict[str, Any] | None = None,
    schemas: Mapping[str, dict[str, Any]] | None = None,
    chains: Mapping[str, frozenset[str]] | None = None,
    map_names: bool = False,
    ground: Grounding | None = None,
) -> PlanResult:
    """Turn a parsed completion into a :class:`PlanResult` (guards, single-step rule, rendering);
    ``ground`` grounds path arguments in the request (``planning.arguments``)."""
    compaction = trim if trim is not None and trim.dropped else None
    common: dict[str, Any] = dict(
        prompt_variant_used=variant, model=model, tier=tier, compaction=compaction,
        parse_outcome=parse.outcome, finish_reason=parse.finish_reason_raw, usage=usage or {},
    )
    if parse.plan is None:
        return PlanResult(failure_cause=parse.cause, error=parse.error, raw_completion=raw_completion, **common)
    guarded, dropped, more = guard_plan(parse.plan, variant, catalog_ids, pipeline_ids, schemas, chains, map_names,
                                      ground)
    return PlanResult(
        steps=guarded,
        complexity=derive_complexity(guarded),
        reasoning=(parse.plan.reasoning or "").strip(),
        rewritten_prompt=render_rewritten_prompt(intent, guarded),
        more_steps_likely=more,
        dropped_steps=dropped,
        **common,
    )
