"""The model alone over a multi-turn question: one conversation for all its turns, as in BFCL.

:class:`TurnAlone` is :class:`~helmdeck_dspy.bench.e2e.arms.AloneAgent` (the same prompt, asks,
decoding and records) with one addition: a later user turn (:meth:`TurnAlone.begin_turn`) comes as
the next user message of the same conversation, the question and the first message's ask, as BFCL
appends each turn's user message to the chat. Everything before it (the functions, the earlier
questions, answers and results) stays in the conversation.
"""

from __future__ import annotations

from helmdeck_dspy.bench.e2e.arms import AloneAgent
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
