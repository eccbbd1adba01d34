"""Helpers shared by the offline engines: building an lm15 Response from recorded fields."""

from __future__ import annotations

from dspy.lm15 import Message, Response, TextPart, ThinkingPart, Usage

from helmdeck_dspy.decoding.causes import normalize_finish_reason

_LM15_FINISH = {"stop": "stop", "length": "length", "safety": "content_filter", "tool_calls": "tool_call"}
RAW_FINISH_KEY = "helmdeck_finish_reason_raw"
LATENCY_KEY = "helmdeck_latency_ms"  # a simulated latency, when an engine simulates one


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
) -> Response:
    """An lm15 Response carrying the raw finish_reason spelling (and any simulated latency) in
    ``provider_data``.

    lm15 only knows stop/length/tool_call/content_filter/error; an absent or unknown
    finish_reason becomes ``error`` there, and the raw value travels alongside.
    """
    parts = []
    if reasoning:
        parts.append(ThinkingPart(reasoning))
    parts.append(TextPart(content or ""))
    finish = _LM15_FINISH.get(normalize_finish_reason(finish_reason), "error")
    data: dict = {RAW_FINISH_KEY: finish_reason}
    if latency_ms is not None:
        data[LATENCY_KEY] = latency_ms
    return Response(
        id=response_id,
        model=model,
        message=Message.assistant(parts),
        finish_reason=finish,  # type: ignore[arg-type]
        usage=Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens),
        provider_data=data,
    )


def raw_finish_reason(response: Response) -> str | None:
    """The provider's own finish_reason spelling when an engine kept it, else lm15's."""
    data = response.provider_data or {}
    if RAW_FINISH_KEY in data:
        return data[RAW_FINISH_KEY]
    return response.finish_reason
