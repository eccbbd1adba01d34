"""Answers that are a JSON list of function calls, ``[{"name": ..., "arguments": {...}}]``: the
model-alone format, which the ``plain`` answer strategy asks for too.

:func:`decode_calls` finds the list in a text (the whole text, a fence body, or the first value
opening at ``[`` or ``{``; one call object counts as a list of one; ``args``/``parameters`` and
``function`` are read as ``arguments`` and ``name``; arguments sent as a JSON string are decoded;
calls written in tags, ``<tool_call>{...}</tool_call>``, as Qwen's and Hermes' chat templates ask,
are read as one list),
repairing it with ``json_repair`` only when no strict route works. :func:`parse_call_list` makes a
:class:`~helmdeck_dspy.decoding.parsing.ParseResult` of a completion in that format, with the
planner's rules for finish reasons (a cut or filtered answer is never a success), so the guards
and every scorer treat it as any other plan.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from helmdeck_dspy.decoding.causes import cause_for_empty, cause_for_finish, cause_for_unparseable, normalize_finish_reason
from helmdeck_dspy.decoding.json_text import fenced_bodies, json_shaped
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.signatures.types import PlanOutput, PlanStep

Call = tuple[str, dict[str, Any]]
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)


def _calls(value: Any) -> list[Call] | None:
    """A decoded value as calls: a list of {name, arguments} (or one such object); None otherwise."""
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else None
    if items is None:
        return None
    out: list[Call] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        name = item.get("name", item.get("function"))
        args = item.get("arguments", item.get("args", item.get("parameters", {})))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None
        if not isinstance(name, str) or not isinstance(args, dict):
            return None
        out.append((name, args))
    return out


def _strict_candidates(text: str) -> list[Any]:
    """Every value that strict JSON decoding finds: the tagged calls as one list, the whole text,
    each fence body, and the first value opening at a ``[`` or ``{``."""
    found: list[Any] = []
    decoder = json.JSONDecoder()
    if "<tool_call>" in text:  # every tagged body, the last one perhaps cut before its closing tag
        try:
            found.append([json.loads(body) for body in _TAGGED.findall(text) if body.strip()])
        except ValueError:
            pass
    for candidate in [text, *fenced_bodies(text)]:
        try:
            found.append(json.loads(candidate))
        except ValueError:
            pass
    for opener in "[{":
        start = text.find(opener)
        if start != -1:
            try:
                found.append(decoder.raw_decode(text, start)[0])
            except ValueError:
                pass
    return found


def decode_calls(text: str) -> tuple[list[Call] | None, Literal["strict", "repaired", "failed"]]:
    """The calls a visible answer text holds, and whether decoding needed repair (or failed)."""
    for value in _strict_candidates(text):
        calls = _calls(value)
        if calls is not None:
            return calls, "strict"
    import json_repair

    try:
        calls = _calls(json_repair.loads(text))
    except Exception:  # noqa: BLE001 - json_repair raises assorted errors on hostile text
        calls = None
    return (calls, "repaired") if calls is not None else (None, "failed")


def parse_call_list(content: str | None, finish_reason: str | None = None,
                    reasoning_content: str | None = None) -> ParseResult:
    """A call-list completion as a plan: one step per call, in order (``[]``: no step). Never raises."""
    finish = normalize_finish_reason(finish_reason)
    split = split_reasoning(content or "")
    saw_reasoning = split.had_tags or bool(reasoning_content and reasoning_content.strip())
    text = split.visible.strip()

    def failed(cause: Any, error: str) -> ParseResult:
        return ParseResult(outcome="failed", cause=cause, finish_reason=finish, finish_reason_raw=finish_reason,
                           saw_reasoning=saw_reasoning, visible_chars=len(text), notes=("call_list",), error=error)

    decided = cause_for_finish(finish)
    if decided is not None:
        return failed(decided, f"finish_reason {finish_reason!r}")
    if not text:
        return failed(cause_for_empty(finish, saw_reasoning), "empty visible response")
    calls, outcome = decode_calls(text)
    if calls is None:
        return failed(cause_for_unparseable(finish, json_shaped(text)), "no JSON list of {name, arguments} found")
    steps = [PlanStep(order=i, tool=name, args=args, rationale="") for i, (name, args) in enumerate(calls, 1)]
    plan = PlanOutput(steps=steps)
    notes = ("call_list", "repaired") if outcome == "repaired" else ("call_list",)
    return ParseResult(outcome=outcome, plan=plan, value=plan.model_dump(mode="json"), finish_reason=finish,
                       finish_reason_raw=finish_reason, saw_reasoning=saw_reasoning, visible_chars=len(text),
                       notes=notes)
