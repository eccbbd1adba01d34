"""The model alone's side of an end-to-end study: a planner that :func:`run_loop` drives.

A study's planner rows are the project's :class:`~helmdeck_dspy.planning.planner.Planner` for the
model (its budget row deciding selection, strategy and variant, the row's options on top) over the
catalog the servers list. Its ``plain`` row is the same model in a plain tool-calling loop,
:class:`AloneAgent`: the tools as JSON functions in the prompt and the question, as in every
model-alone row; it answers with a JSON list of calls, and after they run their results come back
as the next user message (the same truncation as the planner's prompt) with the same ask; ``[]``
ends the run. Its answers go through the same tolerant call-list decoder as the ``plain``
strategy, and nothing else: names and arguments are sent as written.

All rows run under the same loop (step cap, time cap, the stop on a failed call planned again
unchanged), servers, sandboxes and approval policy.
"""

from __future__ import annotations

import json
from typing import Any

from helmdeck_dspy.bench.bfcl.baseline import ask_messages
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.call_list import decode_calls
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request, results_message
from helmdeck_dspy.signatures.types import ExecutedStep


def bare_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Calls as one line of JSON, ``[{"name": ..., "arguments": {...}}]``: the form in which a
    conversation shows the planner's own plan as the assistant's answer."""
    return json.dumps([{"name": name, "arguments": args} for name, args in calls], ensure_ascii=False)


class AloneAgent:
    """The model alone, one conversation per task (make a new one for each task).

    Args:
        lm: The ``dspy.LM`` (uncached calls).
        catalog: The tools it is shown, in full.
        budget: The model's budget row (its output cap; model and tier for the results).
        sampling: Temperature and seed sent with every call (the planner's).
        bare: Keep each answer in the conversation as its calls in one-line JSON (:func:`bare_calls`)
            rather than as written (a multi-turn row's ``loop = "chat-bare"``).
    """

    variant = "single_pick"  # run_loop asks again after every batch of calls, until it answers []

    def __init__(self, lm: Any, catalog: RoutingGuide, budget: Any, sampling: dict[str, Any], *, bare: bool = False) -> None:
        self.lm = lm
        self.bare = bare
        self.functions = plain_functions(catalog)
        self.budget = budget
        self.sampling = sampling
        self.messages: list[dict[str, str]] = []
        self.seen = 0
        self.turns: list[dict[str, Any]] = []

    def plan(self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None) -> PlanResult:
        prior = list(prior_steps or [])
        if not self.messages:
            self.messages.append({"role": "user", "content": plain_request(self.functions, intent, context)})
        else:
            self.messages.append({"role": "user", "content": results_message([s.model_dump() for s in prior[self.seen:]])})
        self.seen = len(prior)
        return self.answer()

    def answer(self) -> PlanResult:
        """Ask the conversation so far and decode the answer as a list of calls, sent as written."""
        base = self._base()
        try:
            completion = ask_messages(self.lm, self.messages, max_tokens=self.budget.output_tokens,
                                      sampling=self.sampling)
        except Exception as exc:  # noqa: BLE001 - a failed call ends the run as the planner's would
            self.turns.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
            return PlanResult(failure_cause="transport_error", error=str(exc)[:300], **base)
        content = completion.content or ""
        self.messages.append({"role": "assistant", "content": content})
        self.turns.append({"content": content, "finish_reason": completion.finish_reason,
                           "prompt_tokens": completion.prompt_tokens, "latency_ms": round(completion.latency_ms),
                           **({"answer_cut": True} if completion.answer_cut else {})})
        usage = {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                 "latency_ms": round(completion.latency_ms)}
        if completion.finish_reason == "length":
            return PlanResult(failure_cause="length_truncated", finish_reason="length", usage=usage, **base)
        calls, outcome = decode_calls(split_reasoning(content).visible.strip())
        if calls is None:
            return PlanResult(failure_cause="no_json", finish_reason=completion.finish_reason, usage=usage, **base)
        if self.bare:
            self.messages[-1]["content"] = bare_calls(calls)
        return self.calls_result(calls, outcome == "repaired", completion.finish_reason, usage)

    def calls_result(self, calls: list[tuple[str, dict[str, Any]]], repaired: bool, finish_reason: str | None,
                     usage: dict[str, Any]) -> PlanResult:
        """An answer's calls as the plan the loop runs: sent as written."""
        steps = [GuardedStep(order=i, tool=name, args=args) for i, (name, args) in enumerate(calls, 1)]
        return PlanResult(steps=steps, more_steps_likely=True, parse_outcome="repaired" if repaired else "strict",
                          finish_reason=finish_reason, usage=usage, **self._base())

    def _base(self) -> dict[str, Any]:
        """What every result of this agent says about how it answered."""
        return dict(prompt_variant_used="single_pick", model=self.budget.model, tier=self.budget.tier)
