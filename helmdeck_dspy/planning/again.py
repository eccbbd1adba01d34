"""What a first plan answer is asked again with, if anything: at most one more call per attempt.

- a decline that the budget row's decline threshold overrules (``planning.decision``; a call it
  overrules is dropped, with no call);
- a declined ``plain`` plan over a long list, asked once more over the top tools the ranker gives
  (:func:`recheck_spec`, ``PlannerOptions.recheck_top``), unless a threshold decided.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking import RANKERS
from helmdeck_dspy.catalog.select import restrict_catalog
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES
from helmdeck_dspy.planning.decision import call_spec, declined_parse, decline_probability, threshold_action
from helmdeck_dspy.program.plain_prompt import plain_functions
from helmdeck_dspy.program.prompt_spec import PromptSpec
from helmdeck_dspy.planning.parts import PlannerParts
from helmdeck_dspy.signatures.types import ExecutedStep


def ask_again(planner: PlannerParts, spec: PromptSpec, shown: RoutingGuide, first: Any, intent: str,
              prior_steps: list[ExecutedStep] | None, recheck_top: int) -> tuple[PromptSpec | None, dict[str, Any] | None]:
    """What the first answer (``first``, its exchange) is asked again with, if anything, and its
    decline probability when one was read: a decline a threshold overrules (:func:`_decide`), else a
    declined plain plan over the top tools (:func:`recheck_spec`, not when a threshold decided)."""
    again, decision = _decide(planner, spec, shown, first, str(getattr(planner.lm, "model", "")))
    if again is None and "threshold" not in (decision or {}):
        again = recheck_spec(planner, spec, intent, first.parse if first is not None else None, prior_steps,
                             recheck_top)
    return again, decision


def _decide(planner: PlannerParts, spec: PromptSpec, shown: RoutingGuide, first: Any,
            endpoint: str) -> tuple[PromptSpec | None, dict[str, Any] | None]:
    """The first answer's decline probability, when asked for or when the row has a threshold for
    the strategy, and what the threshold does with it (``planning.decision``): the ask again for a
    call it overrules a decline into (a call it overrules is dropped from ``first`` here)."""
    threshold = planner.budget.decline_thresholds.get(spec.strategy)
    if first is None or not (planner.options.probe_decision or threshold is not None):
        return None, None
    decision = decline_probability(planner.lm, spec.strategy, first)
    plan = first.parse.plan if first.parse is not None else None
    if decision is None or plan is None or threshold is None:
        return None, decision
    action = threshold_action(decision["p_decline"], not plan.steps, threshold)
    decision["threshold"] = threshold
    if action is None:
        return None, decision
    decision["overruled"] = action
    if action == "decline":
        first.parse = declined_parse(first.parse)
        return None, decision
    return call_spec(spec, shown, first.content, endpoint), decision


def recheck_spec(planner: PlannerParts, spec: PromptSpec, intent: str, last: ParseResult | None,
                 prior_steps: list[ExecutedStep] | None, top: int) -> PromptSpec | None:
    """The narrowed ask after a declined first ``plain`` plan: the same request over the
    ``top`` tools the ranker gives for ``intent`` (``PlannerOptions.recheck_top``; 0: never), in rank
    order; else None."""
    declined = last is not None and last.plan is not None and not last.plan.steps
    if not top or not declined or prior_steps or spec.strategy not in MODEL_ALONE_STRATEGIES \
            or len(planner.catalog.packs) <= top:
        return None
    ranked = RANKERS[planner.options.ranker](planner.catalog, intent, None)
    shown = restrict_catalog(planner.catalog, [r.id for r in ranked[:top]])
    return spec.model_copy(update={"catalog": plain_functions(shown)})
