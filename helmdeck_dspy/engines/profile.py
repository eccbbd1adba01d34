"""Simulator profiles: how a simulated model of some kind plans and fails (``eval/profiles/*.toml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir


class Planning(BaseModel):
    """Plan-quality noise (rates per planned step), reduced by demos in the prompt."""

    model_config = ConfigDict(extra="forbid")

    wrong_tool_rate: float = Field(0.0, ge=0, le=1, description="Take the runner-up entry instead of the best.")
    missing_step_rate: float = Field(0.0, ge=0, le=1, description="Drop a step of a multi-step plan.")
    invented_tool_rate: float = Field(0.0, ge=0, le=1, description="Name a tool that is not in the catalog.")
    self_call_rate: float = Field(
        0.0, ge=0, le=1, description="Plan a call to the planner itself (whether or not the catalog lists it)."
    )
    pipeline_blindness: float = Field(
        0.0, ge=0, le=1, description="Decompose into packs although a pipeline covers the request."
    )
    demo_gain: float = Field(0.0, ge=0, le=1, description="Share of the error rates removed by 4 or more demos.")


class Shape(BaseModel):
    """Output-shape behaviour: reasoning, verbosity, truncation, and the odd broken reply."""

    model_config = ConfigDict(extra="forbid")

    reasoning: Literal["none", "field", "inline"] = "none"
    reasoning_base_tokens: float = Field(0.0, ge=0)
    reasoning_per_step_tokens: float = Field(0.0, ge=0, description="Grows with the steps the prompt asks for.")
    reasoning_sigma: float = Field(0.3, ge=0, description="Log-normal spread of reasoning length.")
    reasoning_counts_toward_cap: bool = Field(
        False, description="max_tokens covers reasoning too (always true for inline reasoning)."
    )
    leak_rate: float = Field(0.0, ge=0, le=1, description="Reasoning, then almost nothing visible.")
    empty_rate: float = Field(0.0, ge=0, le=1, description="An empty 200 with no finish_reason.")
    content_filter_rate: float = Field(0.0, ge=0, le=1)
    fence_rate: float = Field(0.0, ge=0, le=1, description="Wrap the JSON in a code fence.")
    prose_rate: float = Field(0.0, ge=0, le=1, description="Add a sentence after the JSON.")
    malformed_rate: float = Field(0.0, ge=0, le=1, description="Leave a trailing comma before the last brace (needs repair).")
    verbose_rate: float = Field(0.0, ge=0, le=1, description="Write long rationales and reasoning text.")
    verbose_tokens_per_step: float = Field(0.0, ge=0, description="Extra visible tokens per step when verbose.")
    verbose_sigma: float = Field(0.3, ge=0, description="Log-normal spread of the verbose extra.")
    rationale_words: int = Field(12, ge=1)
    strict_json_obeys: bool = Field(True, description="With response_format json_object, no fences or prose.")


class Timing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ttft_ms: float = Field(500.0, ge=0, description="Time to first token.")
    tokens_per_s: float = Field(50.0, gt=0)
    tokens_per_s_sigma: float = Field(0.2, ge=0)


class SimProfile(BaseModel):
    """A simulated model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    model: str = Field(description="The model id it stands for (its budget is looked up by this id).")
    description: str = ""
    planning: Planning = Field(default_factory=Planning)
    shape: Shape = Field(default_factory=Shape)
    timing: Timing = Field(default_factory=Timing)


def profiles_dir() -> Path:
    return bundled_dir() / "profiles"


def list_profiles() -> list[str]:
    return sorted(p.stem for p in profiles_dir().glob("*.toml"))


def load_profile(name_or_path: str | Path) -> SimProfile:
    """A bundled profile by name, or a profile TOML file by path."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = profiles_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            raise DataFileError(str(path), f"no simulator profile {name_or_path!r}; bundled: {', '.join(list_profiles())}")
    data = read_toml(path)
    try:
        return SimProfile.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise DataFileError(str(path), f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}") from None
