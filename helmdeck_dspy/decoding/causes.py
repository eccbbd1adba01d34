"""Failure causes and provider finish_reason spellings.

Every failed plan call is put into exactly one :data:`FailureCause`. The cause is decided from
what the model returned (visible text, reasoning) together with the *normalised* finish_reason,
so the OpenAI, Anthropic and Gemini spellings of "hit the token limit" or "safety filter" land
in the same bucket. The raw spelling is kept by callers for reports.
"""

from __future__ import annotations

from typing import Literal

FailureCause = Literal[
    "safety_filtered",
    "length_truncated",
    "reasoning_only",
    "likely_timeout",
    "constrained_deadlock",
    "no_json",
    "schema_mismatch",
    "transport_error",
    "rate_limited",
]
"""Why a completion produced no usable plan.

- ``safety_filtered``: the provider's safety filter redacted or stopped the output.
- ``length_truncated``: the token limit was hit (also when it was hit inside a reasoning block).
- ``reasoning_only``: the model produced reasoning but nothing visible after it.
- ``likely_timeout``: empty output with no usable finish_reason (dropped connection, empty 200).
- ``constrained_deadlock``: JSON-shaped output that no decoding step could parse.
- ``no_json``: prose with no JSON object in it.
- ``schema_mismatch``: valid JSON that is not a plan.
- ``transport_error`` / ``rate_limited``: the HTTP call itself failed.
"""

FAILURE_CAUSES: tuple[FailureCause, ...] = FailureCause.__args__  # type: ignore[attr-defined]

FinishReason = Literal["stop", "length", "safety", "tool_calls", "other", "none"]
"""A finish_reason normalised across providers; ``none`` means absent or empty."""

_FINISH_SPELLINGS: dict[str, FinishReason] = {
    # natural end of the answer
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "finish_reason_stop": "stop",
    "complete": "stop",
    "completed": "stop",
    # token limit
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",
    "model_context_window_exceeded": "length",
    # safety / policy
    "content_filter": "safety",
    "safety": "safety",
    "recitation": "safety",
    "prohibited_content": "safety",
    "blocklist": "safety",
    "spii": "safety",
    "image_safety": "safety",
    "refusal": "safety",
    # tool calls instead of text
    "tool_calls": "tool_calls",
    "tool_call": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "malformed_function_call": "other",
}


def normalize_finish_reason(raw: str | None) -> FinishReason:
    """Map a provider's finish_reason spelling onto :data:`FinishReason`.

    Matching ignores case and surrounding whitespace, and Gemini's ``FINISH_REASON_`` prefix.
    Unrecognised non-empty values become ``other``.
    """
    if raw is None:
        return "none"
    key = raw.strip().lower()
    if not key:
        return "none"
    if key.startswith("finish_reason_") and key != "finish_reason_stop":
        key = key[len("finish_reason_") :]
    return _FINISH_SPELLINGS.get(key, "other")


def cause_for_empty(finish: FinishReason, saw_reasoning: bool) -> FailureCause:
    """The cause when nothing visible came back.

    Args:
        finish: The normalised finish_reason.
        saw_reasoning: Whether the completion carried reasoning (tags or a separate field).
    """
    if finish == "safety":
        return "safety_filtered"
    if finish == "length":
        return "length_truncated"
    if saw_reasoning:
        return "reasoning_only"
    return "likely_timeout"


def cause_for_unparseable(finish: FinishReason, json_shaped: bool) -> FailureCause:
    """The cause when visible text came back but no JSON value could be decoded from it."""
    if finish == "length":
        return "length_truncated"
    if finish == "safety":
        return "safety_filtered"
    return "constrained_deadlock" if json_shaped else "no_json"


def cause_for_http(status: int | None, error: str | None) -> FailureCause | None:
    """The cause of a failed HTTP exchange, or None when the call itself succeeded."""
    text = (error or "").lower()
    if status == 429 or "rate limit" in text or "ratelimit" in text or "too many requests" in text:
        return "rate_limited"
    if status is not None and status >= 400:
        return "transport_error"
    if error:
        # "deadline": the planner's own per-attempt limit (DeadlineExceeded), as recorded in traces
        timed_out = "timeout" in text or "timed out" in text or "deadline" in text
        return "likely_timeout" if timed_out else "transport_error"
    return None
