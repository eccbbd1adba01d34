"""Native tool calls: reading them in any provider's shape, naming tools for the wire, and
turning an answer made of tool calls into plan steps.

Shapes read by :func:`coerce_tool_calls` (one list may mix them):

- OpenAI chat completions: ``{"id", "type": "function", "function": {"name", "arguments"}}``,
  ``arguments`` a JSON string; streamed responses joined chunk by chunk leave one fragment per
  chunk, with an ``index`` saying which call it continues — fragments are joined back;
- OpenAI Responses API output items: ``{"type": "function_call", "call_id", "name", "arguments"}``;
- Anthropic ``tool_use`` content blocks: ``{"type": "tool_use", "id", "name", "input": {...}}``;
- Gemini parts: ``{"functionCall": {"name", "args": {...}}}`` (``function_call`` in the Python SDK);
- the normalised form trace records keep: ``{"name", "arguments", "id"}``.

Tool ids may hold characters function names may not (``blog.publish``): :func:`wire_name` spells
an id for the wire (``blog__publish``) and :func:`resolve_tool` maps a called name back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.signatures.types import PlanOutput, PlanStep

_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_WIRE_MAX = 64  # OpenAI's and Anthropic's limit on a function name
_SHOWN = 3  # problems or names quoted in one error message


class ToolCall(BaseModel):
    """One native tool call, normalised.

    Attributes:
        name: The function name as the model called it.
        arguments: The arguments: a JSON object when they decoded to one, else the raw text the
            model sent (kept so reports can show what was wrong with it).
        id: The provider's call id, when it sent one.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = ""
    arguments: dict[str, Any] | str = {}
    id: str | None = None


def wire_name(tool_id: str) -> str:
    """``tool_id`` as a function name providers accept: dots become ``__``, other characters
    outside ``[A-Za-z0-9_-]`` become ``_``, at most 64 characters."""
    return _WIRE_UNSAFE.sub("_", tool_id.replace(".", "__"))[:_WIRE_MAX]


def resolve_tool(name: str, tool_ids: Collection[str] | None, wire_map: dict[str, str] | None = None) -> str | None:
    """The catalog id a called ``name`` means, or None when it names none.

    With no ``tool_ids`` (no catalog known) every non-empty name stands for itself. The pipeline
    runner is always known; the guards check its ``id`` argument.
    """
    name = name.strip()
    if not name:
        return None
    if tool_ids is None or name in tool_ids or name == PIPELINE_RUN_TOOL:
        return name
    if wire_map is None:
        wire_map = {wire_name(t): t for t in tool_ids}
    return wire_map.get(name)


# ------------------------------------------------------------------ reading any shape


def _arguments(raw: Any) -> dict[str, Any] | str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        return decoded if isinstance(decoded, dict) else raw
    return json.dumps(raw, default=str)[:200]  # a list or a number: not an object, shown as text


def _fields(item: dict[str, Any]) -> tuple[Any, Any, Any, bool] | str:
    """``(name, arguments, id, is_fragment_shape)`` of one item, or what is wrong with it."""
    if isinstance(item.get("function"), dict):  # OpenAI chat completions
        fn = item["function"]
        return fn.get("name"), fn.get("arguments"), item.get("id"), True
    for key in ("functionCall", "function_call"):  # Gemini part
        if isinstance(item.get(key), dict):
            fc = item[key]
            return fc.get("name"), fc.get("args", fc.get("arguments")), fc.get("id"), False
    if item.get("type") == "tool_use" or "input" in item:  # Anthropic block
        return item.get("name"), item.get("input"), item.get("id"), False
    if "name" in item or "arguments" in item or "args" in item:  # normalised, Responses API
        return item.get("name"), item.get("arguments", item.get("args")), item.get("id") or item.get("call_id"), False
    return f"expected a tool call (function/name/input/functionCall), got keys {sorted(item)[:6]}"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def coerce_tool_calls(raw: Any) -> tuple[list[ToolCall], list[str]]:
    """Read tool calls in any supported shape: ``(calls in order, problems)``; never raises.

    Streamed OpenAI fragments that share an ``index`` are joined into one call (the first name
    and id, the arguments concatenated). ``problems`` describes items that are not tool calls.
    """
    if raw is None:
        return [], []
    items = raw if isinstance(raw, list) else [raw]
    problems: list[str] = []
    # index key -> [name, id, argument pieces or a decoded value]
    merged: dict[Any, list[Any]] = {}
    for pos, item in enumerate(items, 1):
        if isinstance(item, ToolCall):
            merged[("call", pos)] = [item.name, item.id, item.arguments]
            continue
        if not isinstance(item, dict):
            problems.append(f"tool call {pos}: expected an object, got {type(item).__name__}")
            continue
        fields = _fields(item)
        if isinstance(fields, str):
            problems.append(f"tool call {pos}: {fields}")
            continue
        name, args, call_id, fragmentable = fields
        index = item.get("index") if fragmentable and isinstance(item.get("index"), int) else None
        key = ("index", index) if index is not None else ("call", pos)
        slot = merged.get(key)
        if slot is None:
            merged[key] = [_text(name) or "", _text(call_id), args if not isinstance(args, str) else [args]]
            continue
        slot[0] = slot[0] or _text(name) or ""
        slot[1] = slot[1] or _text(call_id)
        if isinstance(args, str):
            if isinstance(slot[2], list):
                slot[2].append(args)
            elif slot[2] is None:
                slot[2] = [args]
        elif args is not None and slot[2] is None:
            slot[2] = args
    calls = []
    for name, call_id, args in merged.values():
        joined = "".join(a for a in args if isinstance(a, str)) if isinstance(args, list) else args
        calls.append(ToolCall(name=name, arguments=_arguments(joined), id=call_id))
    return calls, problems


# ------------------------------------------------------------------ an answer made of tool calls


class ToolPlan(NamedTuple):
    """What an answer's tool calls made: a plan, or why not.

    Attributes:
        plan: The plan (one step per call, in call order, arguments kept), or None.
        value: The plan as a dict (the decoded value of a native answer), or None.
        notes: ``unknown_tool_call`` when some call names no catalog tool (the guards demote it).
        error: Why the calls are not a plan, precisely, when ``plan`` is None.
    """

    plan: PlanOutput | None
    value: dict[str, Any] | None
    notes: tuple[str, ...]
    error: str | None


def _quote(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def plan_from_tool_calls(
    calls: list[ToolCall], problems: list[str], tool_ids: Collection[str] | None, reasoning: str | None = None
) -> ToolPlan:
    """Plan steps from native tool calls, or a precise reason they are not a plan.

    Every call becomes a step in call order with its arguments. The answer is a plan when every
    call has a name and object arguments and at least one names a catalog tool (any name counts
    when ``tool_ids`` is None); calls naming other tools stay as steps for the guards to demote.

    Args:
        calls: The calls, from :func:`coerce_tool_calls`.
        problems: Items of the answer that were not tool calls.
        tool_ids: Every id a step may name (catalog packs and pipelines), or None.
        reasoning: Visible text that came with the calls, kept as the plan's reasoning.
    """
    faults = list(problems)
    wire_map = {wire_name(t): t for t in tool_ids} if tool_ids is not None else None
    steps: list[PlanStep] = []
    unknown: list[str] = []
    for i, call in enumerate(calls, 1):
        label = f"tool call {i} ({call.name})" if call.name else f"tool call {i}"
        if not call.name.strip():
            faults.append(f"{label} has no function name")
        if not isinstance(call.arguments, dict):
            faults.append(f"{label}: arguments are not a JSON object: {call.arguments[:80]!r}")
            continue
        tool = resolve_tool(call.name, tool_ids, wire_map)
        if tool is None and call.name.strip():
            unknown.append(call.name.strip())
        steps.append(PlanStep(order=i, tool=tool or call.name.strip(), args=call.arguments))
    if faults:
        return ToolPlan(None, None, (), "unusable tool calls: " + _quote(faults))
    if not steps:
        return ToolPlan(None, None, (), "the answer's tool-call list is empty")
    if len(unknown) == len(steps):
        return ToolPlan(None, None, (), f"none of the {len(steps)} tool call(s) names a catalog tool ({_quote(unknown)})")
    plan = PlanOutput(steps=steps, reasoning=(reasoning or "").strip() or None)
    return ToolPlan(plan, plan.model_dump(mode="json", exclude_none=True), ("unknown_tool_call",) if unknown else (), None)
