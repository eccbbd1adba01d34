"""Post-model guards: what the planner does to a decoded plan before anyone runs it.

Mirrors helmdeck's ``normalizePlanSteps``: steps are renumbered 1..n in the order given; a step
with no tool, a call to the planner itself, a pipeline run without a known pipeline id, or a tool
that is not in the catalog is *demoted* to the tool ``unknown`` (its args kept, its rationale
prefixed with the reason). Complexity is derived from the resulting shape, never taken from the
model, and ``rewritten_prompt`` is rendered from the steps.

With ``map_names`` (on in planners since the ``plain`` strategy, and stamped on their records as
:data:`MAP_NAMES_KEY`), a tool name outside the catalog is first mapped to the one catalog name it
nearly is (:func:`near_miss`: the same letters and digits ignoring case and separators, with or
without a namespace the model put before it), and only then demoted.
"""

from __future__ import annotations

import json
import re
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
from helmdeck_dspy.planning.grounding import Grounding, ground_args
from helmdeck_dspy.signatures.types import PlanStep

REASON_NO_TOOL = "step had no tool id"
REASON_SELF_CALL = "helmdeck.plan cannot call itself; rejected"
REASON_BAD_PIPELINE = "helmdeck__pipeline-run args.id missing or not a pipeline in the catalog"
MAP_NAMES_KEY = "map_names"
"""The ``run`` key of a trace record whose planner mapped near-miss tool names (re-scoring does the same)."""


def _letters(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def near_miss(name: str, catalog_ids: Collection[str]) -> str | None:
    """The one catalog id that ``name`` nearly is: the same letters and digits ignoring case and
    separators (``Get-Weather`` → ``get_weather``, ``blog__publish`` → ``blog.publish``), or so once a
    namespace the model put before it is dropped (``functions.get_weather`` → ``get_weather``); else
    None (none, or more than one)."""
    ids = [c for c in catalog_ids if c not in PLANNER_TOOL_IDS]
    for wanted in (_letters(name), _letters(name.rsplit(".", 1)[-1])):  # as written; without a namespace
        found = [c for c in ids if wanted and _letters(c) == wanted]
        if len(found) == 1:
            return found[0]
    return None


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
    schemas: Mapping[str, dict[str, Any]] | None = None, map_names: bool = False, ground: Grounding | None = None,
) -> list[GuardedStep]:
    """Renumber and validate ``steps`` against the full catalog's ids; with ``schemas`` (tool id →
    argument schema), check and coerce each kept step's args (:func:`check_arguments`); with
    ``map_names``, a near-miss name is mapped to its catalog id before anything is demoted; with
    ``ground``, path arguments are grounded in the request (:func:`ground_args`)."""
    out = []
    for i, step in enumerate(steps, start=1):
        rationale = step.rationale.strip()
        reason = _reason(step, catalog_ids, pipeline_ids)
        mapped = near_miss(step.tool, catalog_ids) if reason and map_names and step.tool.strip() else None
        if mapped is not None:
            step = step.model_copy(update={"tool": mapped})
            reason = _reason(step, catalog_ids, pipeline_ids)
        if reason is None:
            tool = step.tool.strip()
            args, notes = check_arguments(step.args, schemas.get(tool)) if schemas else (step.args, [])
            if ground is not None:
                args, filled = ground_args(args, ground)
                notes = [*notes, *filled]
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
