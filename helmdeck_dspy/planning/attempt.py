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
from typing import Any

from helmdeck_dspy.catalog.compact import Trim, compact_catalog
from helmdeck_dspy.catalog.ranking.embedding import encoder
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.engines.lm_spec import trace_source
from helmdeck_dspy.errors import ContextOverflowError, DeadlineExceeded, RecordWriteError
from helmdeck_dspy.io.redaction import redact, scrub, secret_values
from helmdeck_dspy.planning.again import ask_again
from helmdeck_dspy.planning.arguments import COERCE_ARGS_KEY
from helmdeck_dspy.planning.grounding import GROUND_PATHS_KEY, PLACEHOLDERS_KEY
from helmdeck_dspy.planning.chains import PIPELINE_CHAINS_KEY
from helmdeck_dspy.planning.context import PlanContext
from helmdeck_dspy.planning.decision import DECISION_KEY
from helmdeck_dspy.planning.guards import MAP_NAMES_KEY
from helmdeck_dspy.planning.request import resolve_request
from helmdeck_dspy.planning.resilience.classify import ErrorInfo, classify_error, own_error
from helmdeck_dspy.planning.resilience.deadline import call_with_deadline, warm_up
from helmdeck_dspy.planning.result import Attempt, PlanResult, build_result
from helmdeck_dspy.program.spec import SPEC_KEY, PromptSpec
from helmdeck_dspy.recording.exchanges import record_exchanges
from helmdeck_dspy.signatures.types import ExecutedStep


def _warm_embedding(ctx: PlanContext) -> None:
    """Load the embedding model and embed the catalog before any deadline starts: local,
    one-off set-up (seconds on a CPU) that must not be mistaken for a slow model."""
    full = ctx.options.rank_source == "full"
    ranked = ctx.catalog if full else compact_catalog(ctx.catalog, ctx.budget)[0]
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
    ctx: PlanContext, exchange: _Exchange, intent: str, context: str | None,
    prior_steps: list[ExecutedStep] | None,
) -> tuple[ParseResult | None, BaseException | None]:
    """Selection and the plan call: a parse the adapter rejected, or the transport failure."""
    import dspy

    from helmdeck_dspy.engines.call_control import expecting
    from helmdeck_dspy.program.adapter import PlanParseError  # imports dspy
    from helmdeck_dspy.program.calls import capture_completions  # imports dspy

    # No per-request state kept in the process: DSPy's call history and its module trace (both
    # append every call, prompt and catalog included, to lists that live as long as the process).
    with dspy.context(lm=ctx.lm, disable_history=True, trace=None), capture_completions() as calls:
        exchange.calls = calls
        plan = resolve_request(ctx, intent, exchange.task_id)
        exchange.trim, exchange.spec = plan.trim, plan.first

        def ask(spec: PromptSpec) -> None:
            # the request's own spec, never set on the shared program; a stream stops where its answer closes
            with dspy.context(**{SPEC_KEY: spec}), expecting(ctx.strategy.answer_kind):
                ctx.program(user_intent=intent, catalog=spec.catalog, context=context, prior_steps=prior_steps)

        try:
            ask(plan.first)
            again, exchange.decision = ask_again(plan, calls[-1] if calls else None, prior_steps)
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
    ctx: PlanContext, intent: str, parse: ParseResult | None, completion: Any, trim: Trim | None,
    info: ErrorInfo | None, error: str | None, secrets: list[str],
) -> PlanResult:
    """The attempt's result: the failure when nothing was parsed, else the guarded plan (masked)."""
    budget = ctx.budget
    if parse is None:
        result = PlanResult(
            prompt_variant_used=ctx.variant, model=budget.model, tier=budget.tier,
            compaction=trim if trim is not None and trim.dropped else None,
            failure_cause=info.cause if info else "transport_error", error=error or "no completion",
        )
    else:
        usage = {} if completion is None else {
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "latency_ms": round(completion.latency_ms, 1),
        }
        result = build_result(
            parse, intent=intent, variant=ctx.variant, model=budget.model, tier=budget.tier,
            catalog_ids=ctx.catalog.id_set, pipeline_ids=ctx.catalog.pipeline_ids, trim=trim,
            raw_completion=completion.content if completion is not None and parse.plan is None else None,
            usage=usage, schemas=ctx.arg_schemas, chains=ctx.chains, map_names=ctx.options.checks.map_names,
            ground=ctx.grounding(intent),
        )
        result.error = redact(result.error, secrets)
        result = scrub(result, secrets)  # model output that repeats a credential (an echoing proxy)
    result.catalog_in = "system" if budget.supports_prefix_cache else "user"
    result.program = ctx.program_ref
    return result


def recorded_run(ctx: PlanContext, spec: PromptSpec | None = None, rechecked: PromptSpec | None = None,
                 decision: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a trace record of this planner keeps in ``run``: the options' ``record_run`` (a local
    model's settings), which program planned (``program``, when the planner knows), whether
    args were coerced (:data:`COERCE_ARGS_KEY`) and chains collapsed (:data:`PIPELINE_CHAINS_KEY`),
    and the prompt spec the call was given (its strategy, wire, pool demos and hash), and the
    spec it was asked again with (``rechecked``: narrowed after a declined first plan, or the call a
    decline threshold asked for), and the first answer's decline probability when it was asked for (``decision``)."""
    ref = ctx.program_ref
    options = ctx.options
    stamp = spec.stamp() if spec is not None else {}
    return {**(options.record_run or {}), **({"program": ref.stamp()} if ref is not None else {}),
            **({COERCE_ARGS_KEY: True} if ctx.arg_schemas else {}),
            **({PIPELINE_CHAINS_KEY: True} if ctx.chains else {}),
            **({MAP_NAMES_KEY: True} if options.checks.map_names else {}),
            **({PLACEHOLDERS_KEY: True} if options.fill_placeholders else {}),
            **({GROUND_PATHS_KEY: True} if options.ground_paths else {}),
            **({"recheck_top": options.recheck_top} if options.recheck_top else {}),
            **({"retry_errors": True} if options.retry_errors else {}),
            **({"cut_head": True} if options.cut_head else {}),
            **({"constrained": stamp["wire"]} if "wire" in stamp else {}),
            **({"prompt": stamp} if stamp else {}),
            **({"rechecked": rechecked.stamp()} if rechecked is not None else {}),
            **({DECISION_KEY: decision} if decision is not None else {}),
            **({"demos": [d.id for d in spec.pool_demos]} if spec is not None and spec.pool_demos else {})}


def run_attempt(
    ctx: PlanContext,
    intent: str,
    context: str | None = None,
    prior_steps: list[ExecutedStep] | None = None,
    *,
    task_id: str | None = None,
    timeout_s: float | None = None,
) -> tuple[PlanResult, Attempt, ErrorInfo | None]:
    """One try: selection and the plan call, within ``timeout_s`` (default: the retry policy's).

    Args:
        ctx: The request's settings.
        intent: The user request.
        context: Pasted material for the request.
        prior_steps: Steps already executed (single_pick re-plans).
        task_id: Labels the trace records when recording.
        timeout_s: The attempt's deadline in seconds.

    Returns:
        The result, its :class:`Attempt` row, and for a transport failure what the retry loop
        needs to know (else None).
    """
    options = ctx.options
    warm_up(ctx.lm)
    if options.ranker == "embedding":
        _warm_embedding(ctx)
    t0 = time.perf_counter()
    exchange = _Exchange(task_id=task_id)
    try:
        parse, error = call_with_deadline(
            lambda: _call_program(ctx, exchange, intent, context, prior_steps), timeout_s or options.retry.timeout_s
        )
    except DeadlineExceeded as exc:
        parse, error = None, exc
    calls = list(exchange.calls)  # a snapshot: an abandoned attempt may still append
    plan_calls = [c for c in calls if c.kind == "plan"]
    completion = plan_calls[-1] if plan_calls and error is None else None
    if completion is not None:
        parse = completion.parse
    secrets = secret_values(ctx.lm)
    info = classify_error(error) if error is not None else None
    error_text = redact(f"{type(error).__name__}: {error}", secrets) if error is not None else None
    result = _result(ctx, intent, parse, completion, exchange.trim, info, error_text, secrets)
    if exchange.spec is not None:
        result.strategy, result.rechecked = exchange.spec.strategy, exchange.rechecked is not None
        result.p_decline = (exchange.decision or {}).get("p_decline")
    cap = exchange.spec.max_tokens if exchange.spec is not None else ctx.max_tokens
    status = info.status if info is not None else None
    attempt = Attempt(
        model=ctx.budget.model, variant=ctx.variant, cause=result.failure_cause, http_status=status,
        elapsed_ms=int((time.perf_counter() - t0) * 1000), max_tokens=cap,
    )
    if options.record_path is not None:
        try:
            record_exchanges(
                options.record_path, calls, source=options.record_source or trace_source(options.lm_spec),
                budget=ctx.budget, variant=ctx.variant, intent=intent, task_id=task_id, secrets=secrets,
                error=error_text, http_status=status, max_tokens=cap,
                run=recorded_run(ctx, exchange.spec, exchange.rechecked, exchange.decision),
                sampling=exchange.spec.model_dump(include={"temperature", "seed"}) if exchange.spec else None,
            )
        except OSError as exc:  # the plan stands; the caller is told its record is missing
            raise RecordWriteError(str(options.record_path), exc.strerror or str(exc), result) from None
    return result, attempt, info
