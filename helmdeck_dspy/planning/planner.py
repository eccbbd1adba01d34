"""The embeddable planner: ``Planner.for_model(model_id).plan(intent)``.

Per call: catalog selection for the model's budget (compaction, ranking, optional history prior,
optional LLM filter) → the compiled module for (tier, variant) → one LM call → parse → guards →
:class:`PlanResult`, plus a plan_history audit row and, when recording, a trace record.

Each call is an *attempt* bounded by the retry policy's deadline; failed attempts are retried or
handed to the fallback chain by :func:`helmdeck_dspy.planning.resilience.loop.run_plan`, and the result lists
them all (``attempts``, ``answered_by``).
"""

from __future__ import annotations

import copy
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from helmdeck_dspy.budgets import Budget, BudgetTable, budget_for, load_budget_table
from helmdeck_dspy.catalog.compact import Trim
from helmdeck_dspy.catalog.models import RoutingGuide, load_catalog
from helmdeck_dspy.catalog.select import select_catalog
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.history import HistoryStore, record_quietly
from helmdeck_dspy.planning.redaction import protect_loggers, redact, secret_values
from helmdeck_dspy.planning.resilience.loop import (
    DeadlineExceeded,
    ErrorInfo,
    FallbackChain,
    FallbackModel,
    RetryPolicy,
    call_with_deadline,
    classify_error,
    run_plan,
    warm_up,
)
from helmdeck_dspy.planning.result import Attempt, PlanResult, build_result
from helmdeck_dspy.program.store import load_program
from helmdeck_dspy.signatures.types import ExecutedStep
from helmdeck_dspy.traces.record import TraceRecord, append_trace, utc_now


def _reraise_usage_errors(exc: BaseException) -> None:
    """Errors of ours inside DSPy's wrapping (e.g. a replay file running out) are not model failures."""
    from helmdeck_dspy.errors import HelmdeckError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, HelmdeckError):
            raise seen
        seen = seen.__cause__ or seen.__context__


class LoopResult(BaseModel):
    """What :meth:`Planner.run_loop` did."""

    plans: list[PlanResult] = Field(default_factory=list)
    executed: list[ExecutedStep] = Field(default_factory=list)
    stopped_because: Literal["done", "max_steps", "failed", "no_steps"]


class Planner:
    """A planner bound to one model: its budget, compiled module, catalog and LM.

    Selection defaults to BM25 over the full entries: on the gold dev+test tasks it keeps every
    gold tool for 84% of Tier C requests against 72% for helmdeck's lexical ranking of the
    compacted catalog (benchmarks/bench_selection.py). ``ranker="lexical",
    rank_source="compacted"`` restores helmdeck's behaviour.
    """

    def __init__(
        self,
        *,
        budget: Budget,
        program: Any,
        lm: Any,
        catalog: RoutingGuide,
        ranker: str = "bm25",
        rank_source: Literal["compacted", "full"] = "full",
        history: HistoryStore | None = None,
        history_prior: bool = False,
        use_filter: bool = True,
        max_tokens: int | None = None,
        caller: str | None = None,
        record_path: str | Path | None = None,
        lm_spec: str | None = None,
        record_source: str | None = None,
        retry: RetryPolicy | None = None,
        fallback: FallbackChain | None = None,
        compiled_root: Path | None = None,
    ) -> None:
        self.budget = budget
        self.variant = budget.resolved_prompt_variant
        self.program = program
        self.lm = lm
        self.catalog = catalog
        self.ranker = ranker
        self.rank_source = rank_source
        self.history = history
        self.history_prior = history_prior
        self.use_filter = use_filter
        self.max_tokens = max_tokens
        self.caller = caller
        self.record_path = Path(record_path) if record_path else None
        self.lm_spec = lm_spec
        self.record_source = record_source
        self.retry = retry or RetryPolicy()
        self.fallback = fallback or FallbackChain()
        self.compiled_root = compiled_root
        protect_loggers()  # exception text logged on the way (e.g. a failed filter call) is masked
        # How for_model built this planner, so fallback models are built alike (set by for_model).
        self._origin: dict[str, Any] = {}

    @classmethod
    def for_model(
        cls,
        model_id: str,
        lm: Any = None,
        catalog: RoutingGuide | str | Path | None = None,
        *,
        budgets: BudgetTable | str | Path | None = None,
        compiled_root: Path | None = None,
        api_base: str | None = None,
        variant: str | None = None,
        api_key: str | None = None,
        engine: str = "auto",
        cache: bool = True,
        retry: RetryPolicy | None = None,
        fallback: FallbackChain | None = None,
        **options: Any,
    ) -> Planner:
        """Everything a model needs: budget lookup, variant, compiled program, catalog, LM.

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
            **options: Passed to :class:`Planner` (ranker, history, record_path, max_tokens...).
        """
        from helmdeck_dspy.planning.lm import make_lm

        table = budgets if isinstance(budgets, BudgetTable) else load_budget_table(budgets)
        budget = budget_for(model_id, table)
        if variant is not None:
            if variant not in ("full_steps", "single_pick"):
                raise ValueError(f"unknown prompt variant {variant!r}")
            budget = budget.model_copy(update={"prompt_variant": variant})
        guide = catalog if isinstance(catalog, RoutingGuide) else load_catalog(catalog)
        policy = retry or RetryPolicy()
        spec = None
        if lm is None or isinstance(lm, str):
            spec = lm or model_id
            # Retries are resilience.run_plan's: DSPy/LiteLLM make exactly one request per attempt.
            lm = make_lm(spec, api_base=api_base, api_key=api_key, engine=engine, cache=cache,
                         timeout=policy.timeout_s, num_retries=0)
        elif getattr(lm, "num_retries", 0) and callable(getattr(lm, "copy", None)):
            lm = lm.copy(num_retries=0)  # a given LM's own retries would hide under (and multiply) the policy's
        program = load_program(budget.tier, budget.resolved_prompt_variant, compiled_root)
        planner = cls(budget=budget, program=program, lm=lm, catalog=guide, lm_spec=spec, retry=policy,
                      fallback=fallback, compiled_root=compiled_root, **options)
        planner._origin = {"budgets": table, "api_base": api_base, "api_key": api_key, "engine": engine,
                           "cache": cache, "options": options}
        return planner

    def derive(self, *, variant: str | None = None, max_tokens: int | None = None) -> Planner:
        """This planner with another prompt variant (its compiled program) and/or output cap."""
        new = copy.copy(self)
        if variant is not None and variant != self.variant:
            new.budget = self.budget.model_copy(update={"prompt_variant": variant})
            new.variant = new.budget.resolved_prompt_variant
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an uncompiled fallback variant is still a plan
                new.program = load_program(new.budget.tier, new.variant, self.compiled_root)
        if max_tokens is not None:
            new.max_tokens = max_tokens
        return new

    def for_fallback(self, target: FallbackModel) -> Planner:
        """The planner for a fallback model: same catalog, options, policy and chain as this one."""
        origin = self._origin
        api_base = origin.get("api_base") if target.api_base is None else (target.api_base or None)
        options = dict(origin.get("options") or {})
        options.pop("max_tokens", None)  # an output cap override belongs to the primary model
        for key in ("ranker", "rank_source", "history", "history_prior", "use_filter", "caller",
                    "record_path", "record_source"):
            options.setdefault(key, getattr(self, key))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Planner.for_model(
                target.model, lm=target.lm or target.model, catalog=self.catalog, budgets=origin.get("budgets"),
                compiled_root=self.compiled_root, api_base=api_base, api_key=origin.get("api_key"),
                engine=origin.get("engine", "auto"), cache=origin.get("cache", True), retry=self.retry,
                fallback=self.fallback, **options,
            )

    # ------------------------------------------------------------------ selection

    def select(self, intent: str) -> tuple[RoutingGuide, Trim]:
        """The catalog this call will show the model, and what was dropped to fit the budget."""
        prior = self.history.prior(intent, self.caller) if (self.history is not None and self.history_prior) else None
        selected, trim = select_catalog(
            self.catalog, self.budget, intent, ranker=self.ranker, prior=prior, rank_source=self.rank_source
        )
        if self.use_filter:
            from helmdeck_dspy.catalog.filter import apply_filter, should_filter

            if should_filter(self.budget, trim):
                selected, trim = apply_filter(self.lm, self.catalog, selected, trim, self.budget, intent)
        return selected, trim

    def render_options(self):
        from helmdeck_dspy.program.adapter import RenderOptions

        return RenderOptions.for_budget(self.budget, self.variant, self.max_tokens)

    # ------------------------------------------------------------------ planning

    def plan(
        self,
        intent: str,
        context: str | None = None,
        prior_steps: list[ExecutedStep] | None = None,
        *,
        task_id: str | None = None,
    ) -> PlanResult:
        """Plan ``intent``. Never raises for model misbehaviour: failures come back in ``failure_cause``.

        Attempts follow ``self.retry`` and ``self.fallback`` (see :mod:`helmdeck_dspy.planning.resilience.loop`);
        ``task_id`` only labels the trace records when recording (the gold task the call answers).
        """
        if not intent or not intent.strip():
            raise ValueError("intent is required")
        t0 = time.perf_counter()
        result = run_plan(self, policy=self.retry, chain=self.fallback, intent=intent, context=context,
                          prior_steps=prior_steps, task_id=task_id)
        duration_ms = int((time.perf_counter() - t0) * 1000)
        if result.ok:
            record_quietly(
                self.history, intent=intent, complexity=result.complexity, steps=result.steps,
                model=result.answered_by or self.budget.model, caller=self.caller, duration_ms=duration_ms,
            )
        return result

    def _warm_embedding(self) -> None:
        """Load the embedding model and embed the catalog before any deadline starts: local,
        one-off set-up (seconds on a CPU) that must not be mistaken for a slow model."""
        from helmdeck_dspy.catalog.compact import compact_catalog
        from helmdeck_dspy.catalog.ranking.embedding import encoder

        ranked = self.catalog if self.rank_source == "full" else compact_catalog(self.catalog, self.budget)[0]
        encoder().catalog_matrix(ranked, [*ranked.packs, *ranked.pipelines])

    def attempt(
        self,
        intent: str,
        context: str | None = None,
        prior_steps: list[ExecutedStep] | None = None,
        *,
        task_id: str | None = None,
        timeout_s: float | None = None,
    ) -> tuple[PlanResult, Attempt, ErrorInfo | None]:
        """One try: selection and the plan call, within ``timeout_s`` (default: the retry policy's).

        Returns the result, its :class:`Attempt` row, and for a transport failure what the retry
        loop needs to know (else None). Recording happens here, so every attempt is a trace record.
        """
        import dspy

        from helmdeck_dspy.program.adapter import PlanParseError
        from helmdeck_dspy.program.calls import capture_completions

        warm_up(self.lm)
        if self.ranker == "embedding":
            self._warm_embedding()
        t0 = time.perf_counter()
        state: dict[str, Any] = {"calls": [], "trim": None}

        def body() -> tuple[ParseResult | None, BaseException | None]:
            self.program.render = self.render_options()
            with dspy.context(lm=self.lm), capture_completions() as calls:
                state["calls"] = calls
                selected, state["trim"] = self.select(intent)
                try:
                    self.program(user_intent=intent, catalog=selected.render(), context=context, prior_steps=prior_steps)
                except PlanParseError as exc:
                    return exc.result, None
                except Exception as exc:  # noqa: BLE001 - transport failures become a failure cause
                    _reraise_usage_errors(exc)
                    return None, exc
            return None, None

        try:
            parse, error = call_with_deadline(body, timeout_s or self.retry.timeout_s)
        except DeadlineExceeded as exc:
            parse, error = None, exc
        calls = list(state["calls"])  # a snapshot: an abandoned attempt may still append
        trim = state["trim"]
        plan_calls = [c for c in calls if c.kind == "plan"]
        completion = plan_calls[-1] if plan_calls and error is None else None
        if completion is not None:
            parse = completion.parse
        usage = {}
        if completion is not None:
            usage = {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                     "latency_ms": round(completion.latency_ms, 1)}
        compaction = trim if trim is not None and trim.dropped else None
        info = classify_error(error) if error is not None else None
        if parse is None:
            result = PlanResult(
                prompt_variant_used=self.variant, model=self.budget.model, tier=self.budget.tier,
                compaction=compaction,
                failure_cause=info.cause if info else "transport_error",
                error=self._redact(f"{type(error).__name__}: {error}") if error else "no completion",
            )
        else:
            result = build_result(
                parse, intent=intent, variant=self.variant, model=self.budget.model, tier=self.budget.tier,
                catalog_ids=self.catalog.id_set, pipeline_ids=self.catalog.pipeline_ids, trim=trim,
                raw_completion=completion.content if completion is not None and parse.plan is None else None,
                usage=usage,
            )
            result.error = self._redact(result.error)
            result = self._scrub(result)
        result.catalog_in = "system" if self.budget.supports_prefix_cache else "user"
        attempt = Attempt(
            model=self.budget.model, variant=self.variant, cause=result.failure_cause,
            http_status=info.status if info else None, elapsed_ms=int((time.perf_counter() - t0) * 1000),
            max_tokens=self.max_tokens or self.budget.output_tokens,
        )
        if self.record_path is not None:
            self._record(intent, calls, error, task_id, info)
        return result, attempt, info

    def _redact(self, text: str | None) -> str | None:
        return redact(text, secret_values(self.lm))

    def _scrub(self, result: PlanResult) -> PlanResult:
        """Mask the LM's credentials wherever model output repeated them (an echoing proxy)."""
        secrets = secret_values(self.lm)
        text = result.model_dump_json()
        if not any(s and s in text for s in secrets):
            return result
        return PlanResult.model_validate_json(redact(text, secrets, patterns=False) or text)

    def _source(self) -> str:
        """The trace records' ``source``: as given, else from the LM spec (``live``, ``replay``, ``sim:<profile>``)."""
        from helmdeck_dspy.planning.lm import trace_source

        return self.record_source or trace_source(self.lm_spec)

    def _record(
        self, intent: str, calls: list[Any], error: BaseException | None, task_id: str | None,
        info: ErrorInfo | None = None,
    ) -> None:
        """Append one trace record per LM exchange (filter calls marked ``call: filter``); the LM's
        credentials are masked in everything written."""
        secrets = secret_values(self.lm)
        base = dict(
            source=self._source(), model=self.budget.model, tier=self.budget.tier, prompt_variant=self.variant,
            intent=intent, task_id=task_id, recorded_at=utc_now(),
        )
        for c in calls:
            rec = TraceRecord(
                id=uuid.uuid4().hex[:16], **base, max_tokens=c.config.get("max_tokens"),
                content=redact(c.content, secrets, patterns=False),
                reasoning_content=redact(c.reasoning, secrets, patterns=False), finish_reason=c.finish_reason,
                prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens, latency_ms=round(c.latency_ms, 1), call=c.kind,
            )
            append_trace(rec, self.record_path)
        if error is not None:
            rec = TraceRecord(
                id=uuid.uuid4().hex[:16], **base, max_tokens=self.max_tokens or self.budget.output_tokens,
                error=self._redact(f"{type(error).__name__}: {error}"),
                http_status=info.status if info is not None else classify_error(error).status, call="plan",
            )
            append_trace(rec, self.record_path)

    def run_loop(
        self,
        intent: str,
        execute: Callable[[GuardedStep], Any],
        max_steps: int = 8,
        context: str | None = None,
    ) -> LoopResult:
        """Plan, execute, re-plan with the executed steps, until the model expects no more.

        ``execute(step)`` runs one step and returns its output (stringified into the next prompt).
        A full_steps plan is executed whole after one call; single_pick re-plans after each step.
        """
        out = LoopResult(stopped_because="done")
        while True:
            result = self.plan(intent, context=context, prior_steps=out.executed or None)
            out.plans.append(result)
            if not result.ok:
                out.stopped_because = "failed"
                return out
            if not result.steps:
                out.stopped_because = "no_steps" if not out.executed else "done"
                return out
            for step in result.steps:
                if len(out.executed) >= max_steps:
                    out.stopped_because = "max_steps"
                    return out
                output = execute(step)
                out.executed.append(
                    ExecutedStep(order=len(out.executed) + 1, tool=step.tool, args=step.args, output=str(output)[:500])
                )
            if self.variant == "full_steps" or not result.more_steps_likely:
                return out
            if len(out.executed) >= max_steps:
                out.stopped_because = "max_steps"
                return out
