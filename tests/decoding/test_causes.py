"""Failure-cause rules and provider finish_reason spellings."""

from __future__ import annotations

import pytest

from helmdeck_dspy.decoding.causes import (
    FAILURE_CAUSES,
    cause_for_empty,
    cause_for_http,
    cause_for_unparseable,
    normalize_finish_reason,
)


@pytest.mark.parametrize(
    "raw,norm",
    [
        ("stop", "stop"),
        ("end_turn", "stop"),  # Anthropic
        ("STOP", "stop"),  # Gemini
        ("length", "length"),  # OpenAI
        ("max_tokens", "length"),  # Anthropic
        ("MAX_TOKENS", "length"),  # Gemini
        ("FINISH_REASON_MAX_TOKENS", "length"),
        ("content_filter", "safety"),  # OpenAI
        ("SAFETY", "safety"),  # Gemini
        ("RECITATION", "safety"),
        ("PROHIBITED_CONTENT", "safety"),
        ("refusal", "safety"),  # Anthropic
        ("tool_calls", "tool_calls"),
        ("tool_use", "tool_calls"),
        (" Length ", "length"),
        ("weird_aggregator_marker", "unknown"),  # undocumented: its own label, never a guess
        ("FinishReason.SAFETY", "safety"),  # an SDK enum's repr
        ("blockReason:OTHER", "safety"),  # a Gemini prompt-level block, as importers record it
        ("OTHER", "interrupted"),  # Gemini's own "unnamed reason"
        ("pause_turn", "interrupted"),  # Anthropic
        ("MALFORMED_FUNCTION_CALL", "tool_error"),
        ("", "none"),
        (None, "none"),
    ],
)
def test_normalize_finish_reason(raw, norm):
    assert normalize_finish_reason(raw) == norm


def test_design_cause_set():
    # Issue 16 added bare_scalar, unusable_tool_calls, interrupted and unknown_finish_reason.
    assert set(FAILURE_CAUSES) == {
        "safety_filtered", "length_truncated", "reasoning_only", "likely_timeout",
        "constrained_deadlock", "no_json", "schema_mismatch", "transport_error", "rate_limited",
        "bare_scalar", "unusable_tool_calls", "interrupted", "unknown_finish_reason",
    }


@pytest.mark.parametrize(
    "finish,reasoning,cause",
    [
        ("safety", False, "safety_filtered"),
        ("length", False, "length_truncated"),
        ("length", True, "length_truncated"),
        ("stop", True, "reasoning_only"),
        ("none", True, "reasoning_only"),
        ("none", False, "likely_timeout"),
        ("stop", False, "likely_timeout"),
        # issue 16: an undocumented spelling is reported as such, never as a timeout
        ("unknown", False, "unknown_finish_reason"),
        ("unknown", True, "unknown_finish_reason"),
        ("interrupted", False, "interrupted"),
        ("tool_calls", False, "unusable_tool_calls"),
        ("tool_error", True, "unusable_tool_calls"),
    ],
)
def test_cause_for_empty(finish, reasoning, cause):
    assert cause_for_empty(finish, reasoning) == cause


@pytest.mark.parametrize(
    "finish,shaped,cause",
    [
        ("length", True, "length_truncated"),
        ("safety", False, "safety_filtered"),
        ("stop", True, "constrained_deadlock"),
        ("none", True, "constrained_deadlock"),
        ("stop", False, "no_json"),
        ("tool_error", False, "unusable_tool_calls"),
        ("unknown", True, "constrained_deadlock"),
    ],
)
def test_cause_for_unparseable(finish, shaped, cause):
    assert cause_for_unparseable(finish, shaped) == cause


@pytest.mark.parametrize(
    "status,error,cause",
    [
        (200, None, None),
        (None, None, None),
        (429, "Too Many Requests", "rate_limited"),
        (None, "provider said: rate limit exceeded", "rate_limited"),
        (502, "bad gateway", "transport_error"),
        (None, "Request timed out", "likely_timeout"),
        (None, "connection reset", "transport_error"),
    ],
)
def test_cause_for_http(status, error, cause):
    assert cause_for_http(status, error) == cause


def test_a_recorded_deadline_is_a_timeout_not_a_transport_error():
    from helmdeck_dspy.decoding.causes import cause_for_http

    assert cause_for_http(None, "DeadlineExceeded: attempt exceeded its 120 s deadline") == "likely_timeout"
    assert cause_for_http(None, "ConnectionResetError: reset by peer") == "transport_error"
