"""Failure causes and the normalised finish_reason.

Every failed plan call is put into exactly one :data:`FailureCause`. The cause is decided from
what the model returned (visible text, reasoning, native tool calls) together with the
*normalised* finish_reason (:func:`normalize_finish_reason`), so the OpenAI, Anthropic and Gemini
spellings of "hit the token limit" or "safety filter" land in the same bucket. The spellings are
data (``finish_reasons.toml``, read by :mod:`helmdeck_dspy.decoding.finish_table`); callers keep
the raw spelling for reports. A spelling the table does not document is ``unknown`` and is
reported as such, never guessed.
"""

from __future__ import annotations

from typing import Literal, get_args

from helmdeck_dspy.decoding.finish_table import finish_table

FailureCause = Literal[
    "safety_filtered",
    "length_truncated",
    "reasoning_only",
    "likely_timeout",
    "constrained_deadlock",
    "no_json",
    "schema_mismatch",
    "bare_scalar",
    "unusable_tool_calls",
    "interrupted",
    "unknown_finish_reason",
    "transport_error",
    "rate_limited",
]
"""Why a completion produced no usable plan.

- ``safety_filtered``: a safety, policy or content filter of the provider withheld or stopped the
  output (every provider's safety-type finish reasons, refusals and prompt-level blocks).
- ``length_truncated``: the token limit was hit (also when it was hit inside a reasoning block).
- ``reasoning_only``: the model produced reasoning but nothing visible after it.
- ``likely_timeout``: empty output with no finish_reason, or a plain ``stop`` (dropped
  connection, empty 200).
- ``constrained_deadlock``: JSON-shaped output (it starts with ``{`` or ``[`` once reasoning and
  fences are removed, or holds a fenced JSON block) that no decoding step could parse.
- ``no_json``: prose or code with no decodable JSON object, braces in it or not.
- ``schema_mismatch``: a valid JSON object or array that is not a plan.
- ``bare_scalar``: the whole answer is one JSON scalar (``4``, ``"ok"``, ``true``, ``null``):
  neither a plan nor JSON-shaped output.
- ``unusable_tool_calls``: the model answered with native tool calls and none of them could be a
  plan step (no catalog tool named, unreadable arguments), the provider rejected its tool call, or
  the finish_reason says tool calls but none were recorded.
- ``interrupted``: the provider says the response ended unfinished for a reason other than
  length, safety or tool calls (paused, cancelled, failed, an error mid-stream, an unnamed stop).
- ``unknown_finish_reason``: nothing usable came back and the finish_reason is a spelling the
  table does not document; the report shows it as "unknown finish reason <spelling>".
- ``transport_error`` / ``rate_limited``: the HTTP call itself failed.
"""

FAILURE_CAUSES: tuple[FailureCause, ...] = get_args(FailureCause)

UNUSABLE_ANSWER_CAUSES: frozenset[FailureCause] = frozenset({
    "length_truncated", "reasoning_only", "constrained_deadlock", "no_json", "schema_mismatch", "bare_scalar",
    "unusable_tool_calls"})
"""The causes under which the model did answer, with something that is no plan (as opposed to a call
that failed, a filter, a timeout): ``serve --openai`` then answers in text, as a plan of no calls."""

FinishReason = Literal["stop", "length", "safety", "tool_calls", "tool_error", "interrupted", "unknown", "none"]
"""A finish_reason normalised across providers: a documented spelling's class (see
:data:`~helmdeck_dspy.decoding.finish_table.FinishKind`), ``unknown`` for a spelling the table does
not document, ``none`` when it is absent or empty."""

FINISH_REASONS: tuple[FinishReason, ...] = get_args(FinishReason)


def normalize_finish_reason(raw: str | None) -> FinishReason:
    """Map a provider's finish_reason spelling onto :data:`FinishReason`.

    Matching ignores case, surrounding whitespace and SDK enum prefixes (Gemini's
    ``FINISH_REASON_``, ``FinishReason.``); ``blockReason:<value>`` is a prompt-level block.
    """
    if raw is None or not raw.strip():
        return "none"
    row = finish_table().lookup(raw)
    return row.kind if row is not None else "unknown"


def unknown_finish_label(raw: str | None) -> str:
    """How reports name an undocumented spelling: ``unknown finish reason 'X'``."""
    return f"unknown finish reason {raw!r}"


def cause_for_finish(finish: FinishReason) -> FailureCause | None:
    """The cause a finish_reason decides on its own, whatever the text: a cut, a filter, a
    rejected tool call. None when the text decides."""
    return _CAUSE_OF_FINISH.get(finish)


_CAUSE_OF_FINISH: dict[FinishReason, FailureCause] = {
    "length": "length_truncated", "safety": "safety_filtered", "tool_error": "unusable_tool_calls"}


def cause_for_empty(finish: FinishReason, saw_reasoning: bool) -> FailureCause:
    """The cause when nothing visible (and no tool call) came back.

    Args:
        finish: The normalised finish_reason.
        saw_reasoning: Whether the completion carried reasoning (tags or a separate field).
    """
    decided = cause_for_finish(finish)
    if decided is not None:
        return decided
    if finish == "tool_calls":
        return "unusable_tool_calls"
    if finish == "unknown":
        return "unknown_finish_reason"
    if finish == "interrupted":
        return "interrupted"
    if saw_reasoning:
        return "reasoning_only"
    return "likely_timeout"


def cause_for_unparseable(finish: FinishReason, json_shaped: bool) -> FailureCause:
    """The cause when visible text came back but no JSON value could be decoded from it."""
    decided = cause_for_finish(finish)
    if decided is not None:
        return decided
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
