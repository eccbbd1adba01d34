"""Post-model guards: what the planner does to a decoded plan before anyone runs it.

Mirrors helmdeck's ``normalizePlanSteps``: steps are renumbered 1..n in the order given; a step
with no tool, a call to the planner itself, a pipeline run without a known pipeline id, or a tool
that is not in the catalog is *demoted* to the tool ``unknown`` (its args kept, its rationale
prefixed with the reason). Complexity is derived from the resulting shape, never taken from the
model, and ``rewritten_prompt`` is rendered from the steps.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, Field

from helmdeck_dspy.domain import (
    PIPELINE_RUN_TOOL,
    PLANNER_TOOL_IDS,
    UNKNOWN_TOOL,
    Complexity,
    complexity_for,
)
from helmdeck_dspy.planning.arguments import check_arguments
from helmdeck_dspy.signatures.types import PlanStep

REASON_NO_TOOL = "step had no tool id"
REASON_SELF_CALL = "helmdeck.plan cannot call itself; rejected"
REASON_BAD_PIPELINE = "helmdeck__pipeline-run args.id missing or not a pipeline in the catalog"


class GuardedStep(BaseModel):
    """A plan step after the guards."""

    order: int
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""
    demoted: bool = Field(default=False, description="The model's tool was replaced by 'unknown'.")
    model_tool: str | None = Field(default=None, description="The tool the model named, when demoted.")
    arg_notes: list[str] = Field(
        default_factory=list,
        description="What checking the args against the tool's schema did or found (coerced, dropped, missing, "
                    "enum, type: planning.arguments).",
    )


def _reason(step: PlanStep, catalog_ids: Collection[str], pipeline_ids: Collection[str]) -> str | None:
    tool = step.tool.strip()
    if not tool:
        return REASON_NO_TOOL
    if tool in PLANNER_TOOL_IDS:
        return REASON_SELF_CALL
    if tool == PIPELINE_RUN_TOOL:
        pid = step.args.get("id")
        return None if isinstance(pid, str) and pid.strip() in pipeline_ids else REASON_BAD_PIPELINE
    if tool in catalog_ids:
        return None
    return f'tool "{tool}" not in catalog'


def guard_steps(
    steps: list[PlanStep], catalog_ids: Collection[str], pipeline_ids: Collection[str],
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> list[GuardedStep]:
    """Renumber and validate ``steps`` against the full catalog's ids; with ``schemas`` (tool id →
    argument schema), check and coerce each kept step's args (:func:`check_arguments`)."""
    out = []
    for i, step in enumerate(steps, start=1):
        rationale = step.rationale.strip()
        reason = _reason(step, catalog_ids, pipeline_ids)
        if reason is None:
            tool = step.tool.strip()
            args, notes = check_arguments(step.args, schemas.get(tool)) if schemas else (step.args, [])
            out.append(GuardedStep(order=i, tool=tool, args=args, rationale=rationale, arg_notes=notes))
        else:
            said = f" — model said: {rationale}" if rationale else ""
            out.append(
                GuardedStep(
                    order=i, tool=UNKNOWN_TOOL, args=step.args, rationale=f"gap: {reason}{said}",
                    demoted=True, model_tool=step.tool,
                )
            )
    return out


def derive_complexity(steps: list[GuardedStep]) -> Complexity:
    """The complexity of guarded steps (see :func:`helmdeck_dspy.domain.complexity_for`)."""
    return complexity_for([s.tool for s in steps])


REWRITE_FOOTER = (
    "Execute the steps in order. Stop and surface any tool error to the user before proceeding to the next step."
)


def render_rewritten_prompt(intent: str, steps: list[GuardedStep]) -> str:
    """The plan as numbered instructions a small model can follow ("" when there are no steps)."""
    if not steps:
        return ""
    lines = [f"Plan for: {intent.strip()}"]
    for s in steps:
        line = f"Step {s.order}: call {s.tool}"
        if s.args:
            line += " with args " + json.dumps(s.args, ensure_ascii=False, separators=(",", ":"))
        if s.rationale:
            line += f" — {s.rationale}"
        lines.append(line)
    lines.append(REWRITE_FOOTER)
    return "\n".join(lines)
