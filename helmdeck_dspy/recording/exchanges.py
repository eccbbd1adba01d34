"""Writing an attempt's exchanges as trace records (``Planner(..., record_path=...)``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.decoding.tool_calls import ToolCall
from helmdeck_dspy.io.redaction import redact
from helmdeck_dspy.traces.record import TraceRecord, append_trace, utc_now


def _record_id() -> str:
    return uuid.uuid4().hex[:16]


def _masked_calls(calls: Sequence[ToolCall], secrets: Sequence[str]) -> list[ToolCall]:
    """Tool calls as records keep them, credentials masked in every string of them."""

    def mask(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, secrets, patterns=False)
        if isinstance(value, dict):
            return {mask(k): mask(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        return value

    return [ToolCall.model_validate(mask(call.model_dump(mode="json"))) for call in calls]


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
    native_tools: bool = False,
) -> None:
    """Append one trace record per LM exchange of an attempt, and one for its failure.

    The LM's credentials are masked in everything written, the request's text included.

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
        native_tools: Whether the attempt's plan call offers the catalog as native tools (stamped on
            every record of the request, its filter call and failure included).
    """
    base: dict[str, Any] = {
        "source": source, "model": budget.model, "tier": budget.tier, "prompt_variant": variant,
        "intent": redact(intent, secrets, patterns=False), "task_id": task_id, "recorded_at": utc_now(), "run": run,
    }
    for c in calls:
        rec = TraceRecord(
            id=_record_id(), **base, max_tokens=c.config.get("max_tokens"),
            content=redact(c.content, secrets, patterns=False),
            reasoning_content=redact(c.reasoning, secrets, patterns=False), finish_reason=c.finish_reason,
            prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
            latency_ms=round(c.latency_ms, 1), call=c.kind, cache_hit=c.cache_hit or None,
            temperature=c.config.get("temperature"), seed=c.config.get("seed"),
            tool_calls=_masked_calls(c.tool_calls, secrets) or None, native_tools=(c.native_tools or native_tools) or None,
            refusal=redact(c.refusal, secrets, patterns=False), answer_cut=c.answer_cut or None,
        )
        append_trace(rec, path)
    if error is not None:
        rec = TraceRecord(
            id=_record_id(), **base, max_tokens=max_tokens, error=error, http_status=http_status, call="plan",
            temperature=(sampling or {}).get("temperature"), seed=(sampling or {}).get("seed"),
            native_tools=native_tools or None,
        )
        append_trace(rec, path)
