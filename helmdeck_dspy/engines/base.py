"""Helpers shared by the offline engines: building an lm15 Response from recorded fields."""

from __future__ import annotations

from collections.abc import Sequence

from dspy.lm15 import (
    Message,
    RefusalPart,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)

from helmdeck_dspy.decoding.causes import normalize_finish_reason
from helmdeck_dspy.decoding.tool_calls import ToolCall
from helmdeck_dspy.program.calls import LATENCY_KEY, RAW_FINISH_KEY, TOOL_CALLS_KEY

_LM15_FINISH = {"stop": "stop", "length": "length", "safety": "content_filter", "tool_calls": "tool_call"}


def make_response(
    model: str,
    content: str | None,
    *,
    reasoning: str | None = None,
    finish_reason: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    response_id: str | None = None,
    latency_ms: float | None = None,
    tool_calls: Sequence[ToolCall] | None = None,
    refusal: str | None = None,
    extra: dict | None = None,
) -> Response:
    """An lm15 Response carrying the raw finish_reason spelling (and any simulated latency) in
    ``provider_data``.

    lm15 only knows stop/length/tool_call/content_filter/error; an absent or unknown
    finish_reason becomes ``error`` there, and the raw value travels alongside. Recorded tool
    calls become tool-call parts (those whose arguments are an object) and travel whole in
    ``provider_data`` too, so a call with unreadable arguments replays as it was recorded.
    """
    parts: list = []
    if reasoning:
        parts.append(ThinkingPart(reasoning))
    parts.append(TextPart(content or ""))
    if refusal:
        parts.append(RefusalPart(refusal))
    for i, call in enumerate(tool_calls or ()):
        if isinstance(call.arguments, dict):
            parts.append(ToolCallPart(id=call.id or f"call_{i}", name=call.name, input=call.arguments))
    finish = _LM15_FINISH.get(normalize_finish_reason(finish_reason), "error")
    data: dict = {RAW_FINISH_KEY: finish_reason}
    if tool_calls:
        data[TOOL_CALLS_KEY] = [c.model_dump(mode="json") for c in tool_calls]
    if latency_ms is not None:
        data[LATENCY_KEY] = latency_ms
    data.update(extra or {})
    return Response(
        id=response_id,
        model=model,
        message=Message.assistant(parts),
        finish_reason=finish,  # type: ignore[arg-type]
        usage=Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens),
        provider_data=data,
    )
