"""Plan, execute, re-plan: :func:`run_loop` drives a planner through a task step by step.

The loop calls the planner, runs the plan's steps through an ``execute`` callback, and calls the
planner again, with every executed step and its (truncated) result, when:

- a step's tool failed (its result is marked as an error in the next prompt);
- a later step needs what an earlier one returned: an argument that stands for an earlier result
  (``{{file_content}}``, ``<output of step 1>``, ``$step1``...; :func:`needs_earlier`) is not
  sent, the planner re-plans with the result in hand;
- the planner is single_pick and expects more steps.

It stops when the model expects no more steps, when a step was refused by the approval policy,
when the planner asks again for a call that already failed with the same arguments and no call has
succeeded since (``stuck``: nothing changed that could make it pass; after a success, say a
``git_add`` before the ``git_commit`` that failed, it is sent once more), when it asks again for the
very call that last succeeded (``repeated``: the same tool and arguments again would only return
what the model already has; a model in a conversation loop at temperature 0 otherwise calls
``git_log`` until the step cap), at the step cap or at the time cap. A tool server that dies ends
the run with its one-line cause.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.errors import ToolServerError
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.signatures.types import ExecutedStep

OUTPUT_CHARS = 500
"""How much of a step's result is carried into the next prompt (the same for every loop)."""

StopReason = Literal["done", "max_steps", "failed", "no_steps", "denied", "stuck", "repeated", "time_cap",
                     "server_error", "dry_run"]

_EARLIER = re.compile(
    r"\{\{[^{}]{1,80}\}\}|\$\{[^{}]{1,80}\}|\$(step|result|output)[\s_.-]*\d+|"
    r"<[^<>]{0,40}\b(step|result|output|content|previous)\b[^<>]{0,40}>|"
    r"\b(output|result) of (the )?(previous |earlier |last |first )?(step|call)\b",
    re.I)
"""An argument that stands for an earlier result: a template placeholder (``{{file_content}}``,
``${step1}``, ``$step1``), an angle-bracketed stand-in (``<output of step 1>``, ``<content>``), or
words saying so (``the result of step 1``)."""


class StepOutcome(BaseModel):
    """What running one step gave: its text, structured content and whether it failed."""

    text: str = ""
    structured: Any = None
    error: bool = Field(default=False, description="The tool reported an error, timed out, or the call was refused.")
    denied: bool = Field(default=False, description="The approval policy refused the call; it was not sent.")
    seconds: float = 0.0

    @classmethod
    def of(cls, value: Any) -> StepOutcome:
        """An ``execute`` callback's return value as an outcome (anything else is its text)."""
        return value if isinstance(value, StepOutcome) else cls(text="" if value is None else str(value))


class LoopResult(BaseModel):
    """What :func:`run_loop` did.

    Attributes:
        plans: Every plan call's result, in order.
        executed: The steps executed, with their truncated outputs as the next prompt saw them.
        outcomes: Each executed step's whole outcome (same order as ``executed``).
        stopped_because: ``done``, ``max_steps``, ``failed`` (a plan call failed), ``no_steps``
            (the first plan had none), ``denied`` (a call was refused), ``time_cap`` or
            ``stuck`` (a call that failed was planned again, unchanged, with no success since), ``repeated``
            (the call that last succeeded was planned again, unchanged), ``server_error``
            (``error`` says which server and why); ``dry_run`` when nothing was
            meant to run.
        error: The one-line cause of a ``server_error``.
        seconds: Wall time of the run.
    """

    plans: list[PlanResult] = Field(default_factory=list)
    executed: list[ExecutedStep] = Field(default_factory=list)
    outcomes: list[StepOutcome] = Field(default_factory=list)
    stopped_because: StopReason = "done"
    error: str | None = None
    seconds: float = 0.0

    @property
    def tool_errors(self) -> int:
        """How many executed steps failed."""
        return sum(1 for s in self.executed if s.error)


class Replanner(Protocol):
    """What :func:`run_loop` needs of a planner."""

    variant: Variant

    def plan(
        self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None
    ) -> PlanResult:
        """Plan ``intent`` given the steps already executed."""
        ...


def _failed_since_last_success(executed: list[ExecutedStep], step: GuardedStep) -> bool:
    """Whether ``step`` (its tool and arguments) failed after the last call that succeeded."""
    for done in reversed(executed):
        if not done.error:
            return False
        if done.tool == step.tool and done.args == step.args:
            return True
    return False


def _repeats_last_success(executed: list[ExecutedStep], step: GuardedStep) -> bool:
    """Whether ``step`` is the call (tool and arguments) that last succeeded."""
    last = next((done for done in reversed(executed) if not done.error), None)
    return last is not None and last.tool == step.tool and last.args == step.args


def needs_earlier(step: GuardedStep) -> bool:
    """Whether an argument of ``step`` points at an earlier step's result instead of a value."""

    def walk(value: Any) -> bool:
        if isinstance(value, str):
            return bool(_EARLIER.search(value))
        if isinstance(value, dict):
            return any(walk(v) for v in value.values())
        if isinstance(value, list):
            return any(walk(v) for v in value)
        return False

    return walk(step.args)


def fills(template: Any, value: Any) -> bool:
    """Whether ``value`` is ``template`` with its stand-ins for earlier results filled in: the same
    keys and items, each string equal or matching the template's words around its stand-ins
    (``release-{{version}}`` takes ``release-2.5``, not ``pwned``), every other value equal."""
    if isinstance(template, str):
        if not isinstance(value, str):
            return False
        words = _EARLIER.split(template)[::_EARLIER.groups + 1]  # the text between the stand-ins
        return re.fullmatch(".*".join(map(re.escape, words)), value, re.S) is not None
    if isinstance(template, dict):
        return (isinstance(value, dict) and template.keys() == value.keys()
                and all(fills(template[k], value[k]) for k in template))
    if isinstance(template, list):
        return isinstance(value, list) and len(template) == len(value) and all(map(fills, template, value))
    return template == value


def run_loop(
    planner: Replanner,
    intent: str,
    execute: Callable[[GuardedStep], Any],
    max_steps: int = 8,
    context: str | None = None,
    *,
    time_cap_s: float | None = None,
    on_plan: Callable[[PlanResult], None] | None = None,
    on_step: Callable[[ExecutedStep, StepOutcome], None] | None = None,
) -> LoopResult:
    """Plan, execute, re-plan with the executed steps, until the model expects no more.

    Args:
        planner: The planner to call.
        intent: The user request.
        execute: Runs one step; returns a :class:`StepOutcome` (or any value, taken as its text).
            It may raise :class:`~helmdeck_dspy.errors.ToolServerError`: the run stops there.
        max_steps: Stop after executing this many steps.
        context: Pasted material for the request.
        time_cap_s: Stop before the next plan call or step once this many seconds have passed.
        on_plan: Called with each plan call's result as it comes.
        on_step: Called with each executed step and its outcome as it happens.
    """
    t0 = time.monotonic()
    out = LoopResult()

    def stop(reason: StopReason) -> LoopResult:
        out.stopped_because = reason
        out.seconds = round(time.monotonic() - t0, 3)
        return out

    def out_of_time() -> bool:
        return time_cap_s is not None and time.monotonic() - t0 >= time_cap_s

    while True:
        if out_of_time():
            return stop("time_cap")
        result = planner.plan(intent, context=context, prior_steps=list(out.executed) or None)
        out.plans.append(result)
        seen = getattr(execute, "plan_seen", None)  # an executor that keeps the plan-first boundary
        if seen is not None and result.ok:
            seen(result.steps)
        if on_plan is not None:
            on_plan(result)
        if not result.ok:
            return stop("failed")
        if not result.steps:
            return stop("no_steps" if not out.executed else "done")
        replan = False
        for index, step in enumerate(result.steps):
            if len(out.executed) >= max_steps:
                return stop("max_steps")
            if out_of_time():
                return stop("time_cap")
            if _failed_since_last_success(out.executed, step):
                return stop("stuck")  # it failed with these very arguments and nothing has changed since
            if _repeats_last_success(out.executed, step):
                return stop("repeated")  # it would return what the model already has
            if index > 0 and needs_earlier(step):
                replan = True  # the planner fills this step in from the results it now has
                break
            try:
                outcome = StepOutcome.of(execute(step))
            except ToolServerError as exc:
                out.error = str(exc)
                return stop("server_error")
            executed = ExecutedStep(order=len(out.executed) + 1, tool=step.tool, args=step.args,
                                    output=outcome.text[:OUTPUT_CHARS], error=outcome.error)
            out.executed.append(executed)
            out.outcomes.append(outcome)
            if on_step is not None:
                on_step(executed, outcome)
            if outcome.denied:
                return stop("denied")
            if outcome.error:
                replan = True
                break
        if not replan and (planner.variant == "full_steps" or not result.more_steps_likely):
            return stop("done")
        if len(out.executed) >= max_steps:
            return stop("max_steps")
