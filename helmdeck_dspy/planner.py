"""The embeddable planner: ``Planner.for_model(model_id).plan(intent)``.

Per call: catalog selection for the model's budget (compaction, ranking, optional history prior,
optional LLM filter) → the compiled module for (tier, variant) → one LM call → parse → guards →
:class:`PlanResult`, plus a plan_history audit row and, when recording, a trace record.
"""

from __future__ import annotations

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
from helmdeck_dspy.causes import cause_for_http
from helmdeck_dspy.guards import GuardedStep
from helmdeck_dspy.history import HistoryStore, record_quietly
from helmdeck_dspy.parsing import ParseResult
from helmdeck_dspy.resources import compiled_dir
from helmdeck_dspy.result import PlanResult, build_result
from helmdeck_dspy.signatures.types import ExecutedStep
from helmdeck_dspy.traces.record import TraceRecord, append_trace, utc_now


def program_path(tier: str, variant: str, root: Path | None = None) -> Path:
    """Where the compiled program for (tier, variant) lives."""
    return (root or compiled_dir()) / f"tier_{tier}" / f"{variant}.json"


def load_program(tier: str, variant: str, root: Path | None = None) -> Any:
    """The compiled module for (tier, variant), or the uncompiled one (with a warning) if none exists."""
    from helmdeck_dspy.modules import MODULES

    module = MODULES[variant]()
    path = program_path(tier, variant, root)
    if path.is_file():
        module.load(str(path))
    else:
        warnings.warn(
            f"no compiled program for tier {tier} {variant} ({path}); using the uncompiled module",
            stacklevel=2,
        )
    return module


def _error_cause(exc: BaseException) -> str:
    name = type(exc).__name__.lower()
    if "ratelimit" in name or "rate_limit" in name:
        return "rate_limited"
    if "timeout" in name:
        return "likely_timeout"
    return cause_for_http(getattr(exc, "status_code", None), str(exc) or name) or "transport_error"


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
        **options: Any,
    ) -> Planner:
        """Everything a model needs: budget lookup, variant, compiled program, catalog, LM.

        Args:
            model_id: The model id to plan for (the budget lookup key).
            lm: A ``dspy.LM``, an LM spec string (``replay:PATH``, ``sim:PROFILE``, a LiteLLM
                model string), or None to call ``model_id`` live.
            catalog: A catalog, a path to one, or None for the bundled catalog.
            budgets: A budget table or its path (default: the bundled table).
            compiled_root: Where compiled programs live (default: the bundled ``compiled/``).
            api_base: API base URL for a live OpenAI-compatible endpoint.
            variant: Force ``full_steps`` or ``single_pick`` instead of the budget's variant.
            **options: Passed to :class:`Planner` (ranker, history, record_path, max_tokens...).
        """
        from helmdeck_dspy.lm import make_lm

        table = budgets if isinstance(budgets, BudgetTable) else load_budget_table(budgets)
        budget = budget_for(model_id, table)
        if variant is not None:
            if variant not in ("full_steps", "single_pick"):
                raise ValueError(f"unknown prompt variant {variant!r}")
            budget = budget.model_copy(update={"prompt_variant": variant})
        guide = catalog if isinstance(catalog, RoutingGuide) else load_catalog(catalog)
        spec = None
        if lm is None or isinstance(lm, str):
            spec = lm or model_id
            lm = make_lm(spec, api_base=api_base)
        program = load_program(budget.tier, budget.resolved_prompt_variant, compiled_root)
        return cls(budget=budget, program=program, lm=lm, catalog=guide, lm_spec=spec, **options)

    # ------------------------------------------------------------------ selection

    def select(self, intent: str) -> tuple[RoutingGuide, Trim]:
        """The catalog this call will show the model, and what was dropped to fit the budget."""
        prior = self.history.prior(intent, self.caller) if (self.history is not None and self.history_prior) else None
        selected, trim = select_catalog(
            self.catalog, self.budget, intent, ranker=self.ranker, prior=prior, rank_source=self.rank_source
        )
        if self.use_filter:
            from helmdeck_dspy.filter import apply_filter, should_filter

            if should_filter(self.budget, trim):
                selected, trim = apply_filter(self.lm, self.catalog, selected, trim, self.budget, intent)
        return selected, trim

    def render_options(self):
        from helmdeck_dspy.adapter import RenderOptions

        b = self.budget
        return RenderOptions(
            variant=self.variant,
            catalog_in_system=b.supports_prefix_cache,
            max_tokens=self.max_tokens or b.output_tokens,
            json_object=b.wants_strict_json and b.tier != "C",
        )

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

        ``task_id`` only labels the trace record when recording (the gold task the call answers).
        """
        import dspy

        from helmdeck_dspy.adapter import PlanParseError
        from helmdeck_dspy.calls import capture_completions

        if not intent or not intent.strip():
            raise ValueError("intent is required")
        t0 = time.perf_counter()
        self.program.render = self.render_options()
        parse: ParseResult | None = None
        error: BaseException | None = None
        with dspy.context(lm=self.lm), capture_completions() as calls:
            selected, trim = self.select(intent)
            try:
                self.program(user_intent=intent, catalog=selected.render(), context=context, prior_steps=prior_steps)
            except PlanParseError as exc:
                parse = exc.result
            except Exception as exc:  # noqa: BLE001 - transport failures become a failure cause
                _reraise_usage_errors(exc)
                error = exc
        plan_calls = [c for c in calls if c.kind == "plan"]
        completion = plan_calls[-1] if plan_calls else None
        if completion is not None:
            parse = completion.parse
        duration_ms = int((time.perf_counter() - t0) * 1000)
        usage = {}
        if completion is not None:
            usage = {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                     "latency_ms": round(completion.latency_ms, 1)}
        if parse is None:
            result = PlanResult(
                prompt_variant_used=self.variant, model=self.budget.model, tier=self.budget.tier,
                compaction=trim if trim.dropped else None,
                failure_cause=_error_cause(error) if error else "transport_error",  # type: ignore[arg-type]
                error=f"{type(error).__name__}: {error}" if error else "no completion",
            )
        else:
            result = build_result(
                parse, intent=intent, variant=self.variant, model=self.budget.model, tier=self.budget.tier,
                catalog_ids=self.catalog.id_set, pipeline_ids=self.catalog.pipeline_ids, trim=trim,
                raw_completion=completion.content if completion is not None and parse.plan is None else None,
                usage=usage,
            )
        result.catalog_in = "system" if self.budget.supports_prefix_cache else "user"
        if result.ok:
            record_quietly(
                self.history, intent=intent, complexity=result.complexity, steps=result.steps,
                model=self.budget.model, caller=self.caller, duration_ms=duration_ms,
            )
        if self.record_path is not None:
            self._record(intent, calls, error, task_id)
        return result

    def _source(self) -> str:
        """The trace records' ``source``: as given, else from the LM spec (``live``, ``replay``, ``sim:<profile>``)."""
        from helmdeck_dspy.lm import lm_kind

        if self.record_source:
            return self.record_source
        kind = lm_kind(self.lm_spec) if self.lm_spec else "live"
        return self.lm_spec if kind == "sim" else kind  # type: ignore[return-value]

    def _record(self, intent: str, calls: list[Any], error: BaseException | None, task_id: str | None) -> None:
        """Append one trace record per LM exchange (filter calls marked ``call: filter``)."""
        base = dict(
            source=self._source(), model=self.budget.model, tier=self.budget.tier, prompt_variant=self.variant,
            intent=intent, task_id=task_id, recorded_at=utc_now(),
        )
        for c in calls:
            rec = TraceRecord(
                id=uuid.uuid4().hex[:16], **base, max_tokens=c.config.get("max_tokens"), content=c.content,
                reasoning_content=c.reasoning, finish_reason=c.finish_reason, prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens, latency_ms=round(c.latency_ms, 1), call=c.kind,
            )
            append_trace(rec, self.record_path)
        if error is not None:
            rec = TraceRecord(
                id=uuid.uuid4().hex[:16], **base, max_tokens=self.max_tokens or self.budget.output_tokens,
                error=f"{type(error).__name__}: {error}", http_status=getattr(error, "status_code", None), call="plan",
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
