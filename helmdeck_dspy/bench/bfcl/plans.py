"""Plan accuracy on BFCL from recorded trace records: a live run (``bench bfcl --lm``, on the study
engine, :func:`~helmdeck_dspy.bench.bfcl.flow.plan_study`) is scored from the trace files it wrote,
so scoring it later from those files gives the same figures.

Each record goes through :mod:`helmdeck_dspy.evaluation.scoring`'s decode → guard path (a plain
answer through the plain decoder) and then :func:`~helmdeck_dspy.bench.bfcl.score.score_calls`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from helmdeck_dspy.bench.bfcl.baseline import PLAIN_VARIANT, decode_plain
from helmdeck_dspy.bench.bfcl.models import BfclQuestion, BfclSet
from helmdeck_dspy.bench.bfcl.score import (
    AccuracySummary,
    Call,
    CallScore,
    calls_from_steps,
    score_calls,
    summarise,
    summarise_by_category,
)
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.evaluation.scoring import guard_completion, recorded_reading
from helmdeck_dspy.planning.arguments import COERCE_ARGS_KEY
from helmdeck_dspy.planning.chains import recorded_chains
from helmdeck_dspy.evaluation.scoring import answers_in_call_list
from helmdeck_dspy.traces.io import load_traces
from helmdeck_dspy.traces.record import TraceRecord


class PlanAccuracy(BaseModel):
    """Plan accuracy of one run or trace set over BFCL questions."""

    source: str = Field(description="The LM spec that planned, or the trace file scored.")
    model: str = Field(description="The model id whose budget, tier and variant were used ('' for traces).")
    variant: str
    summary: AccuracySummary
    by_category: dict[str, AccuracySummary] = Field(default_factory=dict)
    failures: dict[str, int] = Field(default_factory=dict, description="Failure cause -> plans that failed.")
    unscored: int = Field(default=0, description="Trace records whose task_id is not a loaded question.")
    scores: list[CallScore] = Field(default_factory=list)


def _catalog_for(q: BfclQuestion, pooled: RoutingGuide | None) -> RoutingGuide:
    """The catalog a question is planned against: the pool when given, else its own functions."""
    return pooled if pooled is not None else q.catalog


class DecodedRecord(NamedTuple):
    """A recorded BFCL answer as calls: its prompt variant, how it decoded, and why it failed."""

    variant: str
    calls: list[Call]
    outcome: str  # strict, repaired, native or failed
    cause: str | None = None


def decode_record(rec: TraceRecord, catalog: RoutingGuide, post: dict[str, Any] | None = None) -> DecodedRecord:
    """One recorded answer decoded as it was produced: a plain answer (``prompt_variant`` ``plain``)
    by :func:`decode_plain`; a plan through the one scoring path, the guards checking args against
    the catalog's schemas when the recording planner did (``run.coerce_args``), collapsing
    pipeline chains when it did (``run.pipeline_chains``), mapping near-miss names when it did
    (``run.map_names``), reading a call list when it asked for one (``run.prompt.strategy``) and
    dropping the calls a decline threshold dropped (``run.decision``; ``evaluation.scoring.recorded_reading``).
    ``post`` overrides any of those (a row re-guarding another row's answers: a plain answer so
    re-guarded is what the ``plain`` strategy makes of the same request)."""
    variant = rec.prompt_variant or "full_steps"
    run = {**(rec.run or {}), **(post or {})}
    if variant == PLAIN_VARIANT and not answers_in_call_list(run):
        answer = decode_plain(rec.content, rec.finish_reason)
        failed = answer.outcome == "failed"
        return DecodedRecord(variant, answer.calls, answer.outcome, "no_json" if failed else None)
    variant = "full_steps" if variant == PLAIN_VARIANT else variant
    guarded = guard_completion(rec.content, rec.finish_reason, rec.reasoning_content, variant=variant,
                               catalog_ids=catalog.id_set, pipeline_ids=catalog.pipeline_ids,
                               tool_calls=rec.tool_calls, schemas=catalog.arg_schemas if run.get(COERCE_ARGS_KEY) else None,
                               chains=recorded_chains(run, catalog.pipeline_chains), **recorded_reading(run, rec.intent))
    if guarded.steps is None:
        return DecodedRecord(variant, [], "failed", guarded.parse.cause or "no_json")
    return DecodedRecord(variant, calls_from_steps(guarded.steps), guarded.parse.outcome)


def request_records(path: str | Path, *, on_error: str = "fail") -> dict[str, list[TraceRecord]]:
    """The answered plan records of each task's last request: its one call, or a declined first call
    and the narrowed recheck after it (both stamp the same ``run.rechecked``), so a request's cost is
    the sum over its calls; the answer is the last one's."""
    out: dict[str, list[TraceRecord]] = {}
    for rec in load_traces(path, on_error=on_error):
        if rec.call != "plan" or not rec.task_id or rec.error:
            continue
        stamp = (rec.run or {}).get("rechecked")
        before = out.get(rec.task_id, [])
        same = stamp is not None and before and (before[-1].run or {}).get("rechecked") == stamp
        out[rec.task_id] = [*before[-1:], rec] if same else [rec]
    return out


def score_traces(
    data: BfclSet,
    path: str | Path,
    *,
    pool: bool = False,
    on_error: str = "fail",
) -> PlanAccuracy:
    """Score the plan records of a trace file whose ``task_id`` is a loaded BFCL question id.

    Each plan record is decoded by :func:`decode_record` (a plan goes through the one
    scoring path, :func:`~helmdeck_dspy.evaluation.scoring.guard_completion`: the same decoder and
    guards as a live call, with its own prompt variant; tools outside the question's catalog, or
    the pool with ``pool``, are demoted; a plain answer through the plain decoder).
    """
    by_id = {q.id: q for q in data.questions}
    pooled = data.pool()[0] if pool else None
    scores: list[CallScore] = []
    failures: Counter[str] = Counter()
    variants: Counter[str] = Counter()
    unscored = 0
    for rec in load_traces(path, on_error=on_error):
        if rec.call != "plan":
            continue
        q = by_id.get(rec.task_id or "")
        if q is None:
            unscored += 1
            continue
        decoded = decode_record(rec, _catalog_for(q, pooled))
        variants[decoded.variant] += 1
        if decoded.cause:
            failures[decoded.cause] += 1
        scores.append(score_calls(q, decoded.calls, failed=decoded.cause is not None))
    return PlanAccuracy(
        source=str(path), model="", variant="+".join(sorted(variants)) or "-", summary=summarise(scores),
        by_category=summarise_by_category(scores), failures=dict(failures), unscored=unscored, scores=scores,
    )
