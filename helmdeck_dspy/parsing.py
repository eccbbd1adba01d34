"""Tolerant decoding of a planning completion: :func:`parse_completion`.

One pure entry point, used by the planner, the evaluator and the CLI. It never raises on any
string. Steps, in order:

1. split off reasoning (inline tags, orphan closers, unclosed blocks; a separate
   ``reasoning_content`` value counts as reasoning too) — JSON is never taken from reasoning;
2. candidate texts: the body of each ``` fence, wherever it is, then the whole visible text;
3. for each candidate: a standard JSON parse, then every top-level balanced ``{...}`` found by a
   scan that understands strings and escapes (so leading and trailing prose are tolerated and
   the first complete object wins) — any success here is ``strict``;
4. only if nothing decoded: ``json_repair`` on the JSON-shaped part, marked ``repaired``;
5. the decoded value must validate as :class:`PlanOutput`, else ``schema_mismatch``;
6. a ``length`` (or safety) finish is never a success, however well the text decodes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from helmdeck_dspy.causes import (
    FailureCause,
    FinishReason,
    cause_for_empty,
    cause_for_unparseable,
    normalize_finish_reason,
)
from helmdeck_dspy.reasoning import split_reasoning
from helmdeck_dspy.signatures.types import PlanOutput

Outcome = Literal["strict", "repaired", "failed"]

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_STRUCTURAL = re.compile(r'[{}"\\]')
_MAX_OBJECTS = 16  # top-level objects tried per candidate text
_MAX_REPAIR_CHARS = 100_000  # json_repair is super-linear on pathological input; plans are far smaller


class ParseResult(BaseModel):
    """What :func:`parse_completion` made of one completion.

    Attributes:
        outcome: ``strict`` (standard JSON after removing reasoning, fences and prose),
            ``repaired`` (only after json_repair) or ``failed``.
        cause: Why it failed; None on success.
        value: The decoded JSON value (on success the plan as a dict; on ``schema_mismatch`` the
            valid JSON that was not a plan); None otherwise.
        plan: The validated plan on success.
        finish_reason: The normalised finish_reason.
        finish_reason_raw: The finish_reason as the provider spelled it.
        saw_reasoning: Reasoning was present (tags or a separate field).
        visible_chars: Length of the visible answer after removing reasoning.
        reasoning_chars: Length of the reasoning text.
        notes: Short markers of what decoding had to do (``fenced``, ``prose``, ``repaired``,
            ``unclosed_reasoning``, ``orphan_close``, ``reasoning_field``, ``tags``...).
        error: The decoder's or validator's message when something failed.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    outcome: Outcome
    cause: FailureCause | None = None
    value: Any = None
    plan: PlanOutput | None = None
    finish_reason: FinishReason = "none"
    finish_reason_raw: str | None = None
    saw_reasoning: bool = False
    visible_chars: int = 0
    reasoning_chars: int = 0
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when a plan came out (strict or repaired)."""
        return self.outcome != "failed"

    def to_json_dict(self) -> dict[str, Any]:
        """The CLI's JSON shape: outcome, cause, value and the diagnostics."""
        return self.model_dump(mode="json", exclude={"plan"})


def parse_completion(
    content: str | None,
    finish_reason: str | None = None,
    reasoning_content: str | None = None,
) -> ParseResult:
    """Decode a planning completion into a plan, or classify why it cannot be one.

    Args:
        content: The message content as returned (may hold reasoning tags, fences, prose).
        finish_reason: The provider's finish_reason, any spelling.
        reasoning_content: A separate reasoning field, when the provider sends one.

    Returns:
        A :class:`ParseResult`; never raises.
    """
    try:
        return _parse(content, finish_reason, reasoning_content)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return ParseResult.model_construct(
            outcome="failed",
            cause="constrained_deadlock",
            finish_reason=normalize_finish_reason(finish_reason if isinstance(finish_reason, str) else None),
            finish_reason_raw=finish_reason if isinstance(finish_reason, str) else None,
            notes=("internal_error",),
            error=f"{type(exc).__name__}: {exc}",
        )


def _parse(content: str | None, finish_raw: str | None, reasoning_content: str | None) -> ParseResult:
    finish = normalize_finish_reason(finish_raw)
    split = split_reasoning(content or "")
    notes: list[str] = []
    reasoning_chars = len(split.reasoning)
    if split.had_tags:
        notes.append("tags")
    if split.unclosed:
        notes.append("unclosed_reasoning")
    if split.orphan_close:
        notes.append("orphan_close")
    if reasoning_content and reasoning_content.strip():
        notes.append("reasoning_field")
        reasoning_chars += len(reasoning_content.strip())
    saw_reasoning = reasoning_chars > 0 or split.had_tags
    text = split.visible

    def result(outcome: Outcome, cause: FailureCause | None = None, **kw: Any) -> ParseResult:
        return ParseResult.model_construct(
            outcome=outcome,
            cause=cause,
            value=kw.get("value"),
            plan=kw.get("plan"),
            finish_reason=finish,
            finish_reason_raw=finish_raw,
            saw_reasoning=saw_reasoning,
            visible_chars=len(text),
            reasoning_chars=reasoning_chars,
            notes=tuple(notes),
            error=kw.get("error"),
        )

    if not text:
        if finish == "tool_calls":
            return result("failed", "no_json", error="the model answered with a native tool call, not JSON text")
        return result("failed", cause_for_empty(finish, saw_reasoning), error="empty visible response")

    if finish == "length":
        # Never a success, however well it would decode or repair.
        return result("failed", "length_truncated", error=f"finish_reason {finish_raw!r}: the token limit cut the output")
    if finish == "safety":
        return result("failed", "safety_filtered", error=f"finish_reason {finish_raw!r}: the provider's safety filter intervened")

    json_shaped = "{" in text or text.startswith("[")
    decoded, first_other, error = _decode_strict(text, notes)
    outcome: Outcome = "strict"
    if decoded is None and first_other is None and "{" in text:
        decoded, error = _repair(text)
        outcome = "repaired"
    if decoded is not None:
        if outcome == "repaired":
            notes.append("repaired")
        return result(outcome, value=decoded[1], plan=decoded[0])
    if first_other is not None:
        return result("failed", "schema_mismatch", value=first_other, error=error)
    return result("failed", cause_for_unparseable(finish, json_shaped), error=error or "no JSON object found")


def _candidates(text: str, notes: list[str]) -> list[str]:
    out: list[str] = []
    if "```" in text:
        for m in _FENCE.finditer(text):
            body = m.group(1).strip()
            if body:
                out.append(body)
        if out:
            notes.append("fenced")
    out.append(text)
    return out


def _decode_strict(text: str, notes: list[str]) -> tuple[tuple[PlanOutput, dict] | None, Any, str | None]:
    """Try every strict route. Returns (plan and its dict, first non-plan value, last error)."""
    first_other: Any = None
    error: str | None = None
    for cand in _candidates(text, notes):
        try:
            value = json.loads(cand)
        except (ValueError, RecursionError) as exc:
            error = f"invalid JSON: {exc}"
        else:
            plan = _as_plan(value)
            if plan is not None:
                return (plan, value), None, None
            if first_other is None:
                first_other = value
            error = "valid JSON, but not a plan object with a steps list"
        for start, end in _balanced_objects(cand):
            try:
                value = json.loads(cand[start:end])
            except (ValueError, RecursionError) as exc:
                error = f"invalid JSON: {exc}"
                continue
            plan = _as_plan(value)
            if plan is not None:
                if start > 0 or end < len(cand):
                    notes.append("prose")
                return (plan, value), None, None
            if first_other is None:
                first_other = value
            error = "valid JSON, but not a plan object with a steps list"
    return None, first_other, error


def _balanced_objects(text: str):
    """Yield (start, end) of top-level ``{...}`` spans, string- and escape-aware."""
    start = text.find("{")
    found = 0
    while start != -1 and found < _MAX_OBJECTS:
        depth = 0
        in_string = False
        escaped = False
        end = -1
        for m in _STRUCTURAL.finditer(text, start):
            ch = m.group()
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    # An escape consumes the next character, structural or not.
                    nxt = m.end()
                    if nxt < len(text) and text[nxt] not in '{}"\\':
                        continue
                    escaped = True
                elif ch == '"':
                    in_string = False
                continue
            if ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = m.end()
                    break
        if end == -1:
            return
        found += 1
        yield start, end
        start = text.find("{", end)


def _repair(text: str) -> tuple[tuple[PlanOutput, dict] | None, str | None]:
    import json_repair  # deferred: only the rare malformed completion needs it

    start = text.find("{")
    cand = text[start:] if start != -1 else text
    if len(cand) > _MAX_REPAIR_CHARS:
        return None, f"not valid JSON, and {len(cand)} characters is too long to repair"
    try:
        value = json_repair.repair_json(cand, return_objects=True)
    except Exception as exc:  # noqa: BLE001 - json_repair's failure modes are not typed
        return None, f"repair failed: {type(exc).__name__}"
    plan = _as_plan(value)
    if plan is None:
        return None, "not valid JSON, and repair did not yield a plan"
    return (plan, value), None


def _as_plan(value: Any) -> PlanOutput | None:
    if not isinstance(value, dict):
        return None
    if "steps" not in value:
        lowered = {k.lower(): v for k, v in value.items() if isinstance(k, str)}
        if "steps" not in lowered:
            return None
        value = lowered
    if not isinstance(value["steps"], list):
        return None
    try:
        return PlanOutput.model_validate(value)
    except (ValidationError, RecursionError, ValueError):
        return None
