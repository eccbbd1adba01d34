"""What a compile is asked to do: :class:`CompileOptions` (how, shared by every program of a run)
and :class:`CompileRequest` (one program: its tier or model, its variant, its tasks).

No DSPy here: building a request is cheap and checks its names
(:meth:`CompileRequest.check`) before anything heavy is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.budgets import BudgetTable
from helmdeck_dspy.compilation.settings import OptimizerSettings
from helmdeck_dspy.domain import TIERS, VARIANTS
from helmdeck_dspy.errors import UsageValueError
from helmdeck_dspy.tasks import PlanTask

Optimizer = Literal["fit", "bootstrap", "mipro", "gepa"]
OPTIMIZERS: tuple[Optimizer, ...] = ("fit", "bootstrap", "mipro", "gepa")


def check_optimizer(optimizer: str, lm: str | None) -> None:
    """Raise :class:`UsageValueError` (exit 2) for an unknown optimizer, or one other than ``fit``
    without an LM."""
    if optimizer not in OPTIMIZERS:
        raise UsageValueError(f"unknown optimizer {optimizer!r}; expected one of {OPTIMIZERS}", "--optimizer")
    if optimizer != "fit" and not lm:
        raise UsageValueError(f"optimizer {optimizer} needs an LM (--lm: a model, replay:PATH or sim:PROFILE)", "--lm")


class CompileOptions(BaseModel):
    """How to compile: the optimizer, the LMs, the seed, where results go. One run of several
    programs shares them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = Field(default=None, description="Compile this model's own programs, under its budget row "
                              "(saved as models/SLUG/V.json); None: tier programs.")
    optimizer: str = Field(default="fit", description=f"One of {OPTIMIZERS} (checked by CompileRequest.check).")
    lm: str | None = Field(default=None, description="The task LM: the model the program is compiled for "
                           "(`sim:auto`: each tier's simulator profile).")
    teacher_lm: str | None = Field(default=None, description="The stronger LM that bootstraps demos, proposes "
                                   "MIPROv2's instructions and makes GEPA's reflections (default: `lm`).")
    seed: int = Field(default=0, description="Passed to the LMs and the optimizers.")
    knn_demos: int = Field(default=0, ge=0, description="Save a demo pool of the train tasks over the catalog in "
                           "the program, from which each request gets its K nearest demos (0: no pool).")
    decline_slot: bool = Field(default=False, description="The pool keeps one demo that declines among each "
                               "request's K (needs knn_demos; DemoPool.decline_slot).")
    decline_gate: bool = Field(default=False, description="The decline slot opens only for requests the catalog "
                               "matches less closely than any train or valset task a tool serves (needs "
                               "decline_slot; DemoPool.decline_below, fit_decline_gate).")
    history_traces: tuple[Path, ...] = Field(default=(), description="Trace files the planner recorded: their "
                                             "plans that plan history lists as accepted join the demo pool "
                                             "(needs knn_demos; compilation.history_pool).")
    history_store: Path | None = Field(default=None, description="The plan-history database (default: this "
                                       "install's).")
    temperature: float | None = Field(default=None, description="The task LM's sampling temperature "
                                      "(None: the endpoint's); use the one the model will run at.")
    settings: OptimizerSettings | None = Field(default=None, description="Default: eval/compile.toml's.")
    out_root: Path | None = Field(default=None, description="Where programs and manifest.json go "
                                  "(default: the bundled compiled/).")


class CompileRequest(BaseModel):
    """One program to compile: a tier's (``tier``), or ``options.model``'s own (``tier`` None:
    the model's tier), for ``variant``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tier: str | None = None
    variant: str
    options: CompileOptions = CompileOptions()
    train: list[PlanTask] | None = Field(default=None, description="Default: the bundled train split.")
    dev: list[PlanTask] | None = Field(default=None, description="Default: the bundled dev split; the first "
                                       "`settings.valset` tasks are the valset.")
    budgets: BudgetTable | None = Field(default=None, description="The table a model's row is read from "
                                        "(default: the bundled one).")

    def check(self) -> None:
        """Raise :class:`UsageValueError` (exit 2) for an unknown tier, variant or optimizer, a missing
        LM, or history traces or a decline slot without a demo pool, or a decline gate without the slot."""
        model = self.options.model
        if self.tier is None and not model:
            raise UsageValueError("give a tier or a model to compile for")
        if (self.tier not in TIERS and not (model and self.tier is None)) or self.variant not in VARIANTS:
            raise UsageValueError(f"unknown tier/variant {self.tier}/{self.variant}")
        check_optimizer(self.options.optimizer, self.options.lm)
        if self.options.history_traces and not self.options.knn_demos:
            raise UsageValueError("history traces join the demo pool: give --knn-demos K as well")
        if self.options.decline_slot and not self.options.knn_demos:
            raise UsageValueError("the decline slot is one of the pool's demos: give --knn-demos K as well")
        if self.options.decline_gate and not self.options.decline_slot:
            raise UsageValueError("the decline gate opens the decline slot: give --decline-slot as well")
