"""The one scoring path: decode → guard → score, shared by eval, BFCL and compile.

A completion is decoded with :func:`~helmdeck_dspy.decoding.parsing.parse_completion` and its plan
put through the planner's own guards (:func:`~helmdeck_dspy.planning.result.guard_plan`: single_pick
keeps one step, unknown tools are demoted), exactly as a live plan call would be. The guarded steps
are then scored against a gold task with :func:`~helmdeck_dspy.evaluation.metric.score_plan`;
a completion that was truncated or did not decode scores 0. BFCL questions score the same
guarded steps with their own call matcher.

A DSPy prediction (compile's metric) has no completion text left, only its parsed steps:
:func:`guard_prediction` guards those the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from helmdeck_dspy.decoding.call_list import parse_call_list
from helmdeck_dspy.decoding.parsing import ParseResult, parse_completion
from helmdeck_dspy.evaluation.metric import PlanScore, score_plan
from helmdeck_dspy.planning.grounding import GROUND_PATHS_KEY, PLACEHOLDERS_KEY, Grounding
from helmdeck_dspy.planning.decision import declined_by_threshold, declined_parse
from helmdeck_dspy.planning.guards import MAP_NAMES_KEY, GuardedStep
from helmdeck_dspy.planning.result import guard_plan
from helmdeck_dspy.program.strategies import STRATEGIES
from helmdeck_dspy.signatures.types import PlanOutput, PlanStep
from helmdeck_dspy.tasks import PlanTask


RETIRED_CALL_LISTS = ("decide", "draft")
"""Retired strategies (``domain.RETIRED_STRATEGIES``) whose recorded answers are JSON lists of calls."""


def answers_in_call_list(run: dict[str, Any] | None) -> bool:
    """Whether a trace record's ``run`` says its answer was asked for as a JSON list of calls: its
    strategy answers with a list (``answer_kind``), or is a retired one that did."""
    prompt = (run or {}).get("prompt")
    name = prompt.get("strategy") if isinstance(prompt, dict) else None
    strategy = STRATEGIES.get(name) if isinstance(name, str) else None
    return (strategy is not None and strategy.answer_kind == "list") or name in RETIRED_CALL_LISTS


class GuardedCompletion(NamedTuple):
    """A completion decoded and guarded (a tuple: the evaluator builds one per record).

    Attributes:
        parse: What the decoder made of it (outcome, cause, notes...).
        steps: The guarded steps, or None when no plan was decoded (a failure: it scores 0).
    """

    parse: ParseResult
    steps: list[GuardedStep] | None


def recorded_reading(run: dict[str, Any] | None, intent: str | None = None) -> dict[str, Any]:
    """How a trace record's answer is read back, as its planner read it: as a JSON list of calls
    (``call_list``, the ``plain`` strategy), with near-miss names mapped (``map_names``), with
    path arguments grounded in the record's ``intent`` as its planner grounded them (``ground``) and
    its calls dropped when a decline threshold dropped them (``declined``)."""
    run = run or {}
    placeholders, tails = bool(run.get(PLACEHOLDERS_KEY)), bool(run.get(GROUND_PATHS_KEY))
    ground = Grounding(intent, placeholders, tails) if intent is not None and (placeholders or tails) else None
    return {"call_list": answers_in_call_list(run), "map_names": bool(run.get(MAP_NAMES_KEY)), "ground": ground,
            "declined": declined_by_threshold(run)}


def guard_completion(
    content: str | None,
    finish_reason: str | None,
    reasoning_content: str | None,
    *,
    variant: str,
    catalog_ids: Collection[str],
    pipeline_ids: Collection[str],
    tool_calls: Any = None,
    refusal: str | None = None,
    schemas: Mapping[str, dict[str, Any]] | None = None,
    chains: Mapping[str, frozenset[str]] | None = None,
    map_names: bool = False,
    call_list: bool = False,
    ground: Grounding | None = None,
    declined: bool = False,
) -> GuardedCompletion:
    """Decode a completion and guard its plan as the planner does for ``variant``.

    Args:
        content: The visible completion text.
        finish_reason: The provider's finish_reason (a ``length`` finish is never a success).
        reasoning_content: A separate reasoning field, if any.
        variant: ``full_steps`` or ``single_pick`` (which keeps only the first step).
        catalog_ids: Every tool id the plan may name (also what native tool calls must name).
        pipeline_ids: The pipeline ids a pipeline run may name.
        tool_calls: Native tool calls the completion carried, any provider's shape.
        refusal: A refusal the provider sent apart from the content.
        schemas: Tool id → argument schema: the guards check and coerce args against it, as a
            planner that coerces does.
        chains: Pipeline id → the packs it chains: a plan listing them all runs the pipeline,
            as a planner with the chain guard does (``planning.chains``).
        map_names: Map near-miss tool names to their catalog ids (``planning.guards.near_miss``).
        call_list: The answer was asked for as a JSON list of calls (the ``plain`` strategy).
        ground: What path arguments are grounded in, as the planner grounded them (``planning.arguments``).
        declined: A decline threshold dropped the answer's calls (``planning.decision``): no steps.
    """
    if call_list:
        parse = parse_call_list(content, finish_reason, reasoning_content)
    else:
        parse = parse_completion(content, finish_reason, reasoning_content, tool_calls=tool_calls,
                                 tool_ids=catalog_ids, refusal=refusal)
    if parse.plan is None:
        return GuardedCompletion(parse, None)
    if declined:
        return GuardedCompletion(declined_parse(parse), [])
    steps, _dropped, _more = guard_plan(parse.plan, variant, catalog_ids, pipeline_ids, schemas, chains, map_names,
                                        ground)
    return GuardedCompletion(parse, steps)


def guard_prediction(
    steps: list[Any] | None, *, variant: str, catalog_ids: Collection[str], pipeline_ids: Collection[str],
    chains: Mapping[str, frozenset[str]] | None = None,
) -> list[GuardedStep] | None:
    """Guard a DSPy prediction's steps (PlanStep objects or dicts) through :func:`guard_plan`, as
    :func:`guard_completion` guards a completion's plan; None stays None (no plan)."""
    if steps is None:
        return None
    plan = PlanOutput(steps=[s if isinstance(s, PlanStep) else PlanStep.model_validate(s) for s in steps])
    return guard_plan(plan, variant, catalog_ids, pipeline_ids, chains=chains)[0]


def score_prediction(
    task: PlanTask, steps: list[Any] | None, *, variant: str, catalog_ids: Collection[str], pipeline_ids: frozenset[str],
    chains: Mapping[str, frozenset[str]] | None = None,
) -> PlanScore:
    """Guard a DSPy prediction's steps and score them against ``task`` (no steps: 0).

    Args:
        task: The gold task.
        steps: The prediction's ``steps`` (None when the program produced none).
        variant: ``full_steps`` or ``single_pick``.
        catalog_ids: Every tool id the plan may name.
        pipeline_ids: The catalog's pipeline ids.
        chains: Pipeline id -> the packs it chains, for the chain guard (as in :func:`guard_completion`).
    """
    guarded = guard_prediction(steps, variant=variant, catalog_ids=catalog_ids, pipeline_ids=pipeline_ids, chains=chains)
    return score_plan(task, guarded, variant=variant, pipeline_ids=pipeline_ids)
