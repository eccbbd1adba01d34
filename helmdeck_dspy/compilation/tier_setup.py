"""What a tier's compile works with: its settings, budget, render options, catalog and examples.

``eval/compile.toml`` holds one ``[tier.T]`` table per tier: the budget row that stands for the
tier, how many demos it may carry, its prompt-token target, a typical intent (for measuring the
prompt) and the simulator profile ``--lm sim:auto`` means. Every compile-time call runs under the
tier's budget (output cap, catalog cap, strict JSON, catalog placement) exactly as at runtime.
"""

from __future__ import annotations

from typing import Any

import dspy
from pydantic import BaseModel, Field

from helmdeck_dspy.budgets import Budget, BudgetTable, budget_for
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, TIERS, VARIANTS, complexity_for
from helmdeck_dspy.errors import DataFileError, InputError
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.io.tokens import count_message_tokens
from helmdeck_dspy.planning.request import DEFAULT_STRATEGY, DEFAULT_TEMPERATURE
from helmdeck_dspy.program.strategies import SpecInputs, strategy_named
from helmdeck_dspy.program.adapter import PlanAdapter
from helmdeck_dspy.program.spec import SPEC_KEY
from helmdeck_dspy.signatures.types import PlanStep
from helmdeck_dspy.tasks import PlanTask


class TierConfig(BaseModel):
    """One ``[tier.T]`` table of ``eval/compile.toml``."""

    budget_model: str
    max_demos: int = Field(ge=0)
    prompt_token_target: int = Field(ge=0)
    typical_intent: str
    sim_profile: str = Field(description="The simulator profile `sim:auto` means for this tier.")


def load_tier_config(tier: str) -> TierConfig:
    """The compile settings of ``tier``.

    Raises:
        DataFileError: ``eval/compile.toml`` is unreadable or has no valid ``[tier.T]`` table.
    """
    path = bundled_dir() / "compile.toml"
    data = read_toml(path)
    try:
        return TierConfig.model_validate(data["tier"][tier])
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFileError(str(path), f"no valid [tier.{tier}] settings: {exc}") from None


def demo_steps(task: PlanTask, variant: str) -> tuple[list[PlanStep], bool]:
    """The gold plan as demo output steps (one for single_pick) and more_steps_likely."""
    gold = task.steps[:1] if variant == "single_pick" else task.steps
    steps = []
    for i, g in enumerate(gold, 1):
        target = g.args.get("id") if g.tool == PIPELINE_RUN_TOOL else g.tool
        args = {k: v for k, v in g.args.items() if v is not None}
        if g.tool == PIPELINE_RUN_TOOL:
            args.setdefault("inputs", {})
        steps.append(PlanStep(order=i, tool=g.tool, args=args, rationale=f"{target} covers this part of the request."))
    return steps, variant == "single_pick" and len(task.steps) > 1


class TierSetup:
    """Everything a compile needs: budget, render options, catalog selection, examples.

    A tier program is compiled under the budget row of the tier's ``budget_model``; a model's own
    program (:meth:`for_model`) under that model's row, with its tier's demo and prompt settings.

    Args:
        tier: ``A``, ``B`` or ``C``.
        variant: ``full_steps`` or ``single_pick``.
        catalog: The catalog to select from (default: the bundled one).
        budget: The budget every call runs under (default: the tier's ``budget_model`` row).

    Raises:
        InputError: an unknown tier or variant.
        DataFileError: the tier's settings or budget row do not fit together.
    """

    def __init__(self, tier: str, variant: str, catalog: RoutingGuide | None = None, budget: Budget | None = None) -> None:
        if tier not in TIERS or variant not in VARIANTS:
            raise InputError(f"unknown tier/variant {tier}/{variant}")
        self.tier, self.variant = tier, variant
        self.config = load_tier_config(tier)
        self.budget: Budget = budget or budget_for(self.config.budget_model)
        if self.budget.tier != tier:
            raise DataFileError("compile.toml", f"budget row {self.budget.model} is tier {self.budget.tier}, not {tier}")
        self.catalog = catalog or load_catalog()
        self.spec = strategy_named(DEFAULT_STRATEGY).spec(SpecInputs(
            variant=variant, budget=self.budget, endpoint="", whole=self.catalog, selected=None,
            max_tokens=self.budget.output_tokens, sampling={"temperature": DEFAULT_TEMPERATURE}, fit_catalog=False))
        """What a compile's plan calls send: the row's free answer format (the catalog differs per
        example and goes in as an input); set for them with :meth:`scope`."""

    @classmethod
    def for_model(cls, model_id: str, variant: str, budgets: BudgetTable | None = None) -> TierSetup:
        """The setup for compiling ``model_id``'s own program: its budget row and its tier's settings."""
        budget = budget_for(model_id, budgets)
        return cls(budget.tier, variant, budget=budget)

    def scope(self) -> Any:
        """A ``dspy.context`` in which the plan module renders with this setup's spec."""
        return dspy.context(**{SPEC_KEY: self.spec})

    def catalog_for(self, intent: str) -> str:
        """The catalog as the planner would offer it for ``intent`` under the tier's byte cap."""
        selected, _ = select_catalog(self.catalog, self.budget, intent)  # the planner's default ranking
        return selected.render()

    def example(self, task: PlanTask, with_labels: bool = True) -> Any:
        """A ``dspy.Example`` for ``task`` (with the gold plan as its labels unless ``with_labels`` is False)."""
        fields: dict[str, Any] = {
            "user_intent": task.intent, "catalog": self.catalog_for(task.intent), "context": task.context,
            "prior_steps": None, "task_id": task.id,
        }
        if with_labels:
            steps, more = demo_steps(task, self.variant)
            fields.update(steps=steps, complexity=complexity_for([s.tool for s in steps], more), more_steps_likely=more,
                          reasoning=task.notes or "Chosen from the catalog entries that fit the request.")
        return dspy.Example(**fields).with_inputs("user_intent", "catalog", "context", "prior_steps")

    def prompt_tokens(self, program: Any, intent: str | None = None) -> int:
        """Tokens of the prompt the program renders for ``intent`` (the typical intent by default)."""
        adapter = PlanAdapter(self.spec)
        it = intent or self.config.typical_intent
        messages = adapter.format(
            program.plan.signature, program.plan.demos, {"user_intent": it, "catalog": self.catalog_for(it)}
        )
        return count_message_tokens(messages[0]["content"], messages[1:])
