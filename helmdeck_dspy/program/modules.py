"""The two plan modules, built from the one PlanSignature.

``FullSteps`` asks for the whole ordered plan; ``SinglePick`` for the single next call. They
differ only in their instructions. Each scopes its own :class:`PlanAdapter` inside ``forward``
(never globally, so optimizers' own prompts keep DSPy's adapters), rendering the request's
:class:`~helmdeck_dspy.program.spec.PromptSpec`, which the caller sets with
``dspy.context(**{SPEC_KEY: spec})`` (the variant's free default without one; a spec of another
variant is refused). A module holds no
per-request state: once loaded for planning it is made read-only (:meth:`PlanModule.freeze`), and
an assignment to it raises :class:`~helmdeck_dspy.errors.FrozenProgramError`.

A module compiled with ``--knn-demos`` also carries a
:class:`~helmdeck_dspy.program.demo_pool.DemoPool` (:attr:`PlanModule.demo_pool`), saved in the
program file beside DSPy's own state, that the planner draws each request's demos from.
"""

from __future__ import annotations

from typing import Any

import dspy

from helmdeck_dspy.domain import Variant
from helmdeck_dspy.errors import ArgumentError, FrozenProgramError
from helmdeck_dspy.program.adapter import PlanAdapter
from helmdeck_dspy.program.demo_pool import DemoPool
from helmdeck_dspy.program.spec import SPEC_KEY, PromptSpec
from helmdeck_dspy.signatures.plan import signature_for


class _ReadOnlyOnceFrozen:
    """Refuses every attribute assignment once ``_frozen`` is set (see :meth:`PlanModule.freeze`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_frozen", False):
            raise FrozenProgramError(f"the plan program is read-only once loaded; {name!r} cannot be set "
                                     "(per-request settings travel in the call's PromptSpec)")
        super().__setattr__(name, value)


class PlanPredict(_ReadOnlyOnceFrozen, dspy.Predict):
    """The module's one predictor (DSPy's ``Predict``, read-only once its module is frozen)."""


class PlanModule(_ReadOnlyOnceFrozen, dspy.Module):
    """A plan module for one prompt variant."""

    variant: Variant = "full_steps"

    def __init__(self) -> None:
        super().__init__()
        self.plan = PlanPredict(signature_for(self.variant))
        self.demo_pool: DemoPool | None = None

    def freeze(self) -> PlanModule:
        """Make the module and its predictor read-only, its demos a tuple: a program shared by
        concurrent requests must not carry any request's state."""
        object.__setattr__(self.plan, "demos", tuple(self.plan.demos))
        for part in (self, self.plan):
            object.__setattr__(part, "_frozen", True)
        return self

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
        spec = dspy.settings.get(SPEC_KEY) or PromptSpec(variant=self.variant)
        if spec.variant != self.variant:
            raise ArgumentError(f"a {spec.variant} request cannot run on the {self.variant} program")
        with dspy.context(adapter=PlanAdapter(spec)):
            return self.plan(user_intent=user_intent, catalog=catalog, context=context, prior_steps=prior_steps)


class FullSteps(PlanModule):
    """The whole ordered plan in one call."""

    variant: Variant = "full_steps"


class SinglePick(PlanModule):
    """Only the next call, plus whether more will follow."""

    variant: Variant = "single_pick"


MODULES: dict[str, type[PlanModule]] = {"full_steps": FullSteps, "single_pick": SinglePick}
