"""One attempt at a plan: catalog selection and the plan call under the deadline.

An attempt yields a :class:`~helmdeck_dspy.planning.result.PlanResult`, its
:class:`~helmdeck_dspy.planning.result.Attempt` row and, for a transport failure, the
:class:`~helmdeck_dspy.planning.resilience.classify.ErrorInfo` the retry loop decides on; when
recording, every exchange is appended as a trace record. The LM's credentials are masked in
everything an attempt returns or writes.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

from helmdeck_dspy.catalog.compact import Trim, compact_catalog
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.catalog.ranking.embedding import encoder
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES
from helmdeck_dspy.engines.lm_spec import make_lm, trace_source
from helmdeck_dspy.errors import ContextOverflowError, DeadlineExceeded, RecordWriteError
from helmdeck_dspy.io.redaction import redact, scrub, secret_values
from helmdeck_dspy.planning.arguments import COERCE_ARGS_KEY, PLACEHOLDERS_KEY
from helmdeck_dspy.planning.chains import PIPELINE_CHAINS_KEY
from helmdeck_dspy.planning.again import ask_again
from helmdeck_dspy.planning.decision import DECISION_KEY
from helmdeck_dspy.planning.guards import MAP_NAMES_KEY
from helmdeck_dspy.planning.options import BEFORE_ISSUE_22
from helmdeck_dspy.planning.parts import PlannerParts
from helmdeck_dspy.planning.prompt import plain_shows_whole, resolve_prompt, sampling_for, strategy_for
from helmdeck_dspy.planning.resilience.classify import (
    ErrorInfo,
    classify_error,
    own_error,
)
from helmdeck_dspy.planning.resilience.deadline import call_with_deadline, warm_up
from helmdeck_dspy.planning.result import Attempt, PlanResult, build_result
from helmdeck_dspy.program.prompt_spec import SPEC_KEY, STRATEGIES, PromptSpec
from helmdeck_dspy.recording.exchanges import record_exchanges
from helmdeck_dspy.signatures.types import ExecutedStep


def select_for(planner: PlannerParts, intent: str) -> tuple[RoutingGuide, Trim]:
    """The catalog a call for ``intent`` shows the model, and what was dropped to fit the budget
    (nothing when a ``plain`` call shows the whole list: :func:`plain_shows_whole`)."""
    options = planner.options
    whole = planner.catalog
    strategy = strategy_for(options.answer_strategy, planner.budget, str(getattr(planner.lm, "model", "")),
                            tools_only=not whole.pipelines)
    if strategy in MODEL_ALONE_STRATEGIES and plain_shows_whole(planner.budget, whole, intent):
        size = whole.size_bytes()
        return whole, Trim(before_bytes=size, after_bytes=size)
    history = planner.history if options.history_prior else None
    prior = history.prior(intent, options.caller) if history is not None else None
    selected, trim = select_catalog(
        planner.catalog, planner.budget, intent, ranker=options.ranker, prior=prior, rank_source=options.rank_source,
    )
    if options.use_filter:
        from helmdeck_dspy.program.catalog_filter import (  # imports dspy
            apply_filter,
            should_filter,
        )

        if should_filter(planner.budget, trim):
            lm = filter_lm(planner)
            sampling = sampling_for(planner.budget, str(getattr(lm, "model", "")), options.temperature,
                                    options.seed, getattr(lm, "kwargs", None))
            selected, trim = apply_filter(lm, planner.catalog, selected, trim, planner.budget, intent,
                                          sampling=sampling)
    return selected, trim


def filter_lm(planner: PlannerParts) -> Any:
    """The LM the two-pass filter calls: the budget row's ``filter_model`` (a LiteLLM model string,
    built like the planner's own live LM and kept per process), or the planning LM when it is ""."""
    model = planner.budget.filter_model
    if not model:
        return planner.lm
    options = planner.options
    return _live_lm(model, options.api_base, options.api_key_value(), options.engine, options.cache,
                    options.retry.timeout_s)


@functools.lru_cache(maxsize=16)
def _live_lm(model: str, api_base: str | None, api_key: str | None, engine: str, cache: bool, timeout: float) -> Any:
    return make_lm(model, api_base=api_base, api_key=api_key, engine=engine, cache=cache, timeout=timeout,
                   num_retries=0)


def output_cap(planner: PlannerParts) -> int:
    """The output cap in force: the options' ``max_tokens``, else the budget row's cap for the
    strategy the planner answers with (``answer_caps``, else ``output_tokens``)."""
    strategy = strategy_for(planner.options.answer_strategy, planner.budget, str(getattr(planner.lm, "model", "")),
                            tools_only=not planner.catalog.pipelines)
    return planner.options.max_tokens or planner.budget.cap_for(strategy)


def prompt_for(planner: PlannerParts, selected: RoutingGuide | None, intent: str = "",
               task_id: str | None = None) -> PromptSpec:
    """The spec of one plan call of ``planner`` for ``intent`` over ``selected``
    (:func:`~helmdeck_dspy.planning.prompt.resolve_prompt` with the planner's options)."""
    options = planner.options
    return resolve_prompt(
        variant=planner.variant, budget=planner.budget, endpoint=str(getattr(planner.lm, "model", "")),
        whole=planner.catalog, selected=selected, intent=intent, program=planner.program,
        strategy=options.answer_strategy, fit_decision=options.fit_decision, max_tokens=options.max_tokens,
        temperature=options.temperature, seed=options.seed, lm_kwargs=getattr(planner.lm, "kwargs", None),
        fit_catalog=shipped_checks(planner), exclude_demo=task_id,
    )


def rechecks_top(planner: PlannerParts) -> int:
    """How many top-ranked tools a declined first ``plain`` plan is asked again over (0: not asked
    again): the option, except under the preset that reproduces the planner before issue 22."""
    return planner.options.recheck_top if shipped_checks(planner) else 0


def fills_placeholders(planner: PlannerParts) -> bool:
    """Whether the guards fill placeholder paths from the request (the option, except under the
    preset that reproduces the planner before the argument checks)."""
    return planner.options.fill_placeholders and shipped_checks(planner)


def chains_for(planner: PlannerParts) -> dict[str, frozenset[str]] | None:
    """The pipeline chains the guards collapse (:mod:`~helmdeck_dspy.planning.chains`): the whole
    catalog's, unless the preset reproduces the planner before them."""
    return (planner.catalog.pipeline_chains or None) if shipped_checks(planner) else None


def shipped_checks(planner: PlannerParts) -> bool:
    """Whether the post-model checks since issue 22 run (argument checks, the chain guard, near-miss
    names): always, but in the ``before-issue-22`` preset."""
    return planner.options.preset != BEFORE_ISSUE_22


def _warm_embedding(planner: PlannerParts) -> None:
    """Load the embedding model and embed the catalog before any deadline starts: local,
    one-off set-up (seconds on a CPU) that must not be mistaken for a slow model."""
    full = planner.options.rank_source == "full"
    ranked = planner.catalog if full else compact_catalog(planner.catalog, planner.budget)[0]
    encoder().catalog_matrix(ranked, [*ranked.packs, *ranked.pipelines])


@dataclass
class _Exchange:
    """What the worker thread leaves behind; read after the deadline even when abandoned."""

    calls: list[Any] = field(default_factory=list)
    trim: Trim | None = None
    spec: PromptSpec | None = None
    rechecked: PromptSpec | None = None  # the ask again: narrowed after a declined plan, or a threshold's call
    decision: dict[str, Any] | None = None  # the first answer's decline probability (planning.decision)
    task_id: str | None = None  # never its own demo


def _call_program(
    planner: PlannerParts, exchange: _Exchange, intent: str, context: str | None,
    prior_steps: list[ExecutedStep] | None,
) -> tuple[ParseResult | None, BaseException | None]:
    """Selection and the plan call: a parse the adapter rejected, or the transport failure."""
    import dspy

    from helmdeck_dspy.engines.call_control import expecting
    from helmdeck_dspy.program.adapter import PlanParseError  # imports dspy
    from helmdeck_dspy.program.calls import capture_completions  # imports dspy

    # No per-request state kept in the process: DSPy's call history and its module trace (both
    # append every call, prompt and catalog included, to lists that live as long as the process).
    with dspy.context(lm=planner.lm, disable_history=True, trace=None), capture_completions() as calls:
        exchange.calls = calls
        selected, exchange.trim = select_for(planner, intent)
        spec = exchange.spec = prompt_for(planner, selected, intent, exchange.task_id)

        def ask(spec: PromptSpec) -> None:
            # the request's own spec, never set on the shared program; a stream stops where its answer closes
            with dspy.context(**{SPEC_KEY: spec}), expecting(STRATEGIES[spec.strategy].answer_kind):
                planner.program(user_intent=intent, catalog=spec.catalog, context=context, prior_steps=prior_steps)

        try:
            ask(spec)
            again, exchange.decision = ask_again(planner, spec, selected, calls[-1] if calls else None, intent,
                                                 prior_steps, rechecks_top(planner))
            if again is not None:  # asked once more, never twice
                exchange.rechecked = again
                ask(again)
        except PlanParseError as exc:
            return exc.result, None
        except Exception as exc:  # noqa: BLE001 - transport failures become a failure cause
            mine = own_error(exc)
            if mine is not None and not isinstance(mine, ContextOverflowError):
                raise mine  # e.g. a replay file running out: a usage error, not a model failure
            # a prompt the served context cannot take fails the attempt, as the server's refusal did
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
            usage=usage, schemas=planner.catalog.arg_schemas if shipped_checks(planner) else None,
            chains=chains_for(planner), map_names=shipped_checks(planner),
            fill_placeholders=fills_placeholders(planner),
        )
        result.error = redact(result.error, secrets)
        result = scrub(result, secrets)  # model output that repeats a credential (an echoing proxy)
    result.catalog_in = "system" if budget.supports_prefix_cache else "user"
    result.program = planner.program_ref
    return result


def recorded_run(planner: PlannerParts, spec: PromptSpec | None = None, rechecked: PromptSpec | None = None,
                 decision: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a trace record of this planner keeps in ``run``: the options' ``record_run`` (a local
    model's settings), which program planned (``program``, when the planner knows), whether
    args were coerced (:data:`COERCE_ARGS_KEY`) and chains collapsed (:data:`PIPELINE_CHAINS_KEY`),
    and the prompt spec the call was given (its strategy, wire, pool demos and hash), and the
    spec it was asked again with (``rechecked``: narrowed after a declined first plan, or the call a
    decline threshold asked for), and the first answer's decline probability when it was asked for (``decision``)."""
    ref = planner.program_ref
    coerced = shipped_checks(planner) and planner.catalog.arg_schemas
    stamp = spec.stamp() if spec is not None else {}
    return {**(planner.options.record_run or {}), **({"program": ref.stamp()} if ref is not None else {}),
            **({COERCE_ARGS_KEY: True} if coerced else {}),
            **({PIPELINE_CHAINS_KEY: True} if chains_for(planner) else {}),
            **({MAP_NAMES_KEY: True} if shipped_checks(planner) else {}),
            **({PLACEHOLDERS_KEY: True} if fills_placeholders(planner) else {}),
            **({"recheck_top": rechecks_top(planner)} if rechecks_top(planner) else {}),
            **({"constrained": stamp["wire"]} if "wire" in stamp else {}),
            **({"prompt": stamp} if stamp else {}),
            **({"rechecked": rechecked.stamp()} if rechecked is not None else {}),
            **({DECISION_KEY: decision} if decision is not None else {}),
            **({"demos": [d.id for d in spec.pool_demos]} if spec is not None and spec.pool_demos else {})}


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
    if exchange.spec is not None:
        result.strategy, result.rechecked = exchange.spec.strategy, exchange.rechecked is not None
        result.p_decline = (exchange.decision or {}).get("p_decline")
    cap = exchange.spec.max_tokens if exchange.spec is not None else output_cap(planner)
    status = info.status if info is not None else None
    attempt = Attempt(
        model=planner.budget.model, variant=planner.variant, cause=result.failure_cause, http_status=status,
        elapsed_ms=int((time.perf_counter() - t0) * 1000), max_tokens=cap,
    )
    if options.record_path is not None:
        try:
            record_exchanges(
                options.record_path, calls, source=options.record_source or trace_source(options.lm_spec),
                budget=planner.budget, variant=planner.variant, intent=intent, task_id=task_id, secrets=secrets,
                error=error_text, http_status=status, max_tokens=cap,
                run=recorded_run(planner, exchange.spec, exchange.rechecked, exchange.decision),
                sampling=exchange.spec.model_dump(include={"temperature", "seed"}) if exchange.spec else None,
                native_tools=bool(exchange.spec and exchange.spec.tools),
            )
        except OSError as exc:  # the plan stands; the caller is told its record is missing
            raise RecordWriteError(str(options.record_path), exc.strerror or str(exc), result) from None
    return result, attempt, info
