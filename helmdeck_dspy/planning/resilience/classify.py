"""Classifying a failed LM exchange: its failure cause, HTTP status and ``Retry-After`` hint.

DSPy's typed errors decide first (the same for its LiteLLM and native engines), then the
exception's class name, then :func:`helmdeck_dspy.decoding.causes.cause_for_http` on its status
and text, the rule every HTTP outcome goes through.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from helmdeck_dspy.decoding.causes import FailureCause, cause_for_http
from helmdeck_dspy.errors import ContextOverflowError, DeadlineExceeded, HelmdeckError
from helmdeck_dspy.planning.resilience.policy import RetryPolicy

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth sending again; any other 4xx (auth, bad request) fails at once."""

_NO_RESPONSE = frozenset({"ConnectionError", "TransportError", "APIConnectionError"})
"""Exception classes (by name, in any MRO: builtins, httpx, openai) raised when no response arrived."""


@dataclass(frozen=True)
class ErrorInfo:
    """What a failed exchange tells the retry loop.

    Attributes:
        cause: The failure cause.
        status: The HTTP status the server sent, None when no response came back.
        retry_after: The server's ``Retry-After`` hint in seconds, if any.
        settled: For an attempt deadline whose streamed call the server was still working on: set
            once that call is closed. A retry is sent only after it is (never queued behind it).
    """

    cause: FailureCause
    status: int | None = None
    retry_after: float | None = None
    settled: threading.Event | None = None


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or during (at most 12, no repeats)."""
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out and len(out) < 12:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def own_error(exc: BaseException) -> HelmdeckError | None:
    """An error of ours anywhere in ``exc``'s chain (e.g. a replay file running out inside DSPy's
    wrapping): a usage error to raise, not a model failure to classify."""
    return next((e for e in exception_chain(exc) if isinstance(e, HelmdeckError)), None)


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _retry_after_from_headers(headers: Any) -> float | None:
    if not headers:
        return None
    try:
        pairs = [(str(k).lower(), v) for k, v in (headers.items() if hasattr(headers, "items") else headers)]
    except (TypeError, ValueError):
        return None
    for key, value in pairs:
        if key == "retry-after-ms":
            try:
                return max(0.0, float(value) / 1000.0)
            except (TypeError, ValueError):
                pass
    for key, value in pairs:
        if key != "retry-after":
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            try:
                return max(0.0, parsedate_to_datetime(str(value)).timestamp() - time.time())
            except (TypeError, ValueError):
                return None
    return None


def retry_after_of(exc: BaseException) -> float | None:
    """A ``Retry-After`` hint anywhere in the exception chain.

    DSPy's ``retry_after`` field first, else the response headers (DSPy's LiteLLM path drops the
    header, LiteLLM keeps it as ``litellm_response_headers``).
    """
    chain = exception_chain(exc)
    for e in chain:
        hint = getattr(e, "retry_after", None)
        if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint >= 0:
            return float(hint)
    for e in chain:
        for attr in ("litellm_response_headers", "headers"):
            hint = _retry_after_from_headers(getattr(e, attr, None))
            if hint is not None:
                return hint
        hint = _retry_after_from_headers(getattr(getattr(e, "response", None), "headers", None))
        if hint is not None:
            return hint
    return None


def _dspy_errors() -> tuple[Any, Any, Any, Any]:
    """DSPy's typed LM errors: rate limit, timeout, transport, server."""
    from dspy.utils.exceptions import (
        LMRateLimitError,
        LMServerError,
        LMTimeoutError,
        LMTransportError,
    )

    return LMRateLimitError, LMTimeoutError, LMTransportError, LMServerError


def classify_error(exc: BaseException) -> ErrorInfo:
    """The failure cause, HTTP status and ``Retry-After`` of a failed LM exchange.

    Args:
        exc: What the LM call raised (or :class:`DeadlineExceeded` for an abandoned attempt).
    """
    chain = exception_chain(exc)
    statuses = (_as_int(getattr(e, "status", None) or getattr(e, "status_code", None)) for e in chain)
    status = next((s for s in statuses if s), None)
    if any(_NO_RESPONSE & {k.__name__ for k in type(e).__mro__} for e in chain):
        status = None  # no HTTP response came back: LiteLLM reports a reset as a made-up 500
    hint = retry_after_of(exc)
    if any(isinstance(e, ContextOverflowError) for e in chain):  # refused before sending, as the server would
        return ErrorInfo("transport_error", 400, None)
    if any(isinstance(e, (DeadlineExceeded, TimeoutError)) for e in chain):
        busy = next((e.settled for e in chain if isinstance(e, DeadlineExceeded) and not e.freed), None)
        return ErrorInfo("likely_timeout", status if status == 408 else None, hint, settled=busy)
    rate_limit_error, timeout_error, transport_error, server_error = _dspy_errors()
    first = chain[0]
    if isinstance(first, rate_limit_error) or cause_for_http(status, None) == "rate_limited":
        return ErrorInfo("rate_limited", status, hint)
    if isinstance(first, timeout_error):
        return ErrorInfo("likely_timeout", status, hint)
    if isinstance(first, transport_error):
        timed_out = cause_for_http(None, str(first)) == "likely_timeout"
        return ErrorInfo("likely_timeout" if timed_out else "transport_error", status, hint)
    if isinstance(first, server_error):
        return ErrorInfo("transport_error", status, hint)
    name = type(first).__name__.lower()
    if "ratelimit" in name or "rate_limit" in name:
        return ErrorInfo("rate_limited", status, hint)
    if "timeout" in name:
        return ErrorInfo("likely_timeout", status, hint)
    return ErrorInfo(cause_for_http(status, str(first) or name) or "transport_error", status, hint)


def should_retry(info: ErrorInfo, policy: RetryPolicy) -> bool:
    """Whether a transport failure may be sent again under ``policy``."""
    if info.cause not in policy.retry_on:
        return False
    return info.status is None or info.status in RETRYABLE_STATUSES
