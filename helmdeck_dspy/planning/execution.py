"""Plan, execute, re-plan: :func:`run_loop` drives a planner through a task step by step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.signatures.types import ExecutedStep

OUTPUT_CHARS = 500
"""How much of a step's output is carried into the next prompt."""


class LoopResult(BaseModel):
    """What :func:`run_loop` did.

    Attributes:
        plans: Every plan call's result, in order.
        executed: The steps executed, with their (truncated) outputs.
        stopped_because: ``done``, ``max_steps``, ``failed`` (a plan call failed) or ``no_steps``
            (the first plan had none).
    """

    plans: list[PlanResult] = Field(default_factory=list)
    executed: list[ExecutedStep] = Field(default_factory=list)
    stopped_because: Literal["done", "max_steps", "failed", "no_steps"]


class Replanner(Protocol):
    """What :func:`run_loop` needs of a planner."""

    variant: str

    def plan(
        self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None
    ) -> PlanResult:
        """Plan ``intent`` given the steps already executed."""
        ...


def run_loop(
    planner: Replanner,
    intent: str,
    execute: Callable[[GuardedStep], Any],
    max_steps: int = 8,
    context: str | None = None,
) -> LoopResult:
    """Plan, execute, re-plan with the executed steps, until the model expects no more.

    A full_steps plan is executed whole after one call; single_pick re-plans after each step.

    Args:
        planner: The planner to call.
        intent: The user request.
        execute: Runs one step and returns its output (stringified into the next prompt).
        max_steps: Stop after executing this many steps.
        context: Pasted material for the request.
    """
    out = LoopResult(stopped_because="done")
    while True:
        result = planner.plan(intent, context=context, prior_steps=out.executed or None)
        out.plans.append(result)
        if not result.ok:
            out.stopped_because = "failed"
            return out
        if not result.steps:
            out.stopped_because = "no_steps" if not out.executed else "done"
            return out
        for step in result.steps:
            if len(out.executed) >= max_steps:
                out.stopped_because = "max_steps"
                return out
            output = execute(step)
            out.executed.append(ExecutedStep(
                order=len(out.executed) + 1, tool=step.tool, args=step.args, output=str(output)[:OUTPUT_CHARS]
            ))
        if planner.variant == "full_steps" or not result.more_steps_likely:
            return out
        if len(out.executed) >= max_steps:
            out.stopped_because = "max_steps"
            return out
