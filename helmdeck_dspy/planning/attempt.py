"""One attempt at a plan: catalog selection and the plan call under the deadline.

An attempt yields a :class:`~helmdeck_dspy.planning.result.PlanResult`, its
:class:`~helmdeck_dspy.planning.result.Attempt` row and, for a transport failure, the
:class:`~helmdeck_dspy.planning.resilience.classify.ErrorInfo` the retry loop decides on; when
recording, every exchange is appended as a trace record. The LM's credentials are masked in
everything an attempt returns or writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.compact import Trim, compact_catalog
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking.bm25 import rank_bm25
from helmdeck_dspy.catalog.ranking.embedding import encoder
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.engines.lm_spec import trace_source
from helmdeck_dspy.errors import DeadlineExceeded
from helmdeck_dspy.io.redaction import redact, scrub, secret_values
from helmdeck_dspy.planning.arguments import COERCE_ARGS_KEY
from helmdeck_dspy.planning.chains import PIPELINE_CHAINS_KEY
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.planning.resilience.classify import (
    ErrorInfo,
    classify_error,
    own_error,
)
from helmdeck_dspy.planning.resilience.deadline import call_with_deadline, warm_up
from helmdeck_dspy.planning.result import Attempt, PlanResult, build_result
from helmdeck_dspy.program.answer_schema import SchemaWire, constrained_wire
from helmdeck_dspy.program.demo_pool import DemoPool, best_match
from helmdeck_dspy.program.store import ProgramRef
from helmdeck_dspy.recording.exchanges import record_exchanges
from helmdeck_dspy.signatures.plan import variant_instructions
from helmdeck_dspy.signatures.types import ExecutedStep

if TYPE_CHECKING:  # pragma: no cover
    from helmdeck_dspy.program.adapter import RenderOptions


class PlannerParts(Protocol):
    """What an attempt reads of a planner."""

    budget: Budget
    variant: str
    program: Any
    lm: Any
    catalog: RoutingGuide
    history: HistoryStore | None
    options: PlannerOptions
    program_ref: ProgramRef | None


def select_for(planner: PlannerParts, intent: str) -> tuple[RoutingGuide, Trim]:
    """The catalog a call for ``intent`` shows the model, and what was dropped to fit the budget."""
    options = planner.options
    history = planner.history if options.history_prior else None
    prior = history.prior(intent, options.caller) if history is not None else None
    selected, trim = select_catalog(
        planner.catalog, planner.budget, intent, ranker=options.ranker, prior=prior, rank_source=options.rank_source,
        arg_hints=options.arg_hints,
    )
    if options.use_filter:
        from helmdeck_dspy.program.catalog_filter import (  # imports dspy
            apply_filter,
            should_filter,
        )

        if should_filter(planner.budget, trim):
            selected, trim = apply_filter(planner.lm, planner.catalog, selected, trim, planner.budget, intent)
    return selected, trim


def wants_native(planner: PlannerParts) -> bool:
    """Whether the planner's calls offer the catalog as native tools: the options' choice, else the budget's."""
    chosen = planner.options.native_tool_calls
    return planner.budget.native_tool_calls if chosen is None else chosen


def constrained_for(planner: PlannerParts) -> SchemaWire | None:
    """How the planner's answers are constrained by a schema, if at all: the options' choice, else
    the budget row's, else the endpoint's default (:func:`constrained_wire`)."""
    chosen = planner.options.constrained_decoding
    flag = planner.budget.constrained_decoding if chosen is None else chosen
    return constrained_wire(str(getattr(planner.lm, "model", "")), flag)


def fit_decision_for(planner: PlannerParts) -> bool:
    """Whether a constrained answer opens with ``tool_fits``: the options' choice, else on for a
    plain list of tools and off for a catalog with pipelines."""
    chosen = planner.options.fit_decision
    return not planner.catalog.pipelines if chosen is None else chosen


def chains_for(planner: PlannerParts) -> dict[str, frozenset[str]] | None:
    """The pipeline chains the guards collapse (:mod:`~helmdeck_dspy.planning.chains`): the whole
    catalog's, when the option is on and it has any."""
    return (planner.catalog.pipeline_chains or None) if planner.options.pipeline_chains else None


def render_options_for(planner: PlannerParts, selected: RoutingGuide | None = None) -> RenderOptions:
    """The request shape of the planner's calls (catalog placement, output cap, JSON mode, the
    selected catalog's answer schema when decoding is constrained, or the selected catalog as
    native tools when the budget or the options ask for them)."""
    from helmdeck_dspy.program.adapter import RenderOptions  # imports dspy

    render = RenderOptions.for_budget(planner.budget, planner.variant, planner.options.max_tokens, catalog=selected,
                                      native=wants_native(planner), constrained=constrained_for(planner),
                                      fit_decision=fit_decision_for(planner), fit_last=planner.options.fit_last,
                                      pipelines_as_tools=planner.options.pipelines_as_tools)
    update: dict[str, Any] = {"strict_fit": planner.options.strict_fit,
                              "multi_call_format": planner.options.multi_call_format}
    full = planner.catalog
    if planner.options.catalog_fitting:
        update["demo_tools"] = full.id_set | ({PIPELINE_RUN_TOOL} if full.pipelines else set())
        if not full.pipelines:
            update["instructions"] = variant_instructions(planner.variant, tools_only=True)
        elif render.pipelines_as_tools and planner.variant == "full_steps":
            update["instructions"] = variant_instructions(planner.variant, pipeline_ids=True)
    if planner.options.instructions is not None:
        update["instructions"] = planner.options.instructions
    return render.model_copy(update=update)


def _warm_embedding(planner: PlannerParts) -> None:
    """Load the embedding model and embed the catalog before any deadline starts: local,
    one-off set-up (seconds on a CPU) that must not be mistaken for a slow model."""
    full = planner.options.rank_source == "full"
    ranked = planner.catalog if full else compact_catalog(planner.catalog, planner.budget)[0]
    encoder().catalog_matrix(ranked, [*ranked.packs, *ranked.pipelines])


def nearest_tools(catalog: RoutingGuide, intent: str, n: int) -> tuple[str, ...]:
    """The ``n`` entries of ``catalog`` that BM25 ranks closest to ``intent`` (those scoring above 0)."""
    return tuple(r.id for r in rank_bm25(catalog, intent)[:n] if r.score > 0)


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


@dataclass
class _Exchange:
    """What the worker thread leaves behind; read after the deadline even when abandoned."""

    calls: list[Any] = field(default_factory=list)
    trim: Trim | None = None
    demo_ids: list[str] = field(default_factory=list)
    task_id: str | None = None  # never its own demo


def _call_program(
    planner: PlannerParts, exchange: _Exchange, intent: str, context: str | None,
    prior_steps: list[ExecutedStep] | None,
) -> tuple[ParseResult | None, BaseException | None]:
    """Selection and the plan call: a parse the adapter rejected, or the transport failure."""
    import dspy

    from helmdeck_dspy.program.adapter import PlanParseError  # imports dspy
    from helmdeck_dspy.program.calls import capture_completions  # imports dspy

    with dspy.context(lm=planner.lm), capture_completions() as calls:
        exchange.calls = calls
        selected, exchange.trim = select_for(planner, intent)
        render = render_options_for(planner, selected)
        if planner.options.nearest_tools:
            render = render.model_copy(update={"nearest_tools": nearest_tools(selected, intent, planner.options.nearest_tools)})
        pool = planner.options.demo_pool or compiled_pool(planner.program, selected, planner.catalog)
        if pool is not None:
            match = best_match(planner.catalog, intent) if pool.decline_below is not None else None
            picked = pool.nearest(intent, exclude=frozenset({exchange.task_id} if exchange.task_id else ()),
                                  catalog_match=match)
            exchange.demo_ids = [d.id for d in picked]
            render = render.model_copy(update={"pool_demos": tuple(picked)})
        planner.program.render = render
        try:
            planner.program(user_intent=intent, catalog=selected.render(), context=context, prior_steps=prior_steps)
        except PlanParseError as exc:
            return exc.result, None
        except Exception as exc:  # noqa: BLE001 - transport failures become a failure cause
            mine = own_error(exc)
            if mine is not None:
                raise mine  # e.g. a replay file running out: a usage error, not a model failure
            return None, exc
    return None, None


def _result(
    planner: PlannerParts, intent: str, parse: ParseResult | None, completion: Any, trim: Trim | None,
    info: ErrorInfo | None, error: str | None, secrets: list[str],
) -> PlanResult:
    """The attempt's result: the failure when nothing was parsed, else the guarded plan (masked)."""
    budget = planner.budget
    if parse is None:
        result = PlanResult(
            prompt_variant_used=planner.variant, model=budget.model, tier=budget.tier,
            compaction=trim if trim is not None and trim.dropped else None,
            failure_cause=info.cause if info else "transport_error", error=error or "no completion",
        )
    else:
        usage = {} if completion is None else {
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "latency_ms": round(completion.latency_ms, 1),
        }
        result = build_result(
            parse, intent=intent, variant=planner.variant, model=budget.model, tier=budget.tier,
            catalog_ids=planner.catalog.id_set, pipeline_ids=planner.catalog.pipeline_ids, trim=trim,
            raw_completion=completion.content if completion is not None and parse.plan is None else None,
            usage=usage, schemas=planner.catalog.arg_schemas if planner.options.coerce_args else None,
            chains=chains_for(planner),
        )
        result.error = redact(result.error, secrets)
        result = scrub(result, secrets)  # model output that repeats a credential (an echoing proxy)
    result.catalog_in = "system" if budget.supports_prefix_cache else "user"
    result.program = planner.program_ref
    return result


def recorded_run(planner: PlannerParts) -> dict[str, Any]:
    """What a trace record of this planner keeps in ``run``: the options' ``record_run`` (a local
    model's settings), which program planned (``program``, when the planner knows) and whether
    args were coerced (:data:`COERCE_ARGS_KEY`) and chains collapsed (:data:`PIPELINE_CHAINS_KEY`)."""
    ref = planner.program_ref
    return {**(planner.options.record_run or {}), **({"program": ref.stamp()} if ref is not None else {}),
            **({COERCE_ARGS_KEY: True} if planner.options.coerce_args and planner.catalog.arg_schemas else {}),
            **({PIPELINE_CHAINS_KEY: True} if chains_for(planner) else {}),
            **({"constrained": wire} if (wire := constrained_for(planner)) else {})}


def run_attempt(
    planner: PlannerParts,
    intent: str,
    context: str | None = None,
    prior_steps: list[ExecutedStep] | None = None,
    *,
    task_id: str | None = None,
    timeout_s: float | None = None,
) -> tuple[PlanResult, Attempt, ErrorInfo | None]:
    """One try: selection and the plan call, within ``timeout_s`` (default: the retry policy's).

    Args:
        planner: The planner making the attempt.
        intent: The user request.
        context: Pasted material for the request.
        prior_steps: Steps already executed (single_pick re-plans).
        task_id: Labels the trace records when recording.
        timeout_s: The attempt's deadline in seconds.

    Returns:
        The result, its :class:`Attempt` row, and for a transport failure what the retry loop
        needs to know (else None).
    """
    options = planner.options
    warm_up(planner.lm)
    if options.ranker == "embedding":
        _warm_embedding(planner)
    t0 = time.perf_counter()
    exchange = _Exchange(task_id=task_id)
    try:
        parse, error = call_with_deadline(
            lambda: _call_program(planner, exchange, intent, context, prior_steps), timeout_s or options.retry.timeout_s
        )
    except DeadlineExceeded as exc:
        parse, error = None, exc
    calls = list(exchange.calls)  # a snapshot: an abandoned attempt may still append
    plan_calls = [c for c in calls if c.kind == "plan"]
    completion = plan_calls[-1] if plan_calls and error is None else None
    if completion is not None:
        parse = completion.parse
    secrets = secret_values(planner.lm)
    info = classify_error(error) if error is not None else None
    error_text = redact(f"{type(error).__name__}: {error}", secrets) if error is not None else None
    result = _result(planner, intent, parse, completion, exchange.trim, info, error_text, secrets)
    cap = options.max_tokens or planner.budget.output_tokens
    status = info.status if info is not None else None
    attempt = Attempt(
        model=planner.budget.model, variant=planner.variant, cause=result.failure_cause, http_status=status,
        elapsed_ms=int((time.perf_counter() - t0) * 1000), max_tokens=cap,
    )
    if options.record_path is not None:
        record_exchanges(
            options.record_path, calls, source=options.record_source or trace_source(options.lm_spec),
            budget=planner.budget, variant=planner.variant, intent=intent, task_id=task_id, secrets=secrets,
            error=error_text, http_status=status, max_tokens=cap, run={**recorded_run(planner), **({"demos": exchange.demo_ids} if exchange.demo_ids else {})},
            sampling=getattr(planner.lm, "kwargs", None), native_tools=wants_native(planner),
        )
    return result, attempt, info
