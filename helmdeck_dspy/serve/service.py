"""The library calls behind the MCP tools and resources: :class:`PlanService`.

A service loads the budget table, the catalog, the history store and the LM once, keeps one
:class:`~helmdeck_dspy.planning.planner.Planner` per model id, and answers each call through the
same functions ``helmdeck-dspy plan`` uses. With ``--lm`` every model shares that one LM (a replay
file is served in call order); without it each model id is called live as itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, NamedTuple

from helmdeck_dspy.budgets import Budget, budget_for, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.ranking import RANKERS
from helmdeck_dspy.engines.lm_spec import make_lm, served_model_id
from helmdeck_dspy.errors import ArgumentError, StepCapError
from helmdeck_dspy.planning.bounds import check_request, steps_text
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.planning.resilience.policy import resolve_resilience
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.serve import resources
from helmdeck_dspy.serve.catalogs import ToolCatalogs
from helmdeck_dspy.serve.config import ServeConfig
from helmdeck_dspy.serve.route import route
from helmdeck_dspy.serve.wire import PlanRequest, RouteRequest, RouteWire
from helmdeck_dspy.signatures.types import ExecutedStep

PLANNER_CACHE_SIZE = 32
"""Planners kept (one per model id); the least recently used is dropped beyond this."""


class PlanOutcome(NamedTuple):
    """A plan call's result, and the step cap when this plan ended the loop at it."""

    result: PlanResult
    step_cap: int | None = None


SERVE_MEMORY_CACHE_ENTRIES = 1024
"""In-memory responses DSPy keeps in a serving process (its default is a million: with distinct
requests that is memory without end); the disk cache keeps the rest."""


def bound_response_cache(entries: int = SERVE_MEMORY_CACHE_ENTRIES) -> None:
    """Bound DSPy's in-memory response cache for this process (process-wide: a server runs for
    days). Only the in-memory LRU is replaced, under the cache's own lock: the disk cache (its
    open database) is left as it is."""
    import dspy
    from cachetools import LRUCache

    cache = dspy.cache
    memory = getattr(cache, "memory_cache", None)
    if not isinstance(memory, LRUCache) or memory.maxsize <= entries:
        return
    with cache._lock:
        bounded: LRUCache = LRUCache(maxsize=entries)
        for key in list(memory.keys())[-entries:]:  # the most recently used, oldest first
            bounded[key] = memory[key]
        cache.memory_cache = bounded


class PlanService:
    """Everything the server answers with, loaded once.

    Args:
        config: The server's settings (catalog, budgets, LM, history, step cap, ranker, retries).

    Raises:
        DataFileError: The catalog or budget table is malformed.
        LMSpecError: ``config.lm_spec`` cannot be built (e.g. a missing replay file).
        ArgumentError: An unknown ranker.
    """

    def __init__(self, config: ServeConfig) -> None:
        bound_response_cache()
        if config.ranker not in RANKERS:
            raise ArgumentError(f"unknown ranker {config.ranker!r}; expected one of {sorted(RANKERS)}")
        self.config = config
        self.table = load_budget_table(config.budgets_path)
        self.catalog = load_catalog(config.catalog_path)
        self.history = HistoryStore(config.history_path) if config.history else None
        resilience = resolve_resilience(None, timeout_s=config.timeout_s, retries=config.retries)
        self.retry, self.fallback = resilience.retry, resilience.fallback
        self.lm: Any = None
        self.lm_budget: Budget | None = None
        """The row of the model the server's LM calls: no client's request gets larger bounds."""
        if config.lm_spec:
            self.lm = make_lm(config.lm_spec, api_base=config.api_base, timeout=self.retry.timeout_s, num_retries=0,
                              cache=config.cache)
            served = served_model_id(config.lm_spec)
            self.lm_budget = budget_for(served, self.table) if served else None
        self._planners: OrderedDict[str, Planner] = OrderedDict()
        self._lock = threading.Lock()
        self.tool_catalogs = ToolCatalogs()

    @property
    def max_steps(self) -> int:
        return self.config.max_steps

    def planner(self, model: str) -> Planner:
        """The planner for ``model`` (built on first use; LMs are not built per call).

        Raises:
            LMSpecError: Without ``--lm``, ``model`` is not a LiteLLM model string.
        """
        with self._lock:
            found = self._planners.get(model)
            if found is not None:
                self._planners.move_to_end(model)
                return found
        built = Planner.for_model(
            model, lm=self.lm, catalog=self.catalog, budgets=self.table, api_base=self.config.api_base,
            history=self.history, ranker=self.config.ranker, retry=self.retry, fallback=self.fallback,
            temperature=self.config.temperature, seed=self.config.seed, cache=self.config.cache,
        )
        with self._lock:
            self._planners[model] = built
            while len(self._planners) > PLANNER_CACHE_SIZE:
                self._planners.popitem(last=False)
        return built

    def plan(self, request: PlanRequest, caller: str) -> PlanOutcome:
        """Plan one request for ``caller`` (whose history row it writes), over the caller's ``tools``
        when given (fitted to the model's budget like any catalog), else over the server's catalog.

        The step cap: a request whose ``prior_steps`` already reach it is refused, and a plan that
        brings the loop to it has ``more_steps_likely`` cleared, so a client looping on that flag stops.

        A request whose intent, context and prior steps exceed the model's ``input_tokens`` is
        refused before any LM call (:func:`~helmdeck_dspy.planning.bounds.check_request`).

        Raises:
            StepCapError: ``prior_steps`` already hold ``max_steps`` steps.
            InputTooLargeError: The request is larger than the model's budget allows.
            ToolsArgumentError: ``tools`` cannot be read as a tool list.
            InputError: The model id cannot be called (no ``--lm`` and not a LiteLLM string).
        """
        return self.plan_steps(request.model, request.user_intent, caller, context=request.context_text(),
                               prior=request.executed_steps(), tools=request.tools, max_tokens=request.max_tokens)

    def plan_steps(self, model: str, intent: str, caller: str, *, context: str | None = None,
                   prior: list[ExecutedStep] | None = None, tools: list[dict[str, Any]] | None = None,
                   max_tokens: int | None = None, **options: Any) -> PlanOutcome:
        """What :meth:`plan` does, for any surface: the MCP tool and the OpenAI endpoint (``serve.chat``).
        ``max_tokens`` is capped by the served row's ``output_tokens``; ``options`` are this call's
        other planner options (``must_call``)."""
        prior = prior or []
        done = len(prior)
        if done >= self.max_steps:
            raise StepCapError(f"step cap reached: {done} steps already ran for this intent and the server allows "
                               f"{self.max_steps} per loop (serve --max-steps)")
        budget = self.budget_for(model)
        check_request(intent, context, input_tokens=budget.input_tokens, model=self._bound_name(model),
                      prior=steps_text(prior))
        shared = self.planner(model)
        cap = min(max_tokens, budget.output_tokens) if max_tokens is not None else None  # never above the row's
        per_call = {"caller": caller, **({"max_tokens": cap} if cap is not None else {}), **options}
        # this call's own planner: the client row within the server LM's bounds, the caller's tools
        # (else the server's catalog) and the caller's settings
        planner = shared.replace(budget=budget, catalog=self.catalog_for(tools),
                                 options=shared.options.model_copy(update=per_call))
        result = planner.plan(intent, context=context, prior_steps=prior or None)
        if result.ok and result.more_steps_likely and done + len(result.steps) >= self.max_steps:
            return PlanOutcome(result.model_copy(update={"more_steps_likely": False}), self.max_steps)
        return PlanOutcome(result)

    def route(self, request: RouteRequest) -> RouteWire:
        """``helmdeck.route``: the best entry of the catalog (the caller's tools, else the server's) fitted
        to the model's budget (no LM call); an intent over the model's ``input_tokens`` is refused
        before it is ranked, as :meth:`plan` refuses it.

        Raises:
            InputTooLargeError: The intent is larger than the model's budget allows.
        """
        budget = self.budget_for(request.model)
        check_request(request.user_intent, None, input_tokens=budget.input_tokens,
                      model=self._bound_name(request.model))
        return route(self.catalog_for(request.tools), budget, request.user_intent, ranker=self.config.ranker)

    def budget_for(self, model: str) -> Budget:
        """The budget a request for ``model`` plans under: the model's row picks the tier and the
        prompt variant; its input, output and catalog bounds are cut to the row of the model the
        server's LM calls (:attr:`lm_budget`), so naming a bigger model buys a caller nothing."""
        return budget_for(model, self.table).bounded_by(self.lm_budget)

    def _bound_name(self, model: str) -> str:
        """Whose row sets the input bound, for the refusal message."""
        own = budget_for(model, self.table)
        if self.lm_budget is not None and self.lm_budget.input_tokens and self.lm_budget.input_tokens < own.input_tokens:
            return f"{self.lm_budget.model}, the LM this server calls"
        return model

    def catalog_for(self, tools: list[dict[str, Any]] | None) -> RoutingGuide:
        """The catalog a call plans over: the caller's ``tools`` (read once per distinct list), else
        the server's own.

        Raises:
            ToolsArgumentError: ``tools`` cannot be read as a tool list.
        """
        return self.catalog if tools is None else self.tool_catalogs.get(tools)

    def context_budgets(self) -> dict[str, Any]:
        return resources.context_budgets(self.table)

    def models(self) -> dict[str, Any]:
        return resources.models(self.table)

    def routing_guide(self) -> dict[str, Any]:
        return resources.routing_guide(self.catalog)

    def my_plans(self, caller: str) -> dict[str, Any]:
        return resources.my_plans(self.history, caller)
