"""The two plan modules, built from the one PlanSignature.

``FullSteps`` asks for the whole ordered plan; ``SinglePick`` for the single next call. They
differ only in their instructions. Each scopes its own :class:`PlanAdapter` inside ``forward``
(never globally, so optimizers' own prompts keep DSPy's adapters), configured from the model's
budget through :attr:`PlanModule.render`. A module compiled with ``--knn-demos`` also carries a
:class:`~helmdeck_dspy.program.demo_pool.DemoPool` (:attr:`PlanModule.demo_pool`), saved in the
program file beside DSPy's own state, that the planner draws each request's demos from.
"""

from __future__ import annotations

from typing import Any

import dspy

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.program.adapter import PlanAdapter, RenderOptions
from helmdeck_dspy.program.demo_pool import DemoPool
from helmdeck_dspy.signatures.plan import signature_for


class PlanModule(dspy.Module):
    """A plan module for one prompt variant."""

    variant: Variant = "full_steps"

    def __init__(self, render: RenderOptions | None = None) -> None:
        super().__init__()
        self.plan = dspy.Predict(signature_for(self.variant))
        self.render = render or RenderOptions(variant=self.variant)
        self.demo_pool: DemoPool | None = None

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        state = super().dump_state(json_mode=json_mode)
        if self.demo_pool is not None:
            state["demo_pool"] = self.demo_pool.model_dump(mode="json")
        return state

    def load_state(self, state: dict[str, Any], **kwargs: Any) -> PlanModule:
        pool = state.get("demo_pool")
        loaded = DemoPool.model_validate(pool) if pool is not None else None  # raises before self is touched
        super().load_state(state, **kwargs)
        self.demo_pool = loaded
        return self

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
