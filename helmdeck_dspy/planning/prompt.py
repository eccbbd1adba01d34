"""The one resolver of what a plan call sends: :func:`resolve_prompt` → a frozen
:class:`~helmdeck_dspy.program.prompt_spec.PromptSpec`.

Precedence, for every setting that has more than one source, is written here and nowhere else:
an explicit planner option wins over the budget row, which wins over the endpoint's default, which
wins over what the catalog's shape implies.

- answer strategy: ``PlannerOptions.answer_strategy`` > the row's ``tool_list_strategy`` (over a
  plain list of tools only) > the row's ``answer_strategy`` > the endpoint's default
  (:data:`ENDPOINT_STRATEGIES`: ``schema`` on llama.cpp's server, where it was measured, ``free``
  elsewhere);
- the ``tool_fits`` decision under a schema: ``PlannerOptions.fit_decision`` > the catalog's shape
  (on for a plain list of tools, off for a catalog with pipelines; docs/results/test-split.md);
- output cap: ``PlannerOptions.max_tokens`` > the row's ``answer_caps`` for the strategy > its ``output_tokens``;
- sampling (:func:`sampling_for`): ``PlannerOptions.temperature`` > the row's ``temperature`` (0);
  ``PlannerOptions.seed`` > :data:`DEFAULT_SEED`, sent only to endpoints that take a seed
  (:data:`SEEDED_ENDPOINTS`). An LM built with its own sampling (``make_lm(sampling=...)``) keeps it:
  the call only fills what the LM leaves unset;
- instructions: the plain tool-list text for a catalog without pipelines, else the program's own;
  program demos only when every tool they name is in the planner's catalog (both off under the
  ``before-issue-22`` preset, which reproduces the planner before the catalog fitting);
- demos from the program's compiled pool: the nearest to the request among those whose tools the
  selection kept (:func:`compiled_pool`);
- the ``plain`` strategy takes none of the above but the output cap and sampling: the catalog as
  JSON functions in the catalog's own order: the whole list whenever the request with it fits the
  row's ``input_tokens`` (:func:`plain_shows_whole`), the selection's entries only when it does not.

The function is pure: it reads its arguments and returns a spec; it calls no LM.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES, PIPELINE_RUN_TOOL
from helmdeck_dspy.catalog.select import restrict_catalog
from helmdeck_dspy.program.answer_schema import schema_wire
from helmdeck_dspy.program.demo_pool import DemoPool, best_match
from helmdeck_dspy.io.tokens import count_tokens
from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request
from helmdeck_dspy.program.prompt_spec import STRATEGIES, PromptSpec, StrategyName
from helmdeck_dspy.signatures.plan import variant_instructions

ENDPOINT_STRATEGIES: tuple[tuple[str, StrategyName], ...] = (("llamacpp/", "schema"),)
"""Endpoint model-string prefixes whose default answer strategy is not ``free``."""


DEFAULT_SEED = 7
"""The seed every plan call sends where the endpoint takes one, unless the options give another."""
SEEDED_ENDPOINTS = ("llamacpp/", "openai/", "hosted_vllm/")
"""Endpoint model-string prefixes that take a ``seed`` (llama.cpp's server, OpenAI-compatible ones)."""


def sampling_for(budget: Budget, endpoint: str, temperature: float | None = None, seed: int | None = None,
                 lm_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``temperature`` and, where the endpoint takes one, the ``seed`` a plan or filter call sends;
    sampling the LM was built with (its ``kwargs``) is kept."""
    out: dict[str, Any] = {"temperature": budget.temperature if temperature is None else temperature}
    if endpoint.startswith(SEEDED_ENDPOINTS):
        out["seed"] = DEFAULT_SEED if seed is None else seed
    out.update({k: v for k, v in (lm_kwargs or {}).items() if k in ("temperature", "seed") and v is not None})
    return out


def strategy_for(option: StrategyName | None, budget: Budget, endpoint: str, tools_only: bool = False) -> StrategyName:
    """The answer strategy: the option's, else the row's for the catalog's shape (``tools_only``: a
    catalog without pipelines), else the endpoint's default."""
    if option is not None:
        return option
    if tools_only and budget.tool_list_strategy is not None:
        return budget.tool_list_strategy
    if budget.answer_strategy is not None:
        return budget.answer_strategy
    return next((name for prefix, name in ENDPOINT_STRATEGIES if endpoint.startswith(prefix)), "free")


def plain_shows_whole(budget: Budget, whole: RoutingGuide, intent: str) -> bool:
    """Whether a ``plain`` call shows the whole catalog, unchanged and in catalog order: when the
    request with every tool fits the row's ``input_tokens``. The prompt is then the model alone's,
    byte for byte, and its head is the same on every call, so a prefix cache reuses it; the byte
    cap's per-request cut (decided on the bundled catalog under the schema strategy) changed that
    head on every call and cost a full prefill each time (issue 38, item 4)."""
    return count_tokens(plain_request(plain_functions(whole), intent)) <= budget.input_tokens


def compiled_pool(program: Any, catalog: RoutingGuide, whole: RoutingGuide | None = None) -> DemoPool | None:
    """The demo pool compiled into ``program`` (``compile --knn-demos``), keeping only the demos whose
    tools and pipelines are all in ``catalog`` (the selection): a pool is catalog-specific. With
    the pool's decline slot, a demo that declines needs its tools in ``whole`` (the planner's whole
    catalog) only, since its empty answer names none of them: those the selection dropped are kept
    for the slot alone (``DemoPool.declines``). None without a pool."""
    pool = getattr(program, "demo_pool", None)
    if pool is None:
        return None
    ids, whole_ids = catalog.id_set, (whole or catalog).id_set
    shown = tuple(d for d in pool.demos if d.entry_ids <= ids)
    slot_only = tuple(d for d in pool.demos if pool.decline_slot and not d.steps and not d.entry_ids <= ids
                      and d.entry_ids <= whole_ids)
    return DemoPool(demos=shown, declines=slot_only, k=pool.k, decline_slot=pool.decline_slot,
                    decline_below=pool.decline_below)


def resolve_prompt(
    *, variant: str, budget: Budget, endpoint: str, whole: RoutingGuide, selected: RoutingGuide | None,
    intent: str = "", program: Any = None, strategy: StrategyName | None = None, fit_decision: bool | None = None,
    max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None,
    lm_kwargs: dict[str, Any] | None = None, fit_catalog: bool = True, exclude_demo: str | None = None,
) -> PromptSpec:
    """The spec of one plan call (see the module docstring for the precedence).

    Args:
        variant: The prompt variant.
        budget: The model's budget row.
        endpoint: The LM's model string (``llamacpp/...``, ``openai/...``): its default strategy and wire.
        whole: The planner's whole catalog.
        selected: The catalog shown for this request (None: none yet, as at compile time).
        intent: The request (picks the pool demos).
        program: The plan program (its compiled demo pool, if any).
        strategy / fit_decision / max_tokens / temperature / seed: The planner's explicit options
            (None: not set).
        lm_kwargs: The LM's own settings (sampling it was built with is kept).
        fit_catalog: Fit instructions and demos to the catalog (off only in the ``before-issue-22`` preset).
        exclude_demo: A pool demo never shown (the task being answered).
    """
    name = strategy_for(strategy, budget, endpoint, tools_only=not whole.pipelines)
    cap = max_tokens or budget.cap_for(name)
    if name in MODEL_ALONE_STRATEGIES:
        kept = selected.id_set if selected is not None else whole.id_set
        shown = restrict_catalog(whole, [i for i in whole.ids() if i in kept])  # whole entries, catalog order
        return PromptSpec(variant=variant, strategy=name, catalog=plain_functions(shown), max_tokens=cap,
                          **sampling_for(budget, endpoint, temperature, seed, lm_kwargs))
    fits = (not whole.pipelines) if fit_decision is None else fit_decision
    shape = STRATEGIES[name].shape(selected, variant, strict_json=budget.json_object_format,
                                   wire=schema_wire(endpoint), fit_decision=fits)
    fields: dict[str, Any] = {}
    if fit_catalog:
        fields["demo_tools"] = whole.id_set | ({PIPELINE_RUN_TOOL} if whole.pipelines else set())
        if not whole.pipelines:
            fields["instructions"] = variant_instructions(variant, tools_only=True)
    pool = compiled_pool(program, selected, whole) if selected is not None else None
    if pool is not None:
        match = best_match(whole, intent) if pool.decline_below is not None else None
        exclude = frozenset({exclude_demo} if exclude_demo else ())
        fields["pool_demos"] = tuple(pool.nearest(intent, exclude=exclude, catalog_match=match))
    return PromptSpec(
        variant=variant, strategy=name, catalog=selected.render() if selected is not None else "",
        catalog_in_system=budget.supports_prefix_cache, max_tokens=cap,
        **sampling_for(budget, endpoint, temperature, seed, lm_kwargs),
        json_object=shape.json_object, tools=shape.tools, answer_schema=shape.answer_schema,
        schema_wire=shape.schema_wire, **fields,
    )
