"""The plan's output types: what a planning model must return.

These are plain pydantic models (no DSPy import), so the parser on the CLI's fast path can
validate a decoded completion against them. :mod:`helmdeck_dspy.signatures.plan` builds the DSPy
signature from them.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Complexity = Literal["single-action", "pipeline-direct", "pack-chain"]
COMPLEXITIES: tuple[str, ...] = Complexity.__args__  # type: ignore[attr-defined]

PIPELINE_RUN_TOOL = "helmdeck__pipeline-run"
"""The tool name a step uses to run a pipeline; ``args.id`` names the pipeline."""


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

    @field_validator("tool", "rationale", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("args", mode="before")
    @classmethod
    def _args(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, str):
            # Some models send args as a JSON string; accept it when it holds an object.
            try:
                decoded = json.loads(v) if v.strip() else {}
            except ValueError:
                return v
            return decoded if isinstance(decoded, dict) else v
        return v


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

    @field_validator("reasoning", "complexity", mode="before")
    @classmethod
    def _textish(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        return json.dumps(v) if isinstance(v, (dict, list)) else str(v)
