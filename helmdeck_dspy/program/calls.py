"""A per-context log of LM exchanges (plan and filter calls), so the planner can report and
record exactly what was sent and returned without DSPy's global history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.engines.base import LATENCY_KEY, raw_finish_reason
from helmdeck_dspy.program.sections import CallKind


@dataclass
class Completion:
    """One LM exchange."""

    kind: CallKind
    system: str
    messages: list[dict[str, str]]
    content: str
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    parse: ParseResult | None = None
    config: dict[str, Any] = field(default_factory=dict)
    cache_hit: bool = False


_LOGS: ContextVar[tuple[list[Completion], ...]] = ContextVar("helmdeck_completion_logs", default=())


@contextmanager
def capture_completions() -> Iterator[list[Completion]]:
    """Collect every :class:`Completion` made inside the block (this context only).

    Captures nest: an outer capture also sees what an inner one collects.
    """
    log: list[Completion] = []
    token = _LOGS.set((*_LOGS.get(), log))
    try:
        yield log
    finally:
        _LOGS.reset(token)


def log_completion(completion: Completion) -> None:
    """Add ``completion`` to every active capture."""
    for log in _LOGS.get():
        log.append(completion)


def completion_from_response(
    kind: CallKind, response: Any, system: str, messages: list[dict[str, str]], latency_ms: float,
    config: dict[str, Any] | None = None,
) -> Completion:
    """Build a :class:`Completion` from an lm15 Response (content, reasoning, raw finish, usage)."""
    from dspy.lm15 import TextPart, ThinkingPart

    parts = response.message.parts if response.message is not None else []
    usage = response.usage
    simulated = (response.provider_data or {}).get(LATENCY_KEY)  # a simulating engine's latency
    if simulated is not None:
        latency_ms = float(simulated)
    return Completion(
        kind=kind,
        system=system,
        messages=messages,
        content="".join(p.text for p in parts if isinstance(p, TextPart)),
        reasoning="".join(p.text for p in parts if isinstance(p, ThinkingPart)) or None,
        finish_reason=raw_finish_reason(response),
        prompt_tokens=getattr(usage, "input_tokens", None) if usage else None,
        completion_tokens=getattr(usage, "output_tokens", None) if usage else None,
        latency_ms=latency_ms,
        config=config or {},
        cache_hit=bool(getattr(response, "cache_hit", False)),  # DSPy marks answers served from its cache
    )
