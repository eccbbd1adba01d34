"""The retry and fallback loop around plan attempts: :func:`run_plan`.

Each attempt of a model is retried per its :class:`~.policy.RetryPolicy` when it failed in
transport; once a model's attempts are spent, the :class:`~.policy.FallbackChain` decides by
cause what runs next (a single_pick re-plan, a larger output cap, the next model) or that the
failure is returned. Every attempt is kept as an :class:`~helmdeck_dspy.planning.result.Attempt`
on the returned :class:`~helmdeck_dspy.planning.result.PlanResult`.

A retry after an attempt deadline is sent only once the server has let go of the timed-out request
(its stream closed: :mod:`.deadline`), never queued behind it; when the server has not let go within
one more deadline, the failure is returned.

LiteLLM's and DSPy's own retries are switched off for LMs the planner builds (``num_retries=0``),
so this loop is the only place a request is repeated. It drives anything shaped like
:class:`Attempter` (the planner, or a scripted stand-in in tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.planning.resilience.classify import ErrorInfo, should_retry
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    RetryPolicy,
)
from helmdeck_dspy.planning.result import Attempt, PlanResult
from helmdeck_dspy.signatures.types import ExecutedStep


class ModelBudget(Protocol):
    """The part of a budget the loop reads."""

    model: str
    output_tokens: int


class Attempter(Protocol):
    """What :func:`run_plan` needs of a planner."""

    variant: Variant

    @property
    def budget(self) -> ModelBudget:
        """The budget row the planner runs under."""
        ...

    def attempt(
        self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None, *,
        task_id: str | None = None, timeout_s: float | None = None,
    ) -> tuple[PlanResult, Attempt, ErrorInfo | None]:
        """One try within ``timeout_s``: the result, its attempt row, and for a transport failure its ErrorInfo."""
        ...

    @property
    def output_cap(self) -> int:
        """The output cap in force."""
        ...

    def derive(self, *, variant: str | None = None, max_tokens: int | None = None) -> Attempter:
        """The same planner with another prompt variant and/or output cap."""
        ...

    def for_fallback(self, target: FallbackModel) -> Attempter:
        """The planner for a fallback model, built like this one."""
        ...


def _retry_model(
    planner: Attempter, policy: RetryPolicy, attempts: list[Attempt], sleep: Callable[[float], None], **call: Any
) -> PlanResult:
    """Up to ``policy.max_attempts`` attempts of one planner; transport failures retried per policy."""
    result: PlanResult | None = None
    for number in range(1, policy.max_attempts + 1):
        result, attempt, info = planner.attempt(timeout_s=policy.timeout_s, **call)
        attempts.append(attempt)
        if result.ok or info is None or not should_retry(info, policy) or number == policy.max_attempts:
            return result
        if info.settled is not None and not info.settled.wait(policy.timeout_s):
            return result  # the server is still on the timed-out request: a retry would queue behind it
        wait = policy.delay(number, info.retry_after)
        attempt.retry_in_ms = int(wait * 1000)
        sleep(wait)
    assert result is not None
    return result


def _length_step(planner: Attempter, chain: FallbackChain, raised: bool) -> tuple[Attempter, bool] | None:
    """The next planner to try after ``length_truncated``, and whether its cap was raised."""
    if chain.on_length in ("single_pick", "single_pick_then_cap") and planner.variant == "full_steps":
        return planner.derive(variant="single_pick"), raised
    if chain.on_length in ("raise_cap", "single_pick_then_cap") and not raised:
        cap = planner.output_cap
        bigger = min(int(cap * chain.cap_factor), chain.max_output_tokens)
        if bigger > cap:
            return planner.derive(max_tokens=bigger), True
    return None


def run_plan(
    planner: Attempter,
    *,
    policy: RetryPolicy | None = None,
    chain: FallbackChain | None = None,
    sleep: Callable[[float], None] = time.sleep,
    **call: Any,
) -> PlanResult:
    """Plan with retries and the fallback chain; the result records every attempt and who answered.

    Args:
        planner: The primary model's planner.
        policy: Attempts, backoff and deadline per model (default :class:`RetryPolicy`).
        chain: What runs after a model's attempts fail (default: nothing).
        sleep: Waits out a backoff (tests pass a recorder).
        **call: The attempt's arguments (intent, context, prior_steps, task_id).
    """
    policy = policy or RetryPolicy()
    chain = chain or FallbackChain()
    attempts: list[Attempt] = []
    current, raised, next_index = planner, False, 0
    hops = 0
    while True:
        result = _retry_model(current, policy, attempts, sleep, **call)
        if result.ok:
            result.answered_by = current.budget.model
            break
        cause = result.failure_cause
        hops += 1
        if cause in chain.surface or hops > 2 * (len(chain.models) + 1) + 2:
            break
        nxt: Attempter | None = None
        if cause == "length_truncated":
            step = _length_step(current, chain, raised)
            if step is not None:
                nxt, raised = step
        elif cause in chain.next_model_on and next_index < len(chain.models):
            nxt = planner.for_fallback(chain.models[next_index])
            next_index += 1
            raised = False
        if nxt is None:
            break
        current = nxt
    result.attempts = attempts
    return result
