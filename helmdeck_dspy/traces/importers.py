"""Importing completions recorded elsewhere into trace records.

- ``openai``: OpenAI chat-completion responses — one JSON object, a JSON list, or JSONL. LiteLLM
  and OpenRouter logs use this shape (``choices[0].message.content``, ``reasoning_content`` or
  ``reasoning``, ``choices[0].finish_reason``, ``usage``). A log line that wraps the response
  under ``response`` (with ``request`` beside it) is unwrapped, and the request's ``max_tokens``
  and last user message are kept.
- ``llamastack``: the normalised llama-stack recordings in ``shared/data/recorded/`` (``source,
  test_id, model, finish_reason, content, reasoning, tool_calls, completion_tokens,
  prompt_tokens, max_tokens, streamed``).

finish_reason is kept exactly as recorded (reports normalise it and show the raw spelling).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io.datafiles import parse_json, read_text
from helmdeck_dspy.io.jsonl import OnError, iter_jsonl, skip_or_raise
from helmdeck_dspy.traces.record import TraceRecord

IMPORT_FORMATS = ("openai", "llamastack")


def _objects(path: Path, on_error: OnError, report: Callable[[DataFileError], None] | None) -> Iterator[tuple[int, dict]]:
    """One JSON object, a JSON list of objects, or JSONL — with line numbers where there are lines."""
    text = read_text(path)
    if text.lstrip().startswith("["):
        for i, item in enumerate(parse_json(text, path), 1):
            if isinstance(item, dict):
                yield i, item
            else:
                err = DataFileError(str(path), f"item {i}: expected a JSON object, got {type(item).__name__}")
                skip_or_raise(err, on_error, report)
        return
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None  # not one JSON document: JSON Lines
    if isinstance(whole, dict):
        yield 1, whole
        return
    yield from iter_jsonl(path, on_error=on_error, report=report)


def _record_id(prefix: str, *parts: Any) -> str:
    return prefix + hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def from_openai(obj: dict[str, Any], line: int) -> TraceRecord:
    """One chat-completion response (or a log line wrapping one) as a trace record."""
    request = obj.get("request") if isinstance(obj.get("request"), dict) else {}
    resp = obj.get("response") if isinstance(obj.get("response"), dict) else obj
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("expected a chat completion with a non-empty 'choices' list")
    choice = choices[0]
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        raise ValueError("'choices[0].message' must be an object")
    usage = resp.get("usage") or {}
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    intent = None
    for m in reversed(request.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            intent = m["content"]
            break
    extra = {}
    if message.get("tool_calls"):
        extra["tool_calls"] = len(message["tool_calls"])
    return TraceRecord(
        id=str(resp.get("id") or _record_id("openai-", line, content, choice.get("finish_reason"))),
        source="import:openai",
        model=str(request.get("model") or resp.get("model") or ""),
        served_model=resp.get("model"),
        max_tokens=request.get("max_tokens") or request.get("max_completion_tokens"),
        intent=intent,
        content=content if isinstance(content, str) else None,
        reasoning_content=reasoning if isinstance(reasoning, str) else None,
        finish_reason=choice.get("finish_reason"),
        completion_tokens=usage.get("completion_tokens"),
        prompt_tokens=usage.get("prompt_tokens"),
        latency_ms=obj.get("latency_ms") or resp.get("latency_ms"),
        recorded_at=str(resp["created"]) if resp.get("created") is not None else None,
        **extra,
    )


def from_llamastack(obj: dict[str, Any], line: int) -> TraceRecord:
    """One normalised llama-stack recording as a trace record."""
    if "finish_reason" not in obj or "model" not in obj:
        raise ValueError("expected a llama-stack recording with 'model' and 'finish_reason'")
    source = str(obj.get("source") or "")
    return TraceRecord(
        id=source.replace("llama-stack:", "ls-") or _record_id("ls-", line),
        source="import:llamastack",
        model=str(obj["model"]),
        content=obj.get("content"),
        reasoning_content=obj.get("reasoning") or None,
        finish_reason=obj.get("finish_reason"),
        completion_tokens=obj.get("completion_tokens"),
        prompt_tokens=obj.get("prompt_tokens"),
        max_tokens=obj.get("max_tokens"),
        test_id=obj.get("test_id"),
        tool_calls=len(obj.get("tool_calls") or []),
        streamed=obj.get("streamed"),
    )


_CONVERTERS = {"openai": from_openai, "llamastack": from_llamastack}


def import_traces(
    fmt: str,
    path: str | Path,
    *,
    on_error: OnError = "fail",
    report: Callable[[DataFileError], None] | None = None,
) -> Iterator[TraceRecord]:
    """Stream ``path`` in format ``fmt`` as trace records; bad items are reported as ``file:line``."""
    if fmt not in _CONVERTERS:
        raise DataFileError(str(path), f"unknown import format {fmt!r}; expected one of {IMPORT_FORMATS}")
    convert = _CONVERTERS[fmt]
    p = Path(path)
    for line, obj in _objects(p, on_error, report):
        try:
            yield convert(obj, line)
        except (ValueError, TypeError) as exc:
            skip_or_raise(DataFileError(str(p), str(exc).splitlines()[0], line=line), on_error, report)
