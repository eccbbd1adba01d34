"""The one resolver of what a request sends: :func:`resolve_request` → a frozen :class:`RequestPlan`.

A request plan holds the catalog selection, the first call's
:class:`~helmdeck_dspy.program.spec.PromptSpec`, and the asks again as functions of the first
answer (:meth:`RequestPlan.recheck`, :meth:`RequestPlan.call_ask`): every message the model can
be sent for a request is built here, through the answer strategy's methods.

Precedence, for every setting that has more than one source, is written here and nowhere else:
an explicit planner option wins over the LM's own settings, which win over the budget row, which
wins over the endpoint's default, which wins over what the catalog's shape implies.

- answer strategy (:func:`choose_strategy`): ``PlannerOptions.answer_strategy`` > the row's
  ``tool_list_strategy`` (over a plain list of tools only) > the endpoint's default (:data:`ENDPOINT_STRATEGIES`: ``schema`` on llama.cpp's server, where it was
  measured, ``free`` elsewhere);
- the ``tool_fits`` decision under a schema: ``PlannerOptions.fit_decision`` > the catalog's shape
  (on for a plain list of tools, off for a catalog with pipelines; docs/results/test-split.md);
- output cap: ``PlannerOptions.max_tokens`` > the row's ``answer_caps`` for the strategy > its
  ``output_tokens`` (``PlanContext.max_tokens``);
- sampling (:func:`sampling_for`): ``PlannerOptions.temperature`` > the LM's own (``make_lm(sampling=...)``)
  > :data:`DEFAULT_TEMPERATURE` (0); ``PlannerOptions.seed`` > the LM's own > :data:`DEFAULT_SEED`,
  a seed sent only to endpoints that take one (:data:`SEEDED_ENDPOINTS`);
- instructions and program demos: fitted to the catalog (the plain tool-list text for a catalog
  without pipelines; a demo only when every tool it names is in the planner's catalog) unless
  ``PlannerOptions.checks.fit_catalog`` is off;
- what the strategy itself decides: which catalog it shows, how the request is rendered, how the
  answer is read and asked again (``program.strategies``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.select import FILTERED, TOP_N, marked, select_catalog, top_n_for
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.context import PlanContext
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.strategies import AnswerStrategy, SpecInputs, strategy_named
from helmdeck_dspy.signatures.types import ExecutedStep

ENDPOINT_STRATEGIES: tuple[tuple[str, str], ...] = (("llamacpp/", "schema"),)
"""Endpoint model-string prefixes whose default answer strategy is not ``free``."""
DEFAULT_STRATEGY = "free"

DEFAULT_TEMPERATURE = 0.0
"""The temperature every plan and filter call sends unless the options or the LM give another: no
plan is a random draw at a server's default temperature."""
DEFAULT_SEED = 7
"""The seed every plan call sends where the endpoint takes one, unless the options give another."""
SEEDED_ENDPOINTS = ("llamacpp/", "openai/", "hosted_vllm/")
"""Endpoint model-string prefixes that take a ``seed`` (llama.cpp's server, OpenAI-compatible ones)."""


def sampling_for(budget: Budget, endpoint: str, temperature: float | None = None, seed: int | None = None,
                 lm_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``temperature`` and, where the endpoint takes one, the ``seed`` a plan or filter call
    sends: the explicit option (``temperature``, ``seed``), else the LM's own (``lm_kwargs``),
    else :data:`DEFAULT_TEMPERATURE` and :data:`DEFAULT_SEED`."""
    own = {k: v for k, v in (lm_kwargs or {}).items() if k in ("temperature", "seed") and v is not None}
    out: dict[str, Any] = {"temperature": temperature if temperature is not None
                           else own.get("temperature", DEFAULT_TEMPERATURE)}
    if endpoint.startswith(SEEDED_ENDPOINTS) or "seed" in own:
        out["seed"] = seed if seed is not None else own.get("seed", DEFAULT_SEED)
    return out


def choose_strategy(option: str | None, budget: Budget, endpoint: str, tools_only: bool = False) -> AnswerStrategy:
    """The answer strategy: the option's, else the row's over a plain list of tools (``tools_only``:
    a catalog without pipelines), else the endpoint's default."""
    if option is not None:
        return strategy_named(option)
    if tools_only and budget.tool_list_strategy is not None:
        return strategy_named(budget.tool_list_strategy)
    return strategy_named(next((name for prefix, name in ENDPOINT_STRATEGIES if endpoint.startswith(prefix)),
                               DEFAULT_STRATEGY))


def context_of(planner: Any) -> PlanContext:
    """The frozen context of a request to ``planner`` (a :class:`~helmdeck_dspy.planning.planner.Planner`):
    its parts, and the strategy, output cap and sampling settled by the precedence above.

    Raises:
        ArgumentError: The options or the budget row name a strategy no module defines.
    """
    endpoint = str(getattr(planner.lm, "model", ""))
    options, budget = planner.options, planner.budget
    for name in (budget.tool_list_strategy, *budget.answer_caps, *budget.decline_thresholds):
        if name is not None:
            strategy_named(name)  # a row naming an unknown strategy is refused, not ignored
    strategy = choose_strategy(options.answer_strategy, budget, endpoint, tools_only=not planner.catalog.pipelines)
    return PlanContext(
        budget=budget, variant=planner.variant, program=planner.program, program_ref=planner.program_ref,
        lm=planner.lm, catalog=planner.catalog, history=planner.history, options=options, endpoint=endpoint,
        strategy=strategy, max_tokens=options.max_tokens or budget.cap_for(strategy.name),
        sampling=MappingProxyType(sampling_for(budget, endpoint, options.temperature, options.seed,
                                               getattr(planner.lm, "kwargs", None))),
    )


def select_for(ctx: PlanContext, intent: str) -> tuple[RoutingGuide, Trim]:
    """The catalog a call for ``intent`` shows the model, and what was dropped to fit the budget
    (nothing when the strategy shows the whole list)."""
    options, whole = ctx.options, ctx.catalog
    if ctx.strategy.sees_whole(ctx.budget, whole, intent):
        size = whole.size_bytes()
        return whole, Trim(before_bytes=size, after_bytes=size)
    history = ctx.history if options.history_prior else None
    prior = history.prior(intent, options.caller) if history is not None else None
    selected, trim = select_catalog(whole, ctx.budget, intent, ranker=options.ranker, prior=prior,
                                    rank_source=options.rank_source)
    if options.use_filter:
        from helmdeck_dspy.program.catalog_filter import apply_filter, should_filter  # imports dspy

        if should_filter(ctx.budget, trim):
            lm = filter_lm(ctx)
            sampling = sampling_for(ctx.budget, str(getattr(lm, "model", "")), options.temperature, options.seed,
                                    getattr(lm, "kwargs", None))
            selected, trim = apply_filter(lm, whole, selected, trim, ctx.budget, intent, sampling=sampling)
    if options.cut_head and marked(trim.dropped, TOP_N) and not any(d.startswith(f"{FILTERED}(") for d in trim.dropped):
        picks = selected.ids()[:ctx.budget.max_catalog_entries or top_n_for(ctx.budget.tier)]  # the top-ranked
        widened = ctx.strategy.keep_head(ctx.budget, whole, picks, intent)
        if widened is not None:
            selected, trim = widened, trim.model_copy(update={
                "after_bytes": widened.size_bytes(),
                "dropped": [*trim.dropped, f"cut_head({len(widened.ids()) - len(picks)} ahead)"]})
    return selected, trim


def filter_lm(ctx: PlanContext) -> Any:
    """The LM the two-pass filter calls: the budget row's ``filter_model`` (a LiteLLM model string,
    built like the planner's own live LM and kept per process), or the planning LM when it is ""."""
    model = ctx.budget.filter_model
    if not model:
        return ctx.lm
    options = ctx.options
    return _live_lm(model, options.api_base, options.api_key_value(), options.engine, options.cache,
                    options.retry.timeout_s)


@functools.lru_cache(maxsize=16)
def _live_lm(model: str, api_base: str | None, api_key: str | None, engine: str, cache: bool, timeout: float) -> Any:
    return make_lm(model, api_base=api_base, api_key=api_key, engine=engine, cache=cache, timeout=timeout,
                   num_retries=0)


def spec_inputs(ctx: PlanContext, selected: RoutingGuide | None, intent: str = "",
                task_id: str | None = None) -> SpecInputs:
    """What the strategy builds the first spec of a request for ``intent`` over ``selected`` from."""
    return SpecInputs(
        variant=ctx.variant, budget=ctx.budget, endpoint=ctx.endpoint, whole=ctx.catalog, selected=selected,
        intent=intent, program=ctx.program, max_tokens=ctx.max_tokens, sampling=ctx.sampling,
        fit_decision=ctx.options.fit_decision, fit_catalog=ctx.options.checks.fit_catalog, exclude_demo=task_id,
    )


@dataclass(frozen=True)
class RequestPlan:
    """Everything one request can send (see the module docstring).

    Attributes:
        context: The request's settings.
        intent: The request.
        selected: The catalog the first call shows.
        trim: What selection dropped to fit the budget.
        first: The first call's spec.
    """

    context: PlanContext
    intent: str
    selected: RoutingGuide
    trim: Trim
    first: PromptSpec

    def recheck(self, first: ParseResult | None, prior_steps: list[ExecutedStep] | None) -> PromptSpec | None:
        """The narrowed ask after a declined first answer: the same request over the
        ``recheck_top`` tools the ranker gives for the request, in rank order (or the catalog's,
        ``recheck_order``), where the strategy
        rechecks, the catalog is longer than that and no step has run yet; else None."""
        ctx, top = self.context, self.context.options.recheck_top
        declined = first is not None and first.plan is not None and not first.plan.steps
        if not (top and declined and ctx.strategy.rechecks_declines) or prior_steps or len(ctx.catalog.packs) <= top:
            return None
        return ctx.strategy.recheck(self.first, ctx.top_tools(self.intent, top))

    def call_ask(self, content: str | None, retry: bool = False) -> PromptSpec:
        """The ask again for at least one call after a decline a threshold overrules
        (``planning.decision``), a caller that needs a call, or (``retry``) a call that just failed."""
        return self.context.strategy.call_ask(self.first, self.selected, content, self.context.endpoint, retry)


def first_spec(ctx: PlanContext, selected: RoutingGuide | None, intent: str = "",
               task_id: str | None = None) -> PromptSpec:
    """The first call's spec for ``intent`` over ``selected`` (pure: no LM call)."""
    return ctx.strategy.spec(spec_inputs(ctx, selected, intent, task_id))


def resolve_request(ctx: PlanContext, intent: str, task_id: str | None = None) -> RequestPlan:
    """The request plan for ``intent``: selection (which may make the LLM filter's call), then the
    first spec (``task_id``: a pool demo never shown)."""
    selected, trim = select_for(ctx, intent)
    return RequestPlan(context=ctx, intent=intent, selected=selected, trim=trim,
                       first=first_spec(ctx, selected, intent, task_id))
