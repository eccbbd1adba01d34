"""The model alone over a multi-turn question: one conversation for all its turns, as in BFCL; and
the planner in that same conversation.

:class:`TurnAlone` is :class:`~helmdeck_dspy.bench.e2e.arms.AloneAgent` (the same prompt, asks,
decoding and records) with one addition: a later user turn (:meth:`TurnAlone.begin_turn`) comes as
the next user message of the same conversation, the question and the first message's ask, as BFCL
appends each turn's user message to the chat. Everything before it (the functions, the earlier
questions, answers and results) stays in the conversation.

:class:`TurnChecked` is the planner's arm in the same conversation (``loop = "chat"`` on a planner
row), so that the arms differ only in what the planner adds: the question's first answer is the
planner's own plan (its strategy, recheck and checks; with the ``plain`` strategy its request is the
first message verbatim), shown to the model as the assistant's list of those calls; every later
answer is the model's, its calls through the planner's checks before they run
(:func:`~helmdeck_dspy.planning.dialogue.checked_turn`). With ``planner_first`` off
(``loop = "chat-checked"``) the first answer is the model's too, checked like the rest.

With ``loop = "chat-bare"`` either arm keeps every answer of the model's in the conversation as its
calls in one-line JSON, the form in which the planner's first answer is shown (an ablation: is the
planner's gain the form of that first answer?).
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.bench.e2e.arms import AloneAgent, bare_calls
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.program.plain_prompt import ASK, plain_request, results_message
from helmdeck_dspy.signatures.types import ExecutedStep


def turn_message(text: str) -> str:
    """A later turn's user message: its question and the ask of the first message."""
    return f"Question: {text.strip()}\n\n{ASK}"


class TurnAlone(AloneAgent):
    """The model alone, one conversation per question (make a new one for each question)."""

    pending: str | None = None

    def begin_turn(self, text: str) -> None:
        """The user's next turn: its message opens the next plan call (the first turn's is the first message)."""
        self.pending = text if self.messages else None

    def plan(self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None) -> PlanResult:
        prior = list(prior_steps or [])
        if self.pending is not None:
            self.messages.append({"role": "user", "content": turn_message(self.pending)})
            self.pending = None
        elif not self.messages:
            self.messages.append({"role": "user", "content": plain_request(self.functions, intent, context)})
        else:
            self.messages.append({"role": "user", "content": results_message([s.model_dump() for s in prior[self.seen:]])})
        self.seen = len(prior)
        return self.answer()


class TurnChecked(TurnAlone):
    """The planner in the model alone's conversation over a multi-turn question (see the module docstring).

    Args:
        planner: The planner for the question's functions (its plan calls recorded where it records them).
        planner_first: The planner answers the question's first turn with its own plan.
    """

    def __init__(self, lm: Any, catalog: RoutingGuide, budget: Any, sampling: dict[str, Any], planner: Any,
                 planner_first: bool = True, *, bare: bool = False) -> None:
        super().__init__(lm, catalog, budget, sampling, bare=bare)
        self.planner = planner
        self.planner_first = planner_first
        self.intent = ""

    def plan(self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None) -> PlanResult:
        self.intent = intent
        if self.messages or not self.planner_first:
            return super().plan(intent, context, prior_steps)
        first = self.planner.plan(intent, context=context)
        self.messages += [{"role": "user", "content": plain_request(self.functions, intent, context)},
                          {"role": "assistant", "content": bare_calls([(s.tool, s.args) for s in first.steps])}]
        self.turns.append({"planner": [s.tool for s in first.steps], "failure": first.failure_cause})
        return first.model_copy(update={"more_steps_likely": True, "prompt_variant_used": self.variant})

    def calls_result(self, calls: list[tuple[str, dict[str, Any]]], repaired: bool, finish_reason: str | None,
                     usage: dict[str, Any]) -> PlanResult:
        from helmdeck_dspy.planning.dialogue import checked_turn

        return checked_turn(self.planner, self.intent, calls, repaired=repaired, finish_reason=finish_reason,
                            usage=usage, budget=self.budget, variant=self.variant)
