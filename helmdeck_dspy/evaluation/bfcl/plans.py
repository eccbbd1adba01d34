"""Plan accuracy on BFCL: from a planner run (any LM spec) or from recorded trace records.

Both paths end in :func:`~helmdeck_dspy.evaluation.bfcl.score.score_calls` on the guarded steps
(the planner's own for a run; :mod:`helmdeck_dspy.evaluation.scoring`'s decode → guard path for a
trace file), so a run recorded with ``--record`` and scored later from its trace file gives the
same figures as scoring it live.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.evaluation.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.evaluation.bfcl.score import (
    AccuracySummary,
    CallScore,
    calls_from_steps,
    score_calls,
    summarise,
    summarise_by_category,
)
from helmdeck_dspy.evaluation.scoring import guard_completion
from helmdeck_dspy.planning.lm import make_lm, trace_source
from helmdeck_dspy.traces.io import load_traces


class PlanAccuracy(BaseModel):
    """Plan accuracy of one run or trace set over BFCL questions."""

    source: str = Field(description="The LM spec that planned, or the trace file scored.")
    model: str = Field(description="The model id whose budget, tier and variant were used ('' for traces).")
    variant: str
    summary: AccuracySummary
    by_category: dict[str, AccuracySummary] = Field(default_factory=dict)
    failures: dict[str, int] = Field(default_factory=dict, description="Failure cause -> plans that failed.")
    unscored: int = Field(default=0, description="Trace records whose task_id is not a loaded question.")
    scores: list[CallScore] = Field(default_factory=list)


def _catalog_for(q: BfclQuestion, pooled: RoutingGuide | None) -> RoutingGuide:
    """The catalog a question is planned against: the pool when given, else its own functions."""
    return pooled if pooled is not None else q.catalog


def plan_questions(
    data: BfclSet,
    *,
    model: str,
    lm_spec: str,
    pool: bool = False,
    variant: str = "full_steps",
    api_base: str | None = None,
    max_tokens: int | None = None,
    budgets: str | Path | None = None,
    record_path: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> PlanAccuracy:
    """Run the planner on every question and score its plans.

    Args:
        data: The questions.
        model: Budget lookup id (tier, caps, prompt variant).
        lm_spec: A LiteLLM model string, ``replay:PATH`` or ``sim:PROFILE``.
        pool: Plan against the pooled catalog instead of each question's own functions.
        variant: ``full_steps`` (the default: BFCL's gold has several calls) or ``single_pick``.
        record_path: Append every exchange as trace records (``task_id`` = the BFCL id).
    """
    from helmdeck_dspy.planning.planner import Planner  # imports dspy

    lm = make_lm(lm_spec, api_base=api_base)
    source = trace_source(lm_spec)
    pooled = data.pool()[0] if pool else None
    scores: list[CallScore] = []
    failures: Counter[str] = Counter()
    planner = None
    for q in data.questions:
        if planner is None or pooled is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                planner = Planner.for_model(
                    model, lm=lm, catalog=_catalog_for(q, pooled), variant=variant, budgets=budgets,
                    max_tokens=max_tokens, record_path=record_path, record_source=source, history=None,
                    use_filter=False,
                )
        result = planner.plan(q.intent, task_id=q.id)
        if result.failure_cause:
            failures[result.failure_cause] += 1
        scores.append(score_calls(q, calls_from_steps(result.steps), failed=bool(result.failure_cause)))
        if progress is not None:
            progress(1)
    return PlanAccuracy(
        source=lm_spec, model=model, variant=variant, summary=summarise(scores), by_category=summarise_by_category(scores),
        failures=dict(failures), scores=scores,
    )


def score_traces(
    data: BfclSet,
    path: str | Path,
    *,
    pool: bool = False,
    on_error: str = "fail",
) -> PlanAccuracy:
    """Score the plan records of a trace file whose ``task_id`` is a loaded BFCL question id.

    Each record goes through the one scoring path (:func:`~helmdeck_dspy.evaluation.scoring.guard_completion`:
    the same decoder and guards as a live call, with its own prompt variant; tools outside the
    question's catalog, or the pool with ``pool``, are demoted).
    """
    by_id = {q.id: q for q in data.questions}
    pooled = data.pool()[0] if pool else None
    scores: list[CallScore] = []
    failures: Counter[str] = Counter()
    variants: Counter[str] = Counter()
    unscored = 0
    for rec in load_traces(path, on_error=on_error):
        if rec.call != "plan":
            continue
        q = by_id.get(rec.task_id or "")
        if q is None:
            unscored += 1
            continue
        variant = rec.prompt_variant or "full_steps"
        variants[variant] += 1
        catalog = _catalog_for(q, pooled)
        guarded = guard_completion(rec.content, rec.finish_reason, rec.reasoning_content, variant=variant,
                                   catalog_ids=catalog.id_set, pipeline_ids=catalog.pipeline_ids)
        if guarded.steps is None:
            failures[guarded.parse.cause or "no_json"] += 1
        scores.append(score_calls(q, calls_from_steps(guarded.steps or []), failed=guarded.steps is None))
    return PlanAccuracy(
        source=str(path), model="", variant="+".join(sorted(variants)) or "-", summary=summarise(scores),
        by_category=summarise_by_category(scores), failures=dict(failures), unscored=unscored, scores=scores,
    )
