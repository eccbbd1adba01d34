"""Provider response shapes read by ``traces import``: one source row → the fields of a trace record.

Each reader takes one decoded JSON object and returns the :class:`~helmdeck_dspy.traces.record.TraceRecord`
fields it found, or raises :class:`RowError` saying what was expected where. A row may wrap the
response as ``{"request": {...}, "response": {...}, "latency_ms": ...}`` (LiteLLM / proxy logs);
the request's model, output cap, last user message and whether it offered tools are kept.

- ``openai``: chat completions (``choices[0].message``; content a string or a list of parts;
  ``reasoning_content`` / ``reasoning``; ``refusal``; ``tool_calls`` or the older
  ``function_call``), and Responses API objects (``output`` items, ``status``,
  ``incomplete_details.reason``);
- ``anthropic``: Messages responses (``content`` blocks ``text``, ``thinking``,
  ``redacted_thinking``, ``tool_use``; ``stop_reason``);
- ``gemini``: ``generateContent`` responses (``candidates[0].content.parts`` with ``text``,
  ``thought`` and ``functionCall``; ``finishReason``), and prompt-level blocks without candidates
  (recorded as finish_reason ``blockReason:<value>``);
- ``llamastack``: the normalised llama-stack recordings (``source, test_id, model, finish_reason,
  content, reasoning, tool_calls, ...``), streamed tool-call fragments joined.

finish_reason is kept exactly as the provider spelled it.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.decoding.finish_table import BLOCK_PREFIX
from helmdeck_dspy.decoding.tool_calls import ToolCall, coerce_tool_calls


class RowError(ValueError):
    """A source row that does not have the expected shape; the message says what was expected where."""


def _kind(value: Any) -> str:
    return "null" if value is None else {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def obj(value: Any, where: str, *, optional: bool = False) -> dict[str, Any]:
    """``value`` when it is an object (an absent optional one is empty), else a :class:`RowError`."""
    if value is None and optional:
        return {}
    if not isinstance(value, dict):
        raise RowError(f"{where}: expected an object, got {_kind(value)}")
    return value


def items(value: Any, where: str, *, optional: bool = False) -> list[Any]:
    """``value`` when it is a list (an absent optional one is empty), else a :class:`RowError`."""
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise RowError(f"{where}: expected a list, got {_kind(value)}")
    return value


def text(value: Any, where: str) -> str | None:
    """An optional string."""
    if value is None or isinstance(value, str):
        return value
    raise RowError(f"{where}: expected a string, got {_kind(value)}")


def count(value: Any, where: str) -> int | None:
    """An optional whole number (token counts, caps)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise RowError(f"{where}: expected a whole number, got {_kind(value)}")
    return int(value)


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RowError(f"{where}: expected a number, got {_kind(value)}")
    return float(value)


def tool_calls(value: list[Any], where: str) -> list[ToolCall] | None:
    """Tool calls in any provider's shape, normalised; an item that is not one is a :class:`RowError`."""
    calls, problems = coerce_tool_calls(value)
    if problems:
        raise RowError(f"{where}: {problems[0]}")
    return calls or None


def _joined(parts: list[str]) -> str | None:
    return "".join(parts) if parts else None


def _answer(texts: list[str], reasoning: list[str], calls: list[Any], calls_at: str, finish: str | None) -> dict[str, Any]:
    """The answer fields of a response read part by part: text, reasoning, tool calls, finish_reason."""
    return {"content": "".join(texts), "reasoning_content": _joined(reasoning), "tool_calls": tool_calls(calls, calls_at),
            "finish_reason": finish}


# ------------------------------------------------------------------ the request wrapper


def unwrap(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(response, fields from the request wrapper)`` of a row that may wrap its response."""
    if "response" not in row:
        return row, {}
    response = obj(row["response"], "response")
    request = obj(row.get("request"), "request", optional=True)
    config = obj(request.get("generationConfig"), "request.generationConfig", optional=True)
    cap = next((request[k] for k in ("max_tokens", "max_completion_tokens", "max_output_tokens") if request.get(k) is not None),
               config.get("maxOutputTokens"))
    fields: dict[str, Any] = {
        "model": text(request.get("model"), "request.model"),
        "max_tokens": count(cap, "request.max_tokens"),
        "intent": _last_user_text(request),
        "latency_ms": _number(row.get("latency_ms"), "latency_ms"),
    }
    if "tools" in request:
        fields["native_tools"] = bool(items(request["tools"], "request.tools"))
    return response, {k: v for k, v in fields.items() if v is not None}


def _last_user_text(request: dict[str, Any]) -> str | None:
    """The last user message's text (OpenAI / Anthropic ``messages``, Gemini ``contents``)."""
    turns = request.get("messages") if isinstance(request.get("messages"), list) else request.get("contents")
    for turn in reversed(turns if isinstance(turns, list) else []):
        if not isinstance(turn, dict) or turn.get("role") != "user":
            continue
        body = turn.get("content", turn.get("parts"))
        if isinstance(body, str):
            return body
        if isinstance(body, list):
            pieces = [p["text"] for p in body if isinstance(p, dict) and isinstance(p.get("text"), str)]
            return "".join(pieces) if pieces else None
    return None


# ------------------------------------------------------------------ OpenAI


def from_openai(resp: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat completion, or a Responses API object."""
    if "choices" not in resp and isinstance(resp.get("output"), list):
        return _from_responses_api(resp)
    choices = items(resp.get("choices"), "choices")
    if not choices:
        raise RowError("choices: expected a chat completion with a non-empty 'choices' list")
    choice = obj(choices[0], "choices[0]")
    message = obj(choice.get("message"), "choices[0].message")
    texts, refusals = _openai_content(message.get("content"))
    refusal = text(message.get("refusal"), "choices[0].message.refusal")
    if refusal:
        refusals.append(refusal)
    reasoning = text(message.get("reasoning_content"), "choices[0].message.reasoning_content") or text(
        message.get("reasoning") if isinstance(message.get("reasoning"), str) else None, "choices[0].message.reasoning")
    calls = items(message.get("tool_calls"), "choices[0].message.tool_calls", optional=True)
    if not calls and message.get("function_call") is not None:
        calls = [{"function": obj(message["function_call"], "choices[0].message.function_call")}]
    usage = obj(resp.get("usage"), "usage", optional=True)
    return {
        "id": text(resp.get("id"), "id"),
        "served_model": text(resp.get("model"), "model"),
        "content": texts,
        "reasoning_content": reasoning,
        "refusal": _joined(refusals),
        "tool_calls": tool_calls(calls, "choices[0].message.tool_calls"),
        "finish_reason": text(choice.get("finish_reason"), "choices[0].finish_reason"),
        "prompt_tokens": count(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        "completion_tokens": count(usage.get("completion_tokens"), "usage.completion_tokens"),
        "latency_ms": _number(resp.get("latency_ms"), "latency_ms"),
        "recorded_at": str(resp["created"]) if resp.get("created") is not None else None,
    }


def _openai_content(content: Any) -> tuple[str | None, list[str]]:
    """A message's text and its refusal parts, from a string or a list of content parts."""
    if content is None or isinstance(content, str):
        return content, []
    texts, refusals = [], []
    for i, part in enumerate(items(content, "choices[0].message.content")):
        if isinstance(part, str):
            texts.append(part)
            continue
        part = obj(part, f"choices[0].message.content[{i}]")
        if part.get("type") == "refusal":
            refusals.append(text(part.get("refusal"), f"choices[0].message.content[{i}].refusal") or "")
        elif part.get("text") is not None:
            texts.append(text(part.get("text"), f"choices[0].message.content[{i}].text") or "")
    return "".join(texts), refusals


def _from_responses_api(resp: dict[str, Any]) -> dict[str, Any]:
    texts, reasoning, refusals, calls = [], [], [], []
    for i, item in enumerate(resp["output"]):
        item = obj(item, f"output[{i}]")
        kind = item.get("type")
        if kind == "message":
            for j, part in enumerate(items(item.get("content"), f"output[{i}].content", optional=True)):
                part = obj(part, f"output[{i}].content[{j}]")
                if part.get("type") == "refusal":
                    refusals.append(text(part.get("refusal"), f"output[{i}].content[{j}].refusal") or "")
                else:
                    texts.append(text(part.get("text"), f"output[{i}].content[{j}].text") or "")
        elif kind == "reasoning":
            for key in ("summary", "content"):
                for j, part in enumerate(items(item.get(key), f"output[{i}].{key}", optional=True)):
                    reasoning.append(text(obj(part, f"output[{i}].{key}[{j}]").get("text"), f"output[{i}].{key}[{j}].text") or "")
        elif kind == "function_call":
            calls.append(item)
    status = text(resp.get("status"), "status")
    details = obj(resp.get("incomplete_details"), "incomplete_details", optional=True)
    finish = text(details.get("reason"), "incomplete_details.reason") or status
    return {
        **_id_model_usage(resp), **_answer(texts, reasoning, calls, "output", finish),
        "refusal": _joined(refusals),
        "recorded_at": str(resp["created_at"]) if resp.get("created_at") is not None else None,
    }


def _id_model_usage(resp: dict[str, Any]) -> dict[str, Any]:
    """Id, model and token counts of a response that counts ``usage.input_tokens`` /
    ``output_tokens`` (Anthropic Messages, the Responses API)."""
    usage = obj(resp.get("usage"), "usage", optional=True)
    return {
        "id": text(resp.get("id"), "id"),
        "served_model": text(resp.get("model"), "model"),
        "prompt_tokens": count(usage.get("input_tokens"), "usage.input_tokens"),
        "completion_tokens": count(usage.get("output_tokens"), "usage.output_tokens"),
    }


# ------------------------------------------------------------------ Anthropic


def from_anthropic(resp: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages response."""
    if "stop_reason" not in resp or "content" not in resp:
        raise RowError("expected an Anthropic Messages response with 'content' and 'stop_reason'")
    texts, reasoning, calls = [], [], []
    for i, block in enumerate(items(resp["content"], "content")):
        block = obj(block, f"content[{i}]")
        kind = block.get("type")
        if kind == "text":
            texts.append(text(block.get("text"), f"content[{i}].text") or "")
        elif kind == "thinking":
            reasoning.append(text(block.get("thinking"), f"content[{i}].thinking") or "")
        elif kind == "redacted_thinking":
            reasoning.append("[redacted thinking]")
        elif kind == "tool_use":
            calls.append(block)
    return {**_id_model_usage(resp), **_answer(texts, reasoning, calls, "content", text(resp.get("stop_reason"), "stop_reason"))}


# ------------------------------------------------------------------ Gemini


def from_gemini(resp: dict[str, Any]) -> dict[str, Any]:
    """A Gemini ``generateContent`` response (Gemini API or Vertex AI), candidates or a prompt block.

    completion_tokens counts the candidates' and the thoughts' tokens: both count against
    ``maxOutputTokens``.
    """
    candidates = items(resp.get("candidates"), "candidates", optional=True)
    feedback = obj(resp.get("promptFeedback"), "promptFeedback", optional=True)
    usage = obj(resp.get("usageMetadata"), "usageMetadata", optional=True)
    out_tokens = count(usage.get("candidatesTokenCount"), "usageMetadata.candidatesTokenCount")
    thoughts = count(usage.get("thoughtsTokenCount"), "usageMetadata.thoughtsTokenCount")
    fields: dict[str, Any] = {
        "id": text(resp.get("responseId"), "responseId"),
        "served_model": text(resp.get("modelVersion"), "modelVersion"),
        "prompt_tokens": count(usage.get("promptTokenCount"), "usageMetadata.promptTokenCount"),
        "completion_tokens": (out_tokens or 0) + (thoughts or 0) if out_tokens is not None or thoughts is not None else None,
    }
    if not candidates:
        block = text(feedback.get("blockReason"), "promptFeedback.blockReason")
        if not block:
            raise RowError("expected a Gemini response with 'candidates' or a promptFeedback.blockReason")
        return {**fields, "content": None, "finish_reason": BLOCK_PREFIX + block}
    cand = obj(candidates[0], "candidates[0]")
    content = obj(cand.get("content"), "candidates[0].content", optional=True)
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[Any] = []
    for i, part in enumerate(items(content.get("parts"), "candidates[0].content.parts", optional=True)):
        part = obj(part, f"candidates[0].content.parts[{i}]")
        if "functionCall" in part or "function_call" in part:
            calls.append(part)
        elif part.get("text") is not None:
            piece = text(part.get("text"), f"candidates[0].content.parts[{i}].text") or ""
            (reasoning if part.get("thought") is True else texts).append(piece)
    finish = text(cand.get("finishReason"), "candidates[0].finishReason")
    return {**fields, **_answer(texts, reasoning, calls, "candidates[0].content.parts", finish)}


# ------------------------------------------------------------------ llama-stack


def from_llamastack(row: dict[str, Any]) -> dict[str, Any]:
    """One normalised llama-stack recording."""
    if "finish_reason" not in row or "model" not in row:
        raise RowError("expected a llama-stack recording with 'model' and 'finish_reason'")
    source = text(row.get("source"), "source") or ""
    calls = items(row.get("tool_calls"), "tool_calls", optional=True)
    streamed = row.get("streamed")
    if streamed is not None and not isinstance(streamed, bool):
        raise RowError(f"streamed: expected true or false, got {_kind(streamed)}")
    return {
        "id": source.replace("llama-stack:", "ls-") or None,
        "model": text(row["model"], "model"),
        "content": text(row.get("content"), "content"),
        "reasoning_content": text(row.get("reasoning"), "reasoning") or None,
        "finish_reason": text(row.get("finish_reason"), "finish_reason"),
        "completion_tokens": count(row.get("completion_tokens"), "completion_tokens"),
        "prompt_tokens": count(row.get("prompt_tokens"), "prompt_tokens"),
        "max_tokens": count(row.get("max_tokens"), "max_tokens"),
        "tool_calls": tool_calls(calls, "tool_calls"),
        "test_id": text(row.get("test_id"), "test_id"),
        "streamed": streamed,
    }


def detect(row: dict[str, Any]) -> str | None:
    """The format of one row (``openai``, ``anthropic``, ``gemini``, ``llamastack``), or None."""
    resp = row["response"] if isinstance(row.get("response"), dict) else row
    if "choices" in resp or (isinstance(resp.get("output"), list) and "status" in resp):
        return "openai"
    if resp.get("type") == "message" or "stop_reason" in resp:
        return "anthropic"
    if "candidates" in resp or "promptFeedback" in resp:
        return "gemini"
    if "finish_reason" in resp and "model" in resp:
        return "llamastack"
    return None


READERS = {"openai": from_openai, "anthropic": from_anthropic, "gemini": from_gemini, "llamastack": from_llamastack}
