"""A per-context log of LM exchanges (plan and filter calls), so the planner can report and
record exactly what was sent and returned without DSPy's global history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.decoding.tool_calls import ToolCall, coerce_tool_calls
from helmdeck_dspy.program.sections import CallKind

if TYPE_CHECKING:
    from dspy.lm15 import Response

# Keys of an lm15 Response's ``provider_data`` that the engines write and the call log reads.
RAW_FINISH_KEY = "helmdeck_finish_reason_raw"
LATENCY_KEY = "helmdeck_latency_ms"  # a simulated latency, when an engine simulates one
TOOL_CALLS_KEY = "helmdeck_tool_calls"  # recorded tool calls as they were, unreadable arguments included
ANSWER_CUT_KEY = "helmdeck_answer_cut"  # a streaming engine stopped the answer where its JSON closed


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
    tool_calls: list[ToolCall] = field(default_factory=list)
    refusal: str | None = None
    native_tools: bool = False  # the request offered the catalog as native tools
    answer_cut: bool = False  # the stream was stopped where the answer's JSON closed (with length: a runaway stopped)


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
    config: dict[str, Any] | None = None, native_tools: bool = False,
) -> Completion:
    """Build a :class:`Completion` from an lm15 Response (content, reasoning, tool calls, refusal,
    raw finish, usage)."""
    from dspy.lm15 import RefusalPart, TextPart, ThinkingPart, ToolCallPart

    parts = response.message.parts if response.message is not None else []
    usage = response.usage
    data = response.provider_data or {}
    recorded = data.get(TOOL_CALLS_KEY)  # an engine that replays recorded calls keeps them whole
    if recorded is not None:
        calls, _problems = coerce_tool_calls(recorded)
    else:
        calls = [ToolCall(name=p.name, arguments=dict(p.input or {}), id=p.id) for p in parts if isinstance(p, ToolCallPart)]
    simulated = data.get(LATENCY_KEY)  # a simulating engine's latency
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
        tool_calls=calls,
        refusal="".join(p.text for p in parts if isinstance(p, RefusalPart)) or None,
        native_tools=native_tools,
        answer_cut=bool(data.get(ANSWER_CUT_KEY)),
    )


def raw_finish_reason(response: Response) -> str | None:
    """The provider's own finish_reason spelling: the one an engine kept, else the one in the
    provider's response body when lm15 passed it on (chat completions ``choices[0].finish_reason``,
    Anthropic ``stop_reason``, Gemini ``candidates[0].finishReason``), else lm15's own class."""
    data = response.provider_data or {}
    if RAW_FINISH_KEY in data:
        return data[RAW_FINISH_KEY]
    raw = _body_finish(data)
    return raw if raw else response.finish_reason


def _body_finish(data: dict) -> str | None:
    for key, inner in (("choices", "finish_reason"), ("candidates", "finishReason")):
        items = data.get(key)
        if isinstance(items, list) and items and isinstance(items[0], dict) and isinstance(items[0].get(inner), str):
            return items[0][inner]
    stop = data.get("stop_reason")
    return stop if isinstance(stop, str) else None
