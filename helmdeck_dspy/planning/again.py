"""What a first plan answer is asked again with, if anything: at most one more call per attempt.

- a decline that the budget row's decline threshold overrules (``planning.decision``; a call it
  overrules is dropped, with no call): :meth:`RequestPlan.call_ask`;
- a declined first answer over a long list, asked once more over the top tools the ranker gives
  (:meth:`RequestPlan.recheck`, ``PlannerOptions.recheck_top``), unless a threshold decided;
- any declined answer, when the caller needs a call (``PlannerOptions.must_call``), asked once for
  at least one call (:meth:`RequestPlan.call_ask`);
- a declined re-plan right after a call failed (``PlannerOptions.retry_errors``), asked once for at
  least one call with an ask that names the failure.

Both asks are built by the request plan (``planning.request``), through the answer strategy.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.planning.decision import declined_parse, decline_probability, threshold_action
from helmdeck_dspy.planning.request import RequestPlan
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.signatures.types import ExecutedStep


def ask_again(plan: RequestPlan, first: Any, prior_steps: list[ExecutedStep] | None
              ) -> tuple[PromptSpec | None, dict[str, Any] | None]:
    """What the first answer (``first``, its exchange) is asked again with, if anything, and its
    decline probability when one was read: a decline a threshold overrules (:func:`_decide`), else a
    declined first answer over the top tools (not when a threshold decided)."""
    again, decision = _decide(plan, first)
    if again is None and "threshold" not in (decision or {}):
        parse = first.parse if first is not None else None
        content = first.content if first is not None else None
        again = plan.recheck(parse, prior_steps)
        options = plan.context.options
        if again is None and _declined(parse):
            if options.must_call:
                again = plan.call_ask(content)
            elif options.retry_errors and prior_steps and prior_steps[-1].error:
                again = plan.call_ask(content, retry=True)
    return again, decision


def _declined(parse: Any) -> bool:
    return parse is not None and parse.plan is not None and not parse.plan.steps


def _decide(plan: RequestPlan, first: Any) -> tuple[PromptSpec | None, dict[str, Any] | None]:
    """The first answer's decline probability, when asked for or when the row has a threshold for
    the strategy, and what the threshold does with it (``planning.decision``): the ask again for a
    call it overrules a decline into (a call it overrules is dropped from ``first`` here)."""
    ctx = plan.context
    threshold = ctx.budget.decline_thresholds.get(ctx.strategy.name)
    if first is None or not (ctx.options.probe_decision or threshold is not None):
        return None, None
    decision = decline_probability(ctx.lm, ctx.strategy, first)
    parsed = first.parse.plan if first.parse is not None else None
    if decision is None or "p_decline" not in decision or parsed is None or threshold is None:
        return None, decision
    action = threshold_action(decision["p_decline"], not parsed.steps, threshold)
    decision["threshold"] = threshold
    if action is None:
        return None, decision
    decision["overruled"] = action
    if action == "decline":
        first.parse = declined_parse(first.parse)
        return None, decision
    return plan.call_ask(first.content), decision
