"""Retries, deadlines and model fallback around a plan call: the policy is data, every outcome typed.

- :class:`RetryPolicy` — how many attempts one model gets, the exponential backoff between them
  (a ``Retry-After`` hint is honoured up to ``max_delay_s``) and the wall-clock limit of one
  attempt. Only *transport* failures are retried, and only when their cause is in ``retry_on``
  (rate limits, 5xx, timeouts, resets); a completion that came back unusable (content filter,
  token limit, malformed JSON) is never re-sent unchanged.
- :class:`FallbackChain` — what to do when a model's attempts are spent, decided by the cause:
  ``length_truncated`` re-plans with ``single_pick`` and/or a larger output cap,
  ``safety_filtered`` is surfaced to the caller, timeouts / transport errors / rate limits move
  on to the next model of the chain.
- :func:`run_plan` — the loop :meth:`Planner.plan` runs; every attempt is kept as an
  :class:`~helmdeck_dspy.planning.result.Attempt` on the returned :class:`PlanResult`.

LiteLLM's and DSPy's own retries are switched off for LMs the planner builds (``num_retries=0``),
so this module is the only place a request is repeated. A policy and a chain load from TOML
(:func:`load_resilience`)::

    [retry]
    max_attempts = 3
    base_delay_s = 1.0
    max_delay_s = 30.0
    timeout_s = 60.0

    [fallback]
    on_length = "single_pick_then_cap"
    [[fallback.models]]
    model = "openrouter/deepseek/deepseek-v3.2"
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.decoding.causes import FailureCause, cause_for_http
from helmdeck_dspy.errors import DataFileError, DeadlineExceeded

if TYPE_CHECKING:  # pragma: no cover
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.planning.result import Attempt, PlanResult

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth sending again; any other 4xx (auth, bad request) fails at once."""

DEFAULT_RETRY_ON: frozenset[FailureCause] = frozenset({"rate_limited", "transport_error", "likely_timeout"})
DEFAULT_NEXT_MODEL_ON: frozenset[FailureCause] = frozenset({"rate_limited", "transport_error", "likely_timeout"})


class RetryPolicy(BaseModel):
    """Attempts, backoff and the per-attempt deadline for one model.

    Attributes:
        max_attempts: Attempts per model, the first included (1 = no retry).
        base_delay_s: Delay before the first retry; doubled for each later one.
        max_delay_s: Cap on any one delay, ``Retry-After`` included.
        timeout_s: Wall-clock limit of one attempt (its filter and plan calls together); also the
            HTTP client's timeout.
        honor_retry_after: Wait at least the server's ``Retry-After`` (capped) when it gives one.
        retry_on: Failure causes that may be retried (transport failures only).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=3, ge=1, le=20)
    base_delay_s: float = Field(default=1.0, ge=0)
    max_delay_s: float = Field(default=30.0, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)
    honor_retry_after: bool = True
    retry_on: frozenset[FailureCause] = DEFAULT_RETRY_ON

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first retry)."""
        wait = self.base_delay_s * (2 ** max(retry - 1, 0))
        if self.honor_retry_after and retry_after is not None and retry_after > wait:
            wait = retry_after
        return max(0.0, min(wait, self.max_delay_s))


class FallbackModel(BaseModel):
    """One model of a fallback chain.

    ``lm`` is its LM spec (default: ``model``). ``api_base``: None uses the primary planner's,
    ``""`` the provider's default endpoint.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    lm: str | None = None
    api_base: str | None = None


LengthAction = Literal["single_pick", "raise_cap", "single_pick_then_cap", "none"]


class FallbackChain(BaseModel):
    """What happens after a model's attempts fail, by cause.

    Attributes:
        models: Tried in order after the primary model, each with the same retry policy.
        next_model_on: Causes that move on to the next model.
        on_length: ``length_truncated``: re-plan as single_pick (when planning full_steps), with
            the output cap times ``cap_factor`` (at most ``max_output_tokens``), both in that
            order, or neither (the default: a chain does nothing it is not told to).
        surface: Causes returned to the caller as they are, with no fallback of any kind.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[FallbackModel] = Field(default_factory=list)
    next_model_on: frozenset[FailureCause] = DEFAULT_NEXT_MODEL_ON
    on_length: LengthAction = "none"
    cap_factor: float = Field(default=2.0, gt=1.0)
    max_output_tokens: int = Field(default=16000, ge=1)
    surface: frozenset[FailureCause] = frozenset({"safety_filtered"})

    @classmethod
    def of(cls, *models: str, **kw: Any) -> FallbackChain:
        """A chain of model ids (each its own LM spec)."""
        return cls(models=[FallbackModel(model=m) for m in models], **kw)


class ResilienceConfig(BaseModel):
    """A retry policy and a fallback chain, as one TOML file holds them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    fallback: FallbackChain = Field(default_factory=FallbackChain)


def load_resilience(path: str | Path) -> ResilienceConfig:
    """Read a ``[retry]`` / ``[fallback]`` TOML file (see the module docstring)."""
    from helmdeck_dspy.io.datafiles import read_toml

    data = read_toml(path)
    try:
        return ResilienceConfig.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"]) or "config"
        raise DataFileError(str(path), f"{where}: {e['msg']}") from None


# ------------------------------------------------------------------ classifying failures



@dataclass(frozen=True)
class ErrorInfo:
    """What a failed exchange tells the retry loop."""

    cause: FailureCause
    status: int | None = None
    retry_after: float | None = None


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out and len(out) < 12:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


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
            from email.utils import parsedate_to_datetime

            try:
                return max(0.0, parsedate_to_datetime(str(value)).timestamp() - time.time())
            except (TypeError, ValueError):
                return None
    return None


def retry_after_of(exc: BaseException) -> float | None:
    """A ``Retry-After`` hint anywhere in the exception chain (DSPy's field, else the response headers;
    DSPy's LiteLLM path drops the header, LiteLLM keeps it as ``litellm_response_headers``)."""
    for e in _chain(exc):
        hint = getattr(e, "retry_after", None)
        if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint >= 0:
            return float(hint)
    for e in _chain(exc):
        for attr in ("litellm_response_headers", "headers"):
            hint = _retry_after_from_headers(getattr(e, attr, None))
            if hint is not None:
                return hint
        response = getattr(e, "response", None)
        hint = _retry_after_from_headers(getattr(response, "headers", None))
        if hint is not None:
            return hint
    return None


_NO_RESPONSE = frozenset({"ConnectionError", "TransportError", "APIConnectionError"})
"""Exception classes (by name, in any MRO: builtins, httpx, openai) raised when no response arrived."""


def classify_error(exc: BaseException) -> ErrorInfo:
    """The failure cause, HTTP status and ``Retry-After`` of a failed LM exchange.

    DSPy's typed errors decide first (the same for its LiteLLM and native engines), then the
    exception's name and status as a fallback for other LM implementations.
    """
    chain = _chain(exc)
    status = next((s for e in chain if (s := _as_int(getattr(e, "status", None) or getattr(e, "status_code", None)))), None)
    if any(_NO_RESPONSE & {k.__name__ for k in type(e).__mro__} for e in chain):
        status = None  # no HTTP response came back: LiteLLM reports a reset as a made-up 500
    hint = retry_after_of(exc)
    if any(isinstance(e, (DeadlineExceeded, TimeoutError)) for e in chain):
        return ErrorInfo("likely_timeout", status if status == 408 else None, hint)
    try:
        from dspy.utils.exceptions import (
            LMRateLimitError,
            LMServerError,
            LMTimeoutError,
            LMTransportError,
        )
    except ImportError:  # pragma: no cover - dspy is a dependency
        LMRateLimitError = LMServerError = LMTimeoutError = LMTransportError = ()  # type: ignore[assignment,misc]
    first = chain[0]
    if isinstance(first, LMRateLimitError) or status == 429:
        return ErrorInfo("rate_limited", status, hint)
    if isinstance(first, LMTimeoutError):
        return ErrorInfo("likely_timeout", status, hint)
    text = str(first).lower()
    if isinstance(first, LMTransportError):
        timed_out = "timed out" in text or "timeout" in text
        return ErrorInfo("likely_timeout" if timed_out else "transport_error", status, hint)
    if isinstance(first, LMServerError):
        return ErrorInfo("transport_error", status, hint)
    name = type(first).__name__.lower()
    if "ratelimit" in name or "rate_limit" in name:
        return ErrorInfo("rate_limited", status, hint)
    if "timeout" in name:
        return ErrorInfo("likely_timeout", status, hint)
    cause = cause_for_http(status, str(first) or name) or "transport_error"
    return ErrorInfo(cause, status, hint)


def should_retry(info: ErrorInfo, policy: RetryPolicy) -> bool:
    """Whether a transport failure may be sent again under ``policy``."""
    if info.cause not in policy.retry_on:
        return False
    return info.status is None or info.status in RETRYABLE_STATUSES


# ------------------------------------------------------------------ the deadline


def warm_up(lm: Any) -> None:
    """Import the client library ``lm`` will call through, outside any deadline.

    LiteLLM takes seconds to import and DSPy opens its disk cache lazily; a first attempt must
    not spend its deadline on either. LMs with a custom engine (replay, sim) skip the import.
    """
    if getattr(lm, "_helmdeck_warm", False):
        return
    if getattr(lm, "cache", False):
        import dspy

        getattr(dspy, "cache", None)  # DSPy opens its disk cache on first use (a few hundred ms)
    try:
        from dspy.clients.backend_selection import select_backend

        native = select_backend(lm).native
    except Exception:  # noqa: BLE001 - custom engines, or not a dspy.LM: nothing to import
        native = True
    if not native:
        import importlib

        from dspy.clients._litellm import get_litellm

        get_litellm(feature="dspy.LM")
        for module in ("openai.resources", "httpcore", "h11"):  # LiteLLM's first call imports these lazily
            try:
                importlib.import_module(module)
            except ImportError:  # pragma: no cover - optional
                pass
    try:
        lm._helmdeck_warm = True
    except AttributeError:  # pragma: no cover - an LM that refuses attributes
        pass


def call_with_deadline(fn: Callable[[], Any], timeout_s: float) -> Any:
    """Run ``fn`` in a daemon thread (with this context's variables) and wait at most ``timeout_s``.

    A call still running then is abandoned — its thread ends when its socket times out or
    closes — and :class:`DeadlineExceeded` is raised. The HTTP client's own timeout is per read,
    so a server that trickles bytes would otherwise hold the call forever.
    """
    ctx = contextvars.copy_context()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="helmdeck-plan-attempt", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise DeadlineExceeded(timeout_s)
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ------------------------------------------------------------------ the loop


def _retry_model(
    planner: Planner, policy: RetryPolicy, attempts: list[Attempt], sleep: Callable[[float], None], **call: Any
) -> PlanResult:
    """Up to ``policy.max_attempts`` attempts of one planner; transport failures retried per policy."""
    result: PlanResult | None = None
    for number in range(1, policy.max_attempts + 1):
        result, attempt, info = planner.attempt(timeout_s=policy.timeout_s, **call)
        attempts.append(attempt)
        if result.ok or info is None or not should_retry(info, policy) or number == policy.max_attempts:
            return result
        wait = policy.delay(number, info.retry_after)
        attempt.retry_in_ms = int(wait * 1000)
        sleep(wait)
    assert result is not None
    return result


def _length_step(planner: Planner, chain: FallbackChain, raised: bool) -> tuple[Planner, bool] | None:
    """The next planner to try after ``length_truncated``, and whether its cap was raised."""
    if chain.on_length in ("single_pick", "single_pick_then_cap") and planner.variant == "full_steps":
        return planner.derive(variant="single_pick"), raised
    if chain.on_length in ("raise_cap", "single_pick_then_cap") and not raised:
        cap = planner.render_options().max_tokens or planner.budget.output_tokens
        bigger = min(int(cap * chain.cap_factor), chain.max_output_tokens)
        if bigger > cap:
            return planner.derive(max_tokens=bigger), True
    return None


def run_plan(
    planner: Planner,
    *,
    policy: RetryPolicy | None = None,
    chain: FallbackChain | None = None,
    sleep: Callable[[float], None] = time.sleep,
    **call: Any,
) -> PlanResult:
    """Plan with retries and the fallback chain; the result records every attempt and who answered.

    ``call`` holds :meth:`Planner.attempt`'s arguments (intent, context, prior_steps, task_id).
    """
    policy = policy or RetryPolicy()
    chain = chain or FallbackChain()
    attempts: list[Attempt] = []
    current, raised, next_index = planner, False, 0
    hops = 0
    while True:
        result = _retry_model(current, policy, attempts, sleep, **call)
        if result.ok:
            result.answered_by = current.budget.model
            break
        cause = result.failure_cause
        hops += 1
        if cause in chain.surface or hops > 2 * (len(chain.models) + 1) + 2:
            break
        nxt: Planner | None = None
        if cause == "length_truncated":
            step = _length_step(current, chain, raised)
            if step is not None:
                nxt, raised = step
        elif cause in chain.next_model_on and next_index < len(chain.models):
            nxt = planner.for_fallback(chain.models[next_index])
            next_index += 1
            raised = False
        if nxt is None:
            break
        current = nxt
    result.attempts = attempts
    return result
