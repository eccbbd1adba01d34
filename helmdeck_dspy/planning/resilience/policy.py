"""Retry policy and fallback chain: what to do after a failed attempt, as data.

- :class:`RetryPolicy` — how many attempts one model gets, the exponential backoff between them
  (a ``Retry-After`` hint is honoured up to ``max_delay_s``) and the wall-clock limit of one
  attempt. Only *transport* failures are retried, and only when their cause is in ``retry_on``
  (rate limits, 5xx, timeouts, resets); a completion that came back unusable (content filter,
  token limit, malformed JSON) is never re-sent unchanged.
- :class:`FallbackChain` — what to do when a model's attempts are spent, decided by the cause:
  ``length_truncated`` re-plans with ``single_pick`` and/or a larger output cap,
  ``safety_filtered`` is surfaced to the caller, timeouts / transport errors / rate limits move
  on to the next model of the chain.

A policy and a chain load from TOML (:func:`load_resilience`); :func:`resolve_resilience` lays
command-line style overrides over such a file::

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

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.decoding.causes import FailureCause
from helmdeck_dspy.domain import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S
from helmdeck_dspy.errors import ArgumentError, DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml

DEFAULT_RETRY_ON: frozenset[FailureCause] = frozenset({"rate_limited", "transport_error", "likely_timeout"})
DEFAULT_NEXT_MODEL_ON: frozenset[FailureCause] = frozenset(
    # "interrupted" and "unknown_finish_reason" were counted as likely_timeout before they had
    # causes of their own; the next model is still worth a try for them.
    {"rate_limited", "transport_error", "likely_timeout", "interrupted", "unknown_finish_reason"}
)


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
    base_delay_s: float = Field(default=1.0, ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    max_delay_s: float = Field(default=30.0, ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    honor_retry_after: bool = True
    retry_on: frozenset[FailureCause] = DEFAULT_RETRY_ON

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first retry).

        Args:
            retry: Which retry this is, counting from 1.
            retry_after: The server's ``Retry-After`` hint in seconds, if it gave one.
        """
        wait = self.base_delay_s * (2 ** max(retry - 1, 0))
        if self.honor_retry_after and retry_after is not None and retry_after > wait:
            wait = retry_after
        return max(0.0, min(wait, self.max_delay_s))


class FallbackModel(BaseModel):
    """One model of a fallback chain.

    Attributes:
        model: The model id (the budget lookup key).
        lm: Its LM spec (default: ``model``).
        api_base: None uses the primary planner's, ``""`` the provider's default endpoint.
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
    """Read a ``[retry]`` / ``[fallback]`` TOML file (see the module docstring).

    Raises:
        DataFileError: The file is not TOML or does not validate (the message names the field).
    """
    data = read_toml(path)
    try:
        return ResilienceConfig.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(str(path), validation_message(exc, subject="config")) from None


def resolve_resilience(
    path: str | Path | None = None,
    *,
    timeout_s: float | None = None,
    retries: int | None = None,
    fallbacks: Sequence[str] = (),
    on_length: str | None = None,
) -> ResilienceConfig:
    """A resilience file's config (or the defaults) with explicit overrides laid over it.

    Args:
        path: A ``[retry]`` / ``[fallback]`` TOML file, or None for the defaults.
        timeout_s: Replaces the retry policy's per-attempt deadline when given.
        retries: Retries per model: ``max_attempts = retries + 1`` when given.
        fallbacks: Model ids appended, in order, after the file's fallback models.
        on_length: Replaces the chain's ``length_truncated`` action when given.

    Raises:
        DataFileError: The file is malformed.
        ArgumentError: An override is out of range (e.g. more than 19 retries).
    """
    config = load_resilience(path) if path else ResilienceConfig()
    retry_over = {"timeout_s": timeout_s, "max_attempts": None if retries is None else retries + 1}
    try:
        retry = RetryPolicy.model_validate(
            {**config.retry.model_dump(), **{k: v for k, v in retry_over.items() if v is not None}}
        )
        chain = FallbackChain.model_validate({
            **config.fallback.model_dump(),
            "models": [*config.fallback.models, *(FallbackModel(model=m) for m in fallbacks)],
            **({"on_length": on_length} if on_length else {}),
        })
    except ValidationError as exc:
        raise ArgumentError(validation_message(exc, subject="resilience")) from None
    return ResilienceConfig(retry=retry, fallback=chain)
