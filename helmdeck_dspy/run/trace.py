"""A run as one record: :func:`run_intent` plans, executes and re-plans, and returns a :class:`RunTrace`."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.io.redaction import redact_url
from helmdeck_dspy.domain import DEFAULT_LOOP, Loop
from helmdeck_dspy.planning.dialogue import task_agent
from helmdeck_dspy.planning.execution import LoopResult, StepOutcome, run_loop
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.run.executor import McpExecutor
from helmdeck_dspy.signatures.types import ExecutedStep

DEFAULT_TIME_CAP_S = 600.0
"""The longest a run may go on (plan calls and tool calls together)."""


class ServerSummary(BaseModel):
    """One server of a run: its label, the source it was started from, and its tools."""

    label: str
    source: str = Field(description="The source as given, its URL's credentials masked (io.redaction.redact_url).")
    tools: list[str]


class RunTrace(BaseModel):
    """Everything a run did: what was asked, of which model over which servers, every plan call,
    every executed step with its whole result, and why it stopped."""

    intent: str
    model: str
    lm: str | None = Field(default=None, description="The LM spec the plans came from (None: the model id, live).")
    variant: str
    dry_run: bool = False
    started_at: str
    servers: list[ServerSummary]
    loop: LoopResult
    loop_name: Loop = Field(default="replan", description="How the run was driven (run_intent's loop).")
    turns: list[dict[str, Any]] = Field(default_factory=list, description="Under the fallback loop, once the first plan "
                                        "had nothing to run: that plan's cause, then each turn of the model's own conversation.")


def run_intent(
    planner: Any, intent: str, executor: McpExecutor, *, context: str | None = None, max_steps: int = 8,
    time_cap_s: float | None = DEFAULT_TIME_CAP_S, dry_run: bool = False,
    on_plan: Callable[[PlanResult], None] | None = None,
    on_step: Callable[[ExecutedStep, StepOutcome], None] | None = None, loop: Loop = DEFAULT_LOOP,
) -> RunTrace:
    """Plan ``intent`` and run it over ``executor``'s servers (``dry_run``: plan once, run nothing).

    Args:
        planner: A :class:`~helmdeck_dspy.planning.planner.Planner` whose catalog is the servers' tools.
        intent: The user's request.
        executor: Runs each step on its server (approval policy and call timeout included).
        context: Pasted material for the request.
        max_steps: The most steps executed.
        time_cap_s: The most seconds the run goes on (None: no cap).
        dry_run: Plan once and stop; nothing is executed.
        on_plan: Called with each plan call's result as it comes.
        on_step: Called with each executed step and its outcome as it happens.
        loop: ``fallback`` (a first plan with nothing to run hands the run to the model's own
            conversation, checked by the planner: :class:`~helmdeck_dspy.planning.dialogue.FallbackAgent`)
            or ``replan`` (the planner's re-plan loop only).
    """
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    agent = planner
    if dry_run:
        t0 = time.monotonic()
        result = planner.plan(intent, context=context)
        if on_plan is not None:
            on_plan(result)
        ran = LoopResult(plans=[result], stopped_because="dry_run" if result.ok else "failed",
                         seconds=round(time.monotonic() - t0, 3))
    else:
        agent = task_agent(planner, loop)
        ran = run_loop(agent, intent, executor, max_steps=max_steps, context=context,
                       time_cap_s=time_cap_s, on_plan=on_plan, on_step=on_step)
    servers = [ServerSummary(label=s.label, source=redact_url(s.spec.text), tools=[t.name for t in s.tools.tools])
               for s in executor.sessions.sources]
    return RunTrace(intent=intent, model=planner.budget.model, lm=planner.options.lm_spec, variant=planner.variant,
                    dry_run=dry_run, started_at=started, servers=servers, loop=ran, loop_name=loop,
                    turns=list(getattr(agent, "turns", [])))
