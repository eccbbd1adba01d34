"""Simulator profiles: how a simulated model of some kind plans and fails (``eval/profiles/*.toml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir


class Planning(BaseModel):
    """Plan-quality noise (rates per planned step), reduced by demos in the prompt."""

    model_config = ConfigDict(extra="forbid")

    wrong_tool_rate: float = Field(default=0.0, ge=0, le=1, description="Take the runner-up entry instead of the best.")
    missing_step_rate: float = Field(default=0.0, ge=0, le=1, description="Drop a step of a multi-step plan.")
    invented_tool_rate: float = Field(default=0.0, ge=0, le=1, description="Name a tool that is not in the catalog.")
    self_call_rate: float = Field(
        default=0.0, ge=0, le=1, description="Plan a call to the planner itself (whether or not the catalog lists it)."
    )
    pipeline_blindness: float = Field(
        default=0.0, ge=0, le=1, description="Decompose into packs although a pipeline covers the request."
    )
    demo_gain: float = Field(default=0.0, ge=0, le=1, description="Share of the error rates removed by 4 or more demos.")


class Shape(BaseModel):
    """Output-shape behaviour: reasoning, verbosity, truncation, and the odd broken reply."""

    model_config = ConfigDict(extra="forbid")

    reasoning: Literal["none", "field", "inline"] = "none"
    reasoning_base_tokens: float = Field(default=0.0, ge=0)
    reasoning_per_step_tokens: float = Field(default=0.0, ge=0, description="Grows with the steps the prompt asks for.")
    reasoning_sigma: float = Field(default=0.3, ge=0, description="Log-normal spread of reasoning length.")
    reasoning_counts_toward_cap: bool = Field(
        default=False, description="max_tokens covers reasoning too (always true for inline reasoning)."
    )
    leak_rate: float = Field(default=0.0, ge=0, le=1, description="Reasoning, then almost nothing visible.")
    empty_rate: float = Field(default=0.0, ge=0, le=1, description="An empty 200 with no finish_reason.")
    content_filter_rate: float = Field(default=0.0, ge=0, le=1)
    fence_rate: float = Field(default=0.0, ge=0, le=1, description="Wrap the JSON in a code fence.")
    prose_rate: float = Field(default=0.0, ge=0, le=1, description="Add a sentence after the JSON.")
    malformed_rate: float = Field(default=0.0, ge=0, le=1, description="Leave a trailing comma before the last brace (needs repair).")
    verbose_rate: float = Field(default=0.0, ge=0, le=1, description="Write a long answer: extra words in its reasoning text.")
    verbose_tokens_per_step: float = Field(default=0.0, ge=0, description="Extra visible tokens per step when verbose.")
    verbose_sigma: float = Field(default=0.3, ge=0, description="Log-normal spread of the verbose extra.")
    rationale_words: int = Field(default=12, ge=1)
    strict_json_obeys: bool = Field(default=True, description="With response_format json_object, no fences or prose.")
    # What small real models do that the knobs above cannot say (fitted profiles, fitting/fit.py).
    # Each defaults to 0 (or 1 for the scale), and the simulator draws nothing for it then, so a
    # profile that leaves them alone answers exactly as before they existed.
    empty_stop_rate: float = Field(default=0.0, ge=0, le=1, description="An empty answer that ends normally (finish_reason stop).")
    no_json_rate: float = Field(default=0.0, ge=0, le=1, description="A whole answer in prose, with no JSON in it.")
    no_json_tokens: float = Field(default=200.0, gt=0, description="Median completion tokens of a prose answer (cut at the cap).")
    no_json_sigma: float = Field(default=0.5, ge=0, description="Log-normal spread of a prose answer's length.")
    not_plan_rate: float = Field(default=0.0, ge=0, le=1, description="Valid JSON that is not a plan (one step object, no steps list).")
    garbled_rate: float = Field(default=0.0, ge=0, le=1, description="JSON-shaped text that neither decodes nor repairs into a plan.")
    runaway_rate: float = Field(default=0.0, ge=0, le=1, description="The plan, then text that runs on until the cap cuts it.")
    completion_token_scale: float = Field(
        default=1.0, gt=0, description="Completion tokens reported per counted token of the simulated text (the model's "
        "tokenizer and terseness against the stand-in's); the cap applies to the scaled count.")

    @model_validator(mode="after")
    def _one_failure_roll(self) -> Shape:
        total = sum(getattr(self, name) for name in FAILURE_ROLL_RATES)
        if total > 1 + 1e-9:
            raise ValueError(f"the failure rates ({', '.join(FAILURE_ROLL_RATES)}) add up to {total:.3f}, more than 1")
        return self


FAILURE_ROLL_RATES = ("empty_rate", "content_filter_rate", "leak_rate", "empty_stop_rate", "no_json_rate",
                      "not_plan_rate", "garbled_rate", "runaway_rate")
"""Shape rates decided by one draw per answer: at most one of them happens to an answer."""


class Timing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ttft_ms: float = Field(default=500.0, ge=0, description="Time to first token.")
    ttft_sigma: float = Field(default=0.2, ge=0, description="Log-normal spread of the time to first token.")
    tokens_per_s: float = Field(default=50.0, gt=0)
    tokens_per_s_sigma: float = Field(default=0.2, ge=0)


class VariantOverride(BaseModel):
    """Values that differ for one prompt variant (keys as in ``[planning]``, ``[shape]``, ``[timing]``)."""

    model_config = ConfigDict(extra="forbid")

    planning: dict[str, Any] = Field(default_factory=dict)
    shape: dict[str, Any] = Field(default_factory=dict)
    timing: dict[str, Any] = Field(default_factory=dict)


class FitSource(BaseModel):
    """The real trace set a fitted profile was fitted to (``helmdeck-dspy traces fit``)."""

    model_config = ConfigDict(extra="forbid")

    traces: str = Field(description="The trace file, as given to the fit (relative to the repository root when inside it).")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    model: str = Field(description="The model whose plan records were fitted.")
    records: dict[str, int] = Field(description="Plan records fitted, per prompt variant.")
    excluded: int = Field(default=0, ge=0, description="Plan records left out: transport_error or rate_limited (the call failed, not the model; timeouts are kept as likely_timeout).")
    max_tokens: int | None = Field(None, description="The output cap the records were recorded at.")
    fitted_on: str = Field(description="Date of the fit (UTC, YYYY-MM-DD).")


class SimProfile(BaseModel):
    """A simulated model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$", description="Lowercase letters, digits, dots and dashes.")
    model: str = Field(description="The model id it stands for (its budget is looked up by this id).")
    description: str = ""
    planning: Planning = Field(default_factory=lambda: Planning())
    shape: Shape = Field(default_factory=lambda: Shape())
    timing: Timing = Field(default_factory=lambda: Timing())
    variants: dict[Literal["full_steps", "single_pick"], VariantOverride] = Field(
        default_factory=dict, description="Values that differ for one prompt variant.")
    fitted_to: FitSource | None = Field(default=None, description="The real trace set a fitted profile comes from.")

    @model_validator(mode="after")
    def _overrides_are_valid(self) -> SimProfile:
        for variant in self.variants:
            self.planning_for(variant)
            self.shape_for(variant)
            self.timing_for(variant)
        return self

    def planning_for(self, variant: str) -> Planning:
        """The planning values for ``variant`` (``[planning]`` with the variant's overrides)."""
        over = self.variants.get(variant)  # type: ignore[call-overload]
        if over is None or not over.planning:
            return self.planning
        return Planning.model_validate({**self.planning.model_dump(), **over.planning})

    def shape_for(self, variant: str) -> Shape:
        """The shape values for ``variant`` (``[shape]`` with the variant's overrides)."""
        over = self.variants.get(variant)  # type: ignore[call-overload]
        if over is None or not over.shape:
            return self.shape
        return Shape.model_validate({**self.shape.model_dump(), **over.shape})

    def timing_for(self, variant: str) -> Timing:
        """The timing values for ``variant`` (``[timing]`` with the variant's overrides)."""
        over = self.variants.get(variant)  # type: ignore[call-overload]
        if over is None or not over.timing:
            return self.timing
        return Timing.model_validate({**self.timing.model_dump(), **over.timing})

    def digest_exclude(self) -> dict[str, Any]:
        """Fields added after the first profiles, left out of the content hash while they hold
        their defaults, so a profile that does not use them keeps its simulator LM name."""
        out: dict[str, Any] = {}
        for part, names in LATER_FIELDS.items():
            obj = getattr(self, part)
            unset = {n for n in names if getattr(obj, n) == type(obj).model_fields[n].default}
            if unset:
                out[part] = unset
        if not self.variants:
            out["variants"] = True
        if self.fitted_to is None:
            out["fitted_to"] = True
        return out


LATER_FIELDS = {
    "shape": ("empty_stop_rate", "no_json_rate", "no_json_tokens", "no_json_sigma", "not_plan_rate", "garbled_rate",
              "runaway_rate", "completion_token_scale"),
    "timing": ("ttft_sigma",),
}


def profiles_dir() -> Path:
    return bundled_dir() / "profiles"


def list_profiles(*, fitted: bool = False) -> list[str]:
    """Names of the bundled profiles: the hand-written ones (what ``all`` means), or with ``fitted``
    the ones fitted to a real trace set (files with a ``[fitted_to]`` table; used by name)."""
    return sorted(p.stem for p in profiles_dir().glob("*.toml") if _is_fitted(p) == fitted)


def _is_fitted(path: Path) -> bool:
    try:
        return "fitted_to" in read_toml(path)
    except DataFileError:
        return False  # a broken file is reported when it is loaded


def load_profile(name_or_path: str | Path) -> SimProfile:
    """A bundled profile by name, or a profile TOML file by path."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = profiles_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            known = list_profiles() + list_profiles(fitted=True)
            raise DataFileError(str(path), f"no simulator profile {name_or_path!r}; bundled: {', '.join(known)}")
    data = read_toml(path)
    try:
        return SimProfile.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise DataFileError(str(path), f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}") from None
