"""The plan's output types: what a planning model must return.

These are plain pydantic models (no DSPy import), so the parser on the CLI's fast path can
validate a decoded completion against them. :mod:`helmdeck_dspy.signatures.plan` builds the DSPy
signature from them.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.domain import COMPLEXITIES


class PlanStep(BaseModel):
    """One call in a plan."""

    model_config = ConfigDict(extra="ignore")

    order: int | None = Field(default=None, description="1-based position; renumbered by the guards.")
    tool: str = Field(default="", description="An exact catalog pack name, or helmdeck__pipeline-run.")
    args: dict[str, Any] = Field(
        default_factory=dict,
        description='Arguments for the call; for helmdeck__pipeline-run: {"id": <pipeline id>, "inputs": {...}}.',
    )
    rationale: str = Field(default="", description="One sentence: why this step, and what it hands on.")


class PlanOutput(BaseModel):
    """A decoded plan, before guards. ``steps`` is the only required key."""

    model_config = ConfigDict(extra="ignore")

    steps: list[PlanStep] = Field(description="The ordered calls (exactly one for single_pick).")
    complexity: str | None = Field(
        default=None,
        description="single-action | pipeline-direct | pack-chain (recomputed from the steps by the guards).",
        json_schema_extra={"enum": list(COMPLEXITIES)},
    )
    more_steps_likely: bool | None = Field(
        default=None, description="single_pick only: whether more calls will follow this one."
    )
    reasoning: str | None = Field(default=None, description="One to three sentences on the choice.")
    tool_fits: bool | None = Field(
        default=None,
        description="Constrained answers: whether any catalog tool fits the request; false means no steps "
        "(the guards keep none).",
    )


def coerce_plan_dict(value: Any) -> dict[str, Any] | None:
    """Loosen a decoded JSON value into the shape :class:`PlanOutput` validates, or None.

    Tolerated, as Go's decoder (helmdeck's) or common model habits would have it: top-level keys
    in any case; ``null`` tool, rationale or args; args sent as a JSON string holding an object;
    a non-string ``reasoning`` or ``complexity``. Doing this here keeps the models free of Python
    validators, so validating a clean plan stays fast.
    """
    if not isinstance(value, dict):
        return None
    if "steps" not in value:
        lowered = {k.lower(): v for k, v in value.items() if isinstance(k, str)}
        if "steps" not in lowered:
            return None
        value = lowered
    steps = value["steps"]
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        return None
    out = dict(value)
    fixed_steps = []
    for step in steps:
        if step.get("tool") is None or step.get("rationale") is None or not isinstance(step.get("args", {}), dict):
            step = dict(step)
            for key in ("tool", "rationale"):
                if key in step and step[key] is None:
                    step[key] = ""
            args = step.get("args")
            if args is None:
                step["args"] = {}
            elif isinstance(args, str):
                try:
                    decoded = json.loads(args) if args.strip() else {}
                except ValueError:
                    decoded = None
                if isinstance(decoded, dict):
                    step["args"] = decoded
        fixed_steps.append(step)
    out["steps"] = fixed_steps
    for key in ("reasoning", "complexity"):
        v = out.get(key)
        if v is not None and not isinstance(v, str):
            out[key] = json.dumps(v) if isinstance(v, (dict, list)) else str(v)
    return out


class ExecutedStep(BaseModel):
    """A step the caller already ran (single_pick loop), with what it returned."""

    order: int
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    output: str = Field(default="", description="A short summary of the result, or an artifact key.")
    error: bool = Field(default=False, description="The call failed (or was refused); ``output`` says why.")
