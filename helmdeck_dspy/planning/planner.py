"""The embeddable planner: ``Planner.for_model(model_id).plan(intent)``.

Per call: catalog selection for the model's budget → the compiled module for (tier, variant) →
one LM call → parse → guards → :class:`PlanResult`, plus a plan_history audit row. Each call is an
*attempt* (:mod:`.attempt`) under the retry policy's deadline; :func:`.resilience.loop.run_plan`
retries it or hands it to the fallback chain, and the result lists every attempt.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import Budget, BudgetTable, budget_for, load_budget_table
from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.domain import DEFAULT_LOOP, VARIANTS, Loop, Variant
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.errors import ArgumentError, FrozenPlannerError
from helmdeck_dspy.io.redaction import protect_loggers
from helmdeck_dspy.planning.bounds import check_request, steps_text
from helmdeck_dspy.planning.attempt import run_attempt
from helmdeck_dspy.planning.context import PlanContext
from helmdeck_dspy.planning.request import context_of, resolve_request, select_for
from helmdeck_dspy.planning.execution import LoopResult, run_loop
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import HistoryStore, record_quietly
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.planning.resilience.classify import ErrorInfo
from helmdeck_dspy.planning.resilience.loop import run_plan
from helmdeck_dspy.planning.resilience.policy import (
    FallbackChain,
    FallbackModel,
    RetryPolicy,
)
from helmdeck_dspy.planning.result import Attempt, PlanResult
from helmdeck_dspy.program.store import PROGRAM_CHOICES, ProgramRef, resolve_program
from helmdeck_dspy.signatures.types import ExecutedStep


class Planner:
    """A planner bound to one model: its budget, compiled module, catalog, LM and options.

    A planner is a value: nothing can be assigned to it once built (:class:`FrozenPlannerError`);
    :meth:`replace`, :meth:`derive` and :meth:`for_fallback` return new planners. Each attempt
    reads it through one frozen :class:`~helmdeck_dspy.planning.context.PlanContext`.

    Args:
        budget: The model's budget (tier, caps, prompt variant).
        program: The module it plans with: the model's own program, its tier's, a file, or bare
            instructions (see :func:`~helmdeck_dspy.program.store.resolve_program`).
        lm: The ``dspy.LM`` to call.
        program_ref: Which program ``program`` is (reported on every result and trace record; None
            when the caller built the module itself).
        catalog: The full catalog.
        history: Where audit rows go (and the history prior comes from); None for neither.
        options: Selection, recording, retry and fallback settings.
    """

    def __init__(
        self, *, budget: Budget, program: Any, lm: Any, catalog: RoutingGuide,
        history: HistoryStore | None = None, options: PlannerOptions | None = None,
        program_ref: ProgramRef | None = None,
    ) -> None:
        fields = {"budget": budget, "variant": budget.resolved_prompt_variant, "program": program,
                  "program_ref": program_ref, "lm": lm, "catalog": catalog, "history": history,
                  "options": options or PlannerOptions()}
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        protect_loggers()  # exception text logged on the way (e.g. a failed filter call) is masked

    budget: Budget
    variant: Variant
    program: Any
    program_ref: ProgramRef | None
    lm: Any
    catalog: RoutingGuide
    history: HistoryStore | None
    options: PlannerOptions

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenPlannerError(f"a planner is immutable; {name!r} cannot be set (use Planner.replace)")

    def __delattr__(self, name: str) -> None:
        raise FrozenPlannerError(f"a planner is immutable; {name!r} cannot be deleted")

    def replace(self, *, budget: Budget | None = None, catalog: RoutingGuide | None = None,
                options: PlannerOptions | None = None) -> Planner:
        """This planner with another budget row, catalog and/or options (same program and LM).

        Raises:
            ArgumentError: ``budget`` names another prompt variant (:meth:`derive` switches programs).
        """
        if budget is not None and budget.resolved_prompt_variant != self.variant:
            raise ArgumentError(f"a {budget.resolved_prompt_variant} row needs its own program; use derive(variant=...)")
        return Planner(budget=budget or self.budget, program=self.program, lm=self.lm,
                       catalog=catalog or self.catalog, history=self.history, options=options or self.options,
                       program_ref=self.program_ref)

    @classmethod
    def for_model(
        cls, model_id: str, lm: Any = None, catalog: RoutingGuide | str | Path | None = None, *,
        budgets: BudgetTable | str | Path | None = None, compiled_root: Path | None = None,
        api_base: str | None = None, variant: str | None = None, api_key: str | None = None,
        engine: str = "auto", cache: bool = True, retry: RetryPolicy | None = None,
        fallback: FallbackChain | None = None, history: HistoryStore | None = None, **options: Any,
    ) -> Planner:
        """Everything a model needs: budget lookup, variant, compiled program, catalog, LM.

        The program is the model's own (compiled for this exact id and variant, listed in the
        manifest) when one exists, else its tier's; ``program=`` in ``options`` chooses otherwise.

        Args:
            model_id: The model id to plan for (the budget lookup key).
            lm: A ``dspy.LM``, an LM spec string (``replay:PATH``, ``sim:PROFILE``, a LiteLLM
                model string), or None to call ``model_id`` live. A given ``dspy.LM`` with
                ``num_retries`` is used as a copy with ``num_retries=0``: retries are ``retry``'s.
            catalog: A catalog, a path to one, or None for the bundled catalog.
            budgets: A budget table or its path (default: the bundled table).
            compiled_root: Where compiled programs live (default: the bundled ``compiled/``).
            api_base: API base URL for a live OpenAI-compatible endpoint.
            variant: Force ``full_steps`` or ``single_pick`` instead of the budget's variant.
            api_key: API key for a live LM (kept on the LM only; never written anywhere).
            engine: DSPy engine selection for a live LM (``auto``, ``litellm``, ``lm15``).
            cache: Use DSPy's response cache for a live or simulated LM.
            retry: Attempts, backoff and per-attempt deadline (default :class:`RetryPolicy`).
            fallback: What to try after a model's attempts fail (default: no other model).
            history: Where audit rows go (and the history prior comes from).
            **options: Other :class:`PlannerOptions` fields (ranker, record_path, max_tokens...).

        Raises:
            ArgumentError: An unknown variant or an option of the wrong type.
            TypeError: A keyword that is not a planner option.
        """
        table = budgets if isinstance(budgets, BudgetTable) else load_budget_table(budgets)
        opts = PlannerOptions.from_arguments(
            retry=retry or RetryPolicy(), fallback=fallback or FallbackChain(), compiled_root=compiled_root,
            budgets=table, api_base=api_base, api_key=api_key, engine=engine, cache=cache, **options,
        )
        return cls.from_options(model_id, lm, catalog, opts, variant=variant, history=history)

    @classmethod
    def from_options(
        cls, model_id: str, lm: Any, catalog: RoutingGuide | str | Path | None, options: PlannerOptions, *,
        variant: str | None = None, history: HistoryStore | None = None,
    ) -> Planner:
        """The planner for ``model_id`` with ``options`` (see :meth:`for_model` for the arguments)."""
        budget = budget_for(model_id, options.budgets or load_budget_table(None))
        if variant is not None:
            if variant not in VARIANTS:
                raise ArgumentError(f"unknown prompt variant {variant!r}")
            budget = budget.model_copy(update={"prompt_variant": variant})
        guide = catalog if isinstance(catalog, RoutingGuide) else load_catalog(catalog)
        if lm is None or isinstance(lm, str):
            spec = lm or model_id
            # Retries are run_plan's: DSPy/LiteLLM make exactly one request per attempt.
            lm = make_lm(spec, api_base=options.api_base, api_key=options.api_key_value(), engine=options.engine,
                         cache=options.cache, timeout=options.retry.timeout_s, num_retries=0)
            options = options.model_copy(update={"lm_spec": spec})
        elif getattr(lm, "num_retries", 0) and callable(getattr(lm, "copy", None)):
            lm = lm.copy(num_retries=0)  # a given LM's own retries would hide under (and multiply) the policy's
        program, ref = _program_for(budget, options)
        return cls(budget=budget, program=program, lm=lm, catalog=guide, history=history, options=options,
                   program_ref=ref)

    def derive(self, *, variant: str | None = None, max_tokens: int | None = None) -> Planner:
        """This planner with another prompt variant (its compiled program) and/or output cap."""
        budget, program, ref = self.budget, self.program, self.program_ref
        if variant is not None and variant != self.variant:
            budget = self.budget.model_copy(update={"prompt_variant": variant})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an uncompiled fallback variant is still a plan
                program, ref = _program_for(budget, self.options, switched=True)
        options = self.options.model_copy(update={"max_tokens": max_tokens}) if max_tokens is not None else self.options
        return Planner(budget=budget, program=program, lm=self.lm, catalog=self.catalog, history=self.history,
                       options=options, program_ref=ref)

    def for_fallback(self, target: FallbackModel) -> Planner:
        """The planner for a fallback model: same catalog, history, options, policy and chain as this
        one; its own LM (built alike), budget and program (``auto``, ``tier`` and ``bare`` carry
        over; a file or ``tier:T``, chosen for this model, does not), without this planner's output
        cap override."""
        api_base = self.options.api_base if target.api_base is None else (target.api_base or None)
        # a program file or another tier's program was chosen for this model, not for the fallback
        program = self.options.program if self.options.program in (None, *PROGRAM_CHOICES) else None
        options = self.options.model_copy(update={"api_base": api_base, "max_tokens": None, "lm_spec": None,
                                                  "program": program})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Planner.from_options(target.model, target.lm or target.model, self.catalog, options,
                                        history=self.history)

    def context(self) -> PlanContext:
        """The frozen settings a request to this planner runs with."""
        return context_of(self)

    def select(self, intent: str) -> tuple[RoutingGuide, Trim]:
        """The catalog a call for ``intent`` shows the model, and what was dropped to fit the budget."""
        return select_for(self.context(), intent)

    @property
    def output_cap(self) -> int:
        """The output cap in force: the ``max_tokens`` option, else the budget row's cap for the
        strategy the planner answers with (``answer_caps``, else ``output_tokens``)."""
        return self.context().max_tokens

    def prompt_spec(self, intent: str) -> Any:
        """The :class:`~helmdeck_dspy.program.spec.PromptSpec` a call for ``intent`` would be
        sent with (selection included; the LLM filter may make a call)."""
        return resolve_request(self.context(), intent).first

    def plan(
        self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None, *,
        task_id: str | None = None,
    ) -> PlanResult:
        """Plan ``intent`` under the retry policy and fallback chain; model misbehaviour comes back
        in ``failure_cause``, never raised.

        Args:
            intent: The user request.
            context: Pasted material for the request.
            prior_steps: Steps already executed (single_pick re-plans).
            task_id: Labels the trace records when recording (the gold task the call answers).

        Raises:
            ArgumentError: ``intent`` is empty.
            InputTooLargeError: The intent, context and prior steps hold more tokens than the
                budget row's ``input_tokens`` (every surface: ``plan``, ``run``, ``serve``, the API).
        """
        if not intent or not intent.strip():
            raise ArgumentError("intent is required")
        check_request(intent, context, input_tokens=self.budget.input_tokens, model=self.budget.model,
                      prior=steps_text(prior_steps or []))
        t0 = time.perf_counter()
        result = run_plan(self, policy=self.options.retry, chain=self.options.fallback, intent=intent,
                          context=context, prior_steps=prior_steps, task_id=task_id)
        if result.ok:
            record_quietly(
                self.history, intent=intent, complexity=result.complexity, steps=result.steps,
                model=result.answered_by or self.budget.model, caller=self.options.caller,
                duration_ms=int((time.perf_counter() - t0) * 1000),
            )
        return result

    def attempt(
        self, intent: str, context: str | None = None, prior_steps: list[ExecutedStep] | None = None, *,
        task_id: str | None = None, timeout_s: float | None = None,
    ) -> tuple[PlanResult, Attempt, ErrorInfo | None]:
        """One try within ``timeout_s`` (see :func:`helmdeck_dspy.planning.attempt.run_attempt`)."""
        return run_attempt(self.context(), intent, context, prior_steps, task_id=task_id, timeout_s=timeout_s)

    def run_loop(
        self, intent: str, execute: Callable[[GuardedStep], Any], max_steps: int = 8, context: str | None = None,
        *, loop: Loop = DEFAULT_LOOP, **options: Any,
    ) -> LoopResult:
        """Plan, execute, re-plan until the model expects no more (see :func:`.execution.run_loop`
        for ``time_cap_s``, ``on_plan`` and ``on_step``; :class:`helmdeck_dspy.run.McpExecutor`
        executes over MCP servers). With ``loop = "fallback"`` (the default) a first plan with
        nothing to run hands the task to the model's own conversation, checked by this planner
        (:func:`.dialogue.task_agent`); ``"replan"``: this planner's re-plans only."""
        from helmdeck_dspy.planning.dialogue import task_agent

        return run_loop(task_agent(self, loop), intent, execute, max_steps=max_steps, context=context, **options)


def _program_for(budget: Budget, options: PlannerOptions, switched: bool = False) -> tuple[Any, ProgramRef]:
    """The module and program reference for ``budget``'s model, tier and variant.

    A program file chosen for one variant does not fit another: after a variant switch
    (``switched``) the lookup is ``auto`` again.
    """
    choice = options.program
    if switched and choice not in (None, *PROGRAM_CHOICES) and not choice.startswith("tier:"):
        choice = "auto"
    return resolve_program(budget.model, budget.tier, budget.resolved_prompt_variant, options.compiled_root, choice)
