"""Writing an attempt's exchanges as trace records (``Planner(..., record_path=...)``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.planning.redaction import redact
from helmdeck_dspy.traces.record import TraceRecord, append_trace, utc_now


def _record_id() -> str:
    return uuid.uuid4().hex[:16]


def record_exchanges(
    path: Path,
    calls: Iterable[Any],
    *,
    source: str,
    budget: Budget,
    variant: str,
    intent: str,
    task_id: str | None,
    secrets: Sequence[str],
    error: str | None = None,
    http_status: int | None = None,
    max_tokens: int | None = None,
    run: dict[str, Any] | None = None,
    sampling: dict[str, Any] | None = None,
) -> None:
    """Append one trace record per LM exchange of an attempt, and one for its failure.

    The LM's credentials are masked in everything written.

    Args:
        path: The trace file records are appended to.
        calls: The attempt's completions (:class:`helmdeck_dspy.program.calls.Completion`), in
            order; filter calls are marked ``call: filter``.
        source: The records' ``source`` (``live``, ``replay``, ``sim:<profile>``...).
        budget: The budget the attempt ran under (model and tier).
        variant: The prompt variant used.
        intent: The user request.
        task_id: The gold task the call answers, if any.
        secrets: Credential values to mask.
        error: The (already masked) error of a call that returned no completion, if any.
        http_status: That error's HTTP status, if the server sent one.
        max_tokens: The output cap the failed call was sent with.
        run: Reproducibility settings stamped on every record (see ``TraceRecord.run``).
        sampling: The LM's own ``temperature`` and ``seed``, for the failure record (a completion
            carries what was sent with it).
    """
    base: dict[str, Any] = {
        "source": source, "model": budget.model, "tier": budget.tier, "prompt_variant": variant,
        "intent": intent, "task_id": task_id, "recorded_at": utc_now(), "run": run,
    }
    for c in calls:
        rec = TraceRecord(
            id=_record_id(), **base, max_tokens=c.config.get("max_tokens"),
            content=redact(c.content, secrets, patterns=False),
            reasoning_content=redact(c.reasoning, secrets, patterns=False), finish_reason=c.finish_reason,
            prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
            latency_ms=round(c.latency_ms, 1), call=c.kind, cache_hit=c.cache_hit or None,
            temperature=c.config.get("temperature"), seed=c.config.get("seed"),
        )
        append_trace(rec, path)
    if error is not None:
        rec = TraceRecord(
            id=_record_id(), **base, max_tokens=max_tokens, error=error, http_status=http_status, call="plan",
            temperature=(sampling or {}).get("temperature"), seed=(sampling or {}).get("seed"),
        )
        append_trace(rec, path)
