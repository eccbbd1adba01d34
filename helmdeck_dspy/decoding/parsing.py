"""Tolerant decoding of a planning completion: :func:`parse_completion`.

One pure entry point, used by the planner, the evaluator and the CLI. It never raises on any
string. Steps, in order:

1. split off reasoning (inline tags, orphan closers, unclosed blocks; a separate
   ``reasoning_content`` value counts as reasoning too) — JSON is never taken from reasoning;
2. native tool calls, when the completion carries any: calls naming catalog tools become the plan
   (outcome ``native``, see :mod:`helmdeck_dspy.decoding.tool_calls`); calls that cannot be a plan
   leave the text to decide, and fail as ``unusable_tool_calls`` if it cannot;
3. candidate texts: the body of each ``` fence, wherever it is, then the whole visible text;
4. for each candidate: a standard JSON parse, then the first complete JSON value at each
   top-level ``{`` (an object that fails to decode is skipped by a balanced-brace scan that
   understands strings and escapes), so leading and trailing prose are tolerated and the first
   complete plan wins — any success here is ``strict``;
5. only if nothing decoded: ``json_repair`` on the part from the first ``{``, marked ``repaired``;
6. the decoded value must validate as :class:`PlanOutput`, else ``schema_mismatch`` (an object or
   array) or ``bare_scalar`` (the whole answer is one number, string, boolean or null);
7. a ``length``, safety or rejected-tool-call finish is never a success, however well the text
   decodes.

Text that does not decode is ``constrained_deadlock`` only when it is JSON-shaped (see
:func:`~helmdeck_dspy.decoding.json_text.json_shaped`); prose or code that merely contains braces is
``no_json``.

Bounds: JSON nested more than ``MAX_JSON_DEPTH`` levels is never accepted (and never handed to
``json_repair``): it fails as ``constrained_deadlock`` with the note ``too_deep``. Deeper input
would otherwise reach the recursion limit of the decoder, or of whatever serialises the value
later; no plan needs more than a handful of levels.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from helmdeck_dspy.decoding.causes import (
    FailureCause,
    FinishReason,
    cause_for_empty,
    cause_for_finish,
    cause_for_unparseable,
    normalize_finish_reason,
    unknown_finish_label,
)
from helmdeck_dspy.decoding.finish_table import finish_table
from helmdeck_dspy.decoding.json_text import (
    balanced_end,
    deeper_than,
    fenced_bodies,
    json_shaped,
    replace_surrogates,
    without_lone_surrogates,
)
from helmdeck_dspy.io.nesting import nesting_exceeds
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.decoding.tool_calls import coerce_tool_calls, plan_from_tool_calls
from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.signatures.types import PlanOutput, coerce_plan_dict

Outcome = Literal["strict", "repaired", "native", "failed"]
"""``strict`` and ``repaired`` plans came as JSON text; ``native`` ones as native tool calls."""

_DECODER = json.JSONDecoder()
_JSON_START = frozenset("{[\"-0123456789")
_NOT_A_PLAN = "valid JSON, but not a plan object with a steps list"
_SCALAR = "the whole answer is one JSON scalar, not a plan object"
_MAX_OBJECTS = 16  # top-level objects tried per candidate text
_MAX_REPAIR_CHARS = 100_000  # json_repair is super-linear on pathological input; plans are far smaller
_TOO_DEEP = f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
_NOTHING = object()  # no bare scalar was decoded


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What :func:`parse_completion` made of one completion.

    A slotted dataclass rather than a pydantic model: the evaluator builds one per record, and
    construction cost matters there. :meth:`to_json_dict` is the boundary form.

    Attributes:
        outcome: ``strict`` (standard JSON after removing reasoning, fences and prose),
            ``repaired`` (only after json_repair), ``native`` (native tool calls naming catalog
            tools) or ``failed``.
        cause: Why it failed; None on success.
        value: The decoded JSON value (on success the plan as a dict; on ``schema_mismatch`` or
            ``bare_scalar`` the valid JSON that was not a plan); None otherwise.
        plan: The validated plan on success.
        finish_reason: The normalised finish_reason.
        finish_reason_raw: The finish_reason as the provider spelled it.
        saw_reasoning: Reasoning was present (tags or a separate field).
        visible_chars: Length of the visible answer after removing reasoning.
        reasoning_chars: Length of the reasoning text.
        tool_calls: Native tool calls the completion carried.
        notes: Short markers of what decoding had to do (``fenced``, ``prose``, ``repaired``,
            ``unclosed_reasoning``, ``orphan_close``, ``reasoning_field``, ``tags`` and one
            ``tag:<kind>`` per reasoning tag kind seen, ``too_deep``, ``lone_surrogate``,
            ``tool_calls``, ``unknown_tool_call``, ``tool_calls_ignored``, ``refusal``,
            ``unknown_finish``...).
        error: The decoder's or validator's message when something failed.
    """

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
    tool_calls: int = 0

    @property
    def ok(self) -> bool:
        """True when a plan came out (strict, repaired or native)."""
        return self.outcome != "failed"

    def to_json_dict(self) -> dict[str, Any]:
        """The CLI's JSON shape: outcome, cause, value and the diagnostics."""
        return {
            "outcome": self.outcome,
            "cause": self.cause,
            "value": self.value,
            "finish_reason": self.finish_reason,
            "finish_reason_raw": self.finish_reason_raw,
            "saw_reasoning": self.saw_reasoning,
            "visible_chars": self.visible_chars,
            "reasoning_chars": self.reasoning_chars,
            "tool_calls": self.tool_calls,
            "notes": list(self.notes),
            "error": self.error,
        }


def parse_completion(
    content: str | None,
    finish_reason: str | None = None,
    reasoning_content: str | None = None,
    *,
    tool_calls: Any = None,
    tool_ids: Collection[str] | None = None,
    refusal: str | None = None,
) -> ParseResult:
    """Decode a planning completion into a plan, or classify why it cannot be one.

    Args:
        content: The message content as returned (may hold reasoning tags, fences, prose).
        finish_reason: The provider's finish_reason, any spelling.
        reasoning_content: A separate reasoning field, when the provider sends one.
        tool_calls: Native tool calls the completion carried, in any provider's shape (see
            :func:`~helmdeck_dspy.decoding.tool_calls.coerce_tool_calls`).
        tool_ids: The ids a tool call may name (catalog packs and pipelines); None accepts any name.
        refusal: A refusal the provider sent apart from the content (OpenAI's ``refusal``).

    Returns:
        A :class:`ParseResult`; never raises.
    """
    try:
        return _parse(content, finish_reason, reasoning_content, tool_calls, tool_ids, refusal)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return ParseResult(
            outcome="failed",
            cause="constrained_deadlock",
            finish_reason=normalize_finish_reason(finish_reason if isinstance(finish_reason, str) else None),
            finish_reason_raw=finish_reason if isinstance(finish_reason, str) else None,
            notes=("internal_error",),
            error=f"{type(exc).__name__}: {exc}",
        )


def _finish_error(finish: FinishReason, raw: str | None) -> str:
    """Why a finish_reason alone ended the answer, in words: the table's meaning of the spelling."""
    if finish == "unknown":
        return unknown_finish_label(raw)
    row = finish_table().lookup(raw)
    return f"finish_reason {raw!r}: {row.meaning}" if row is not None else f"finish_reason {raw!r}"


def _parse(
    content: str | None, finish_raw: str | None, reasoning_content: str | None, raw_calls: Any,
    tool_ids: Collection[str] | None, refusal: str | None,
) -> ParseResult:
    if finish_raw:  # kept for reports, so it must be printable
        finish_raw = replace_surrogates(finish_raw)
    finish = normalize_finish_reason(finish_raw)
    split = split_reasoning(content or "")
    notes: list[str] = []
    reasoning_chars = len(split.reasoning)
    if split.had_tags:
        notes.append("tags")
        notes.extend(f"tag:{k}" for k in sorted(split.kinds))
    if split.unclosed:
        notes.append("unclosed_reasoning")
    if split.orphan_close:
        notes.append("orphan_close")
    if reasoning_content and reasoning_content.strip():
        notes.append("reasoning_field")
        reasoning_chars += len(reasoning_content.strip())
    if finish == "unknown":
        notes.append("unknown_finish")
    refused = refusal.strip() if isinstance(refusal, str) else ""
    if refused:
        notes.append("refusal")
    saw_reasoning = reasoning_chars > 0 or split.had_tags
    text = split.visible
    calls, call_problems = coerce_tool_calls(raw_calls) if raw_calls else ([], [])
    n_calls = len(calls) + len(call_problems)

    def result(outcome: Outcome, cause: FailureCause | None = None, **kw: Any) -> ParseResult:
        return ParseResult(
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
            tool_calls=n_calls,
        )

    decided = cause_for_finish(finish)  # a cut, a filter or a rejected tool call: never a success
    tool_error: str | None = None
    if n_calls:
        notes.append("tool_calls")
        if decided is None:
            tool = plan_from_tool_calls(calls, call_problems, tool_ids, text)
            if tool.plan is not None:
                notes.extend(tool.notes)
                return result("native", value=tool.value, plan=tool.plan)
            tool_error = tool.error
    elif finish == "tool_calls" and not text:
        tool_error = f"finish_reason {finish_raw!r} but the completion carries no tool call"

    if decided is not None:
        # Never a success, however well it would decode or repair.
        return result("failed", decided, error=_finish_error(finish, finish_raw))
    if not text:
        if tool_error:
            return result("failed", "unusable_tool_calls", error=tool_error)
        if refused:
            return result("failed", "safety_filtered", error=f"the model refused: {refused[:200]}")
        cause = cause_for_empty(finish, saw_reasoning)
        error = _finish_error(finish, finish_raw) if cause in ("unknown_finish_reason", "interrupted") else None
        return result("failed", cause, error=f"empty visible response ({error})" if error else "empty visible response")

    decoded, first_other, scalar, error = _decode_strict(text, notes)
    outcome: Outcome = "strict"
    if decoded is None and first_other is None and "{" in text:
        if "too_deep" in notes:
            return result("failed", "constrained_deadlock", error=f"{_TOO_DEEP}: not decoded or repaired")
        decoded, error = _repair(text, notes)
        outcome = "repaired"
    if decoded is not None:
        if outcome == "repaired":
            notes.append("repaired")
        if n_calls:
            notes.append("tool_calls_ignored")  # unusable calls, but the text is a plan
        return result(outcome, value=decoded[1], plan=decoded[0])
    if tool_error:
        return result("failed", "unusable_tool_calls", error=tool_error)
    if refused:
        return result("failed", "safety_filtered", error=f"the model refused: {refused[:200]}")
    if first_other is not None:
        return result("failed", "schema_mismatch", value=first_other, error=error)
    if "too_deep" in notes:
        return result("failed", "constrained_deadlock", error=error or _TOO_DEEP)
    if scalar is not _NOTHING:
        return result("failed", "bare_scalar", value=scalar, error=_SCALAR)
    return result("failed", cause_for_unparseable(finish, json_shaped(text)), error=error or "no JSON object found")


def _decode_strict(text: str, notes: list[str]) -> tuple[tuple[PlanOutput, dict] | None, Any, Any, str | None]:
    """Try every strict route. Returns (plan and its dict, first non-plan object or array, a
    candidate that was one whole JSON scalar or ``_NOTHING``, last error).

    A value nested too deeply (the decoder's RecursionError, or more than ``MAX_JSON_DEPTH``
    levels) is neither a plan nor a first non-plan value; it adds the note ``too_deep``.
    """
    first_other: Any = None
    scalar: Any = _NOTHING
    error: str | None = None
    candidates = fenced_bodies(text) if "```" in text else []
    if candidates:
        notes.append("fenced")
    # a scalar is the answer only when it is the whole text, or the body of a fence that is the whole text
    whole = (candidates[0],) if len(candidates) == 1 and text.startswith("```") else ()
    candidates.append(text)

    def too_deep() -> str:
        if "too_deep" not in notes:
            notes.append("too_deep")
        return _TOO_DEEP

    for cand in candidates:
        if cand[0] in _JSON_START or cand in ("true", "false", "null"):
            try:
                value = json.loads(cand)
            except RecursionError:
                error = too_deep()
            except ValueError as exc:
                error = f"invalid JSON: {exc}"
            else:
                if deeper_than(value, MAX_JSON_DEPTH, cand):
                    error = too_deep()
                else:
                    value = without_lone_surrogates(value, cand, notes)
                    plan = _as_plan(value)
                    if plan is not None:
                        return (plan, value), None, _NOTHING, None
                    if not isinstance(value, (dict, list)):
                        if scalar is _NOTHING and (cand is text or cand in whole):
                            scalar = value
                    elif first_other is None:
                        first_other = value
                    error = _NOT_A_PLAN
        # The first complete value at each top-level '{', tolerating prose around it.
        start = cand.find("{")
        tries = 0
        while start != -1 and tries < _MAX_OBJECTS:
            tries += 1
            try:
                value, end = _DECODER.raw_decode(cand, start)
            except (ValueError, RecursionError) as exc:
                error = too_deep() if isinstance(exc, RecursionError) else f"invalid JSON: {exc}"
                end = balanced_end(cand, start)
                if end == -1:
                    break
            else:
                if deeper_than(value, MAX_JSON_DEPTH, cand[start:end]):
                    error = too_deep()
                else:
                    value = without_lone_surrogates(value, cand[start:end], notes)
                    plan = _as_plan(value)
                    if plan is not None:
                        if start > 0 or cand[end:].strip():
                            notes.append("prose")
                        return (plan, value), None, _NOTHING, None
                    if first_other is None:
                        first_other = value
                    error = _NOT_A_PLAN
            start = cand.find("{", end)
    return None, first_other, scalar, error


def _repair(text: str, notes: list[str]) -> tuple[tuple[PlanOutput, dict] | None, str | None]:
    import json_repair  # deferred: only the rare malformed completion needs it

    start = text.find("{")
    cand = text[start:] if start != -1 else text
    if len(cand) > _MAX_REPAIR_CHARS:
        return None, f"not valid JSON, and {len(cand)} characters is too long to repair"
    if nesting_exceeds(cand, MAX_JSON_DEPTH):
        # json_repair backtracks for seconds over deep brackets before giving up
        notes.append("too_deep")
        return None, f"not valid JSON, and {_TOO_DEEP}: not repaired"
    try:
        value = json_repair.repair_json(cand, return_objects=True)
    except Exception as exc:  # noqa: BLE001 - json_repair's failure modes are not typed
        return None, f"repair failed: {type(exc).__name__}"
    if deeper_than(value, MAX_JSON_DEPTH):
        notes.append("too_deep")
        return None, f"{_TOO_DEEP} after repair"
    value = without_lone_surrogates(value, cand, notes)
    plan = _as_plan(value)
    if plan is None:
        return None, "not valid JSON, and repair did not yield a plan"
    return (plan, value), None


def _as_plan(value: Any) -> PlanOutput | None:
    coerced = coerce_plan_dict(value)
    if coerced is None:
        return None
    try:
        return PlanOutput.model_validate(coerced)
    except (ValidationError, RecursionError, ValueError):
        return None
