"""The two plan modules, built from the one PlanSignature.

``FullSteps`` asks for the whole ordered plan; ``SinglePick`` for the single next call. They
differ only in their instructions. Each scopes its own :class:`PlanAdapter` inside ``forward``
(never globally, so optimizers' own prompts keep DSPy's adapters), configured from the model's
budget through :attr:`PlanModule.render`.
"""

from __future__ import annotations

from typing import Any

import dspy

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.program.adapter import PlanAdapter, RenderOptions
from helmdeck_dspy.signatures.plan import signature_for


class PlanModule(dspy.Module):
    """A plan module for one prompt variant."""

    variant: Variant = "full_steps"

    def __init__(self, render: RenderOptions | None = None) -> None:
        super().__init__()
        self.plan = dspy.Predict(signature_for(self.variant))
        self.render = render or RenderOptions(variant=self.variant)

    def forward(
        self,
        user_intent: str,
        catalog: str,
        context: str | None = None,
        prior_steps: list[Any] | None = None,
    ) -> dspy.Prediction:
        options = self.render.model_copy(update={"variant": self.variant})
        with dspy.context(adapter=PlanAdapter(options)):
            return self.plan(user_intent=user_intent, catalog=catalog, context=context, prior_steps=prior_steps)


class FullSteps(PlanModule):
    """The whole ordered plan in one call."""

    variant: Variant = "full_steps"


class SinglePick(PlanModule):
    """Only the next call, plus whether more will follow."""

    variant: Variant = "single_pick"


MODULES: dict[str, type[PlanModule]] = {"full_steps": FullSteps, "single_pick": SinglePick}
