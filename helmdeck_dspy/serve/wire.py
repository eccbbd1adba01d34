"""The MCP tools' argument and result shapes, and the projection of a ``PlanResult`` onto them.

``helmdeck.plan``'s result is the wire shape of helmdeck's planner guide: ``steps`` (order, tool,
args, rationale), ``rewritten_prompt``, ``complexity``, ``reasoning``, ``model``,
``prompt_variant_used``, ``more_steps_likely`` (present only when true) and ``compaction``
(present only when the catalog was trimmed), and beyond it ``program``: which compiled program
planned. A call that yields no plan is a tool error whose
structured content is a :class:`ToolErrorWire`. Each request model is the one definition of its
tool's input: the published JSON schema and the validation both come from it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from helmdeck_dspy.domain import MAX_MODEL_ID_CHARS, MODEL_ID_PATTERN, Complexity, Variant
from helmdeck_dspy.engines.lm_spec import lm_kind
from helmdeck_dspy.errors import ArgumentError, validation_message
from helmdeck_dspy.local.endpoint import SPEC_PREFIX as LOCAL_PREFIX
from helmdeck_dspy.planning.execution import OUTPUT_CHARS
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.program.store import ProgramRef
from helmdeck_dspy.signatures.types import ExecutedStep

M = TypeVar("M", bound=BaseModel)


class PriorStep(BaseModel):
    """A step the client already ran in a single_pick loop, with what it returned."""

    model_config = ConfigDict(extra="forbid")

    order: int = Field(ge=1, description="1-based position of the step in the loop.")
    tool: str = Field(min_length=1, description="The tool the client called.")
    args: dict[str, Any] = Field(default_factory=dict, description="The arguments it was called with.")
    output: Any = Field(default="", description=f"What it returned (text or JSON); the first {OUTPUT_CHARS} "
                                                 "characters reach the planner.")

    def executed(self) -> ExecutedStep:
        text = self.output if isinstance(self.output, str) else json.dumps(self.output, ensure_ascii=False)
        return ExecutedStep(order=self.order, tool=self.tool, args=self.args, output=text[:OUTPUT_CHARS])


MAX_TOOLS = 256
"""The most tools a call's ``tools`` argument may hold."""
MAX_TOOLS_BYTES = 512 * 1024
"""The largest ``tools`` argument, measured as compact JSON (UTF-8)."""
TOOLS_DESCRIPTION = (
    "Optional: your own tools, to plan over instead of the server's catalog (helmdeck://routing-guide). "
    "An MCP tools/list array ({name, description, inputSchema, annotations}) or an OpenAI tools array "
    f"({{type: 'function', function: {{name, description, parameters}}}}); at most {MAX_TOOLS} tools and "
    f"{MAX_TOOLS_BYTES // 1024} KiB as JSON. Send the same list each call: it is read once and cached.")


def tools_json(tools: list[dict[str, Any]]) -> str:
    """A tool list as canonical JSON (sorted keys, compact): what its size and its cache key are taken on."""
    return json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tools_digest(tools: list[dict[str, Any]]) -> str:
    """The content hash a tool list's catalog is cached under: equal lists, however their keys are
    ordered, share it."""
    return hashlib.sha256(tools_json(tools).encode("utf-8")).hexdigest()


MODEL_ID_CHARS = re.compile(MODEL_ID_PATTERN)
"""What a ``model`` may hold (:data:`~helmdeck_dspy.domain.MODEL_ID_PATTERN`, as on the command line):
checked before any lookup, so no caller's id is stored or logged otherwise."""


class _IntentForModel(BaseModel):
    """What both tools take: a request and the model id it is for (trimmed, never empty, never an
    LM spec: the server's LM is its operator's choice, not a caller's), and optionally the
    caller's own tools (bounded here; read into a catalog by the service, which caches it)."""

    model_config = ConfigDict(extra="forbid")

    user_intent: str
    model: str
    tools: list[dict[str, Any]] | None = Field(default=None, description=TOOLS_DESCRIPTION)

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_as_list(cls, value: Any) -> Any:
        """JSON text decoded (some clients send lists as text); a ``{"tools": [...]}`` result unwrapped."""
        if isinstance(value, str):
            if len(value) > MAX_TOOLS_BYTES:
                raise PydanticCustomError("too_large", f"at most {MAX_TOOLS_BYTES} bytes of JSON")
            try:
                value = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                raise PydanticCustomError("json", "expects a list of tools (got text that is not JSON)") from None
        if isinstance(value, dict) and isinstance(value.get("tools"), list):
            value = value["tools"]
        if isinstance(value, list) and len(value) > MAX_TOOLS:
            raise PydanticCustomError("too_many", f"at most {MAX_TOOLS} tools (got {len(value)})")
        return value

    @field_validator("tools")
    @classmethod
    def _tools_bounded(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        if not value:
            raise PydanticCustomError("empty", "holds no tools (leave it out to plan over the server's catalog)")
        try:
            size = len(tools_json(value).encode("utf-8"))
        except (ValueError, RecursionError):  # NaN is fine for json; a nesting past the recursion limit is not
            raise PydanticCustomError("depth", "is nested too deeply") from None
        if size > MAX_TOOLS_BYTES:
            raise PydanticCustomError("too_large", f"at most {MAX_TOOLS_BYTES} bytes as JSON (got {size})")
        return value

    @field_validator("user_intent", "model", mode="before")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            if not value:
                raise PydanticCustomError("empty", "must not be empty")
        return value

    @field_validator("model")
    @classmethod
    def _not_an_lm_spec(cls, value: str) -> str:
        if len(value) > MAX_MODEL_ID_CHARS or not MODEL_ID_CHARS.fullmatch(value):
            raise PydanticCustomError(
                "model_id", f"expects a model id of at most {MAX_MODEL_ID_CHARS} characters: letters, digits and "
                "._:/@+- (no spaces or control characters)")
        if lm_kind(value) != "live" or value.startswith(LOCAL_PREFIX):
            raise PydanticCustomError(
                "lm_spec", "expects a provider/model id; LM specs (replay:, sim:, local:) are chosen with serve --lm")
        return value


class PlanRequest(_IntentForModel):
    """``helmdeck.plan``'s arguments."""

    model_config = ConfigDict(title="helmdeck.plan arguments")

    user_intent: str = Field(description="The user's request in their own words.")
    model: str = Field(description="provider/model id to plan for: it picks the budget, tier and prompt variant "
                                   "(see helmdeck://context-budgets and helmdeck://models).")
    context: str | dict[str, Any] | None = Field(
        default=None, description="Optional material for the request (a paste, structured data), shown to the "
                                  "planner as context.")
    max_tokens: int | None = Field(default=None, ge=1, le=200_000,
                                   description="Output cap for this call instead of the budget's.")
    prior_steps: list[PriorStep] = Field(
        default_factory=list, description="single_pick loop: the steps already run, in order, with their outputs. "
                                          "Re-call with them until more_steps_likely is absent.")

    @field_validator("prior_steps", mode="before")
    @classmethod
    def _steps_from_json_text(cls, value: Any) -> Any:
        """Some clients send a list argument as JSON text; decode it."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise PydanticCustomError("json", "expects a list of steps (got text that is not JSON)") from None
        return value

    def context_text(self) -> str | None:
        """The context as the planner takes it: text as given, structured data as indented JSON."""
        if self.context is None or isinstance(self.context, str):
            return self.context or None
        return json.dumps(self.context, indent=2, ensure_ascii=False)

    def executed_steps(self) -> list[ExecutedStep]:
        return [s.executed() for s in self.prior_steps]



class RouteRequest(_IntentForModel):
    """``helmdeck.route``'s arguments."""

    model_config = ConfigDict(title="helmdeck.route arguments")

    user_intent: str = Field(description="A single-intent request in the user's own words.")
    model: str = Field(description="provider/model id whose budget fits the catalog ranked for the request.")


def parse_arguments(request_model: type[M], arguments: Any) -> M:
    """Validate a tool's arguments against its request model.

    Raises:
        ArgumentError: ``invalid argument <name>: <problem>`` for the first bad argument.
    """
    try:
        return request_model.model_validate(arguments)
    except ValidationError as exc:
        raise ArgumentError("invalid argument " + validation_message(
            exc, subject="arguments", with_input=True, count_more=True, missing="required")) from exc


def argument_of(exc: ArgumentError) -> str | None:
    """The argument an :func:`parse_arguments` error (or an error naming its ``argument``) is about, if any."""
    named = getattr(exc, "argument", None)
    if named:
        return str(named)
    cause = exc.__cause__
    if isinstance(cause, ValidationError) and cause.errors() and cause.errors()[0]["loc"]:
        return str(cause.errors()[0]["loc"][0])
    return None


# ----------------------------------------------------------------------------- results


class StepWire(BaseModel):
    order: int = Field(description="1-based; run the steps in this order.")
    tool: str = Field(description="A catalog pack name, 'helmdeck__pipeline-run' (args.id names the pipeline), "
                                  "or 'unknown' for a step the guards demoted: never dispatch those.")
    args: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""


class CompactionWire(BaseModel):
    before_bytes: int
    after_bytes: int
    dropped: list[str] = Field(description="The trim steps and selection marks that fitted the catalog.")


class PlanWire(BaseModel):
    """``helmdeck.plan``'s result."""

    model_config = ConfigDict(title="helmdeck.plan result")

    steps: list[StepWire]
    rewritten_prompt: str = Field(description="The steps as numbered instructions ('' when there are none).")
    complexity: Complexity
    reasoning: str = ""
    model: str = Field(description="The model id the plan was made for (echoed).")
    prompt_variant_used: Variant
    more_steps_likely: bool | None = Field(
        default=None, description="Present (true) only on single_pick when more steps are expected: run the step, "
                                  "then call helmdeck.plan again with prior_steps.")
    compaction: CompactionWire | None = Field(
        default=None, description="Present only when the catalog was trimmed to fit the model's budget.")
    program: ProgramRef | None = Field(
        default=None, description="The program that planned: kind (model: compiled for this model id; tier: its "
                                  "tier's; bare; file), its path and SHA-256, and the optimizer that made it.")

    def dump(self) -> dict[str, Any]:
        """The wire object: optional fields left out when unset (``more_steps_likely`` when false)."""
        out = {k: v for k, v in self.model_dump(mode="json", exclude={"program"}).items() if v is not None}
        if self.program is not None:
            out["program"] = self.program.stamp()
        return out


def plan_wire(result: PlanResult) -> PlanWire:
    """The wire shape of a successful plan."""
    compaction = result.compaction
    return PlanWire(
        steps=[StepWire(order=s.order, tool=s.tool, args=s.args, rationale=s.rationale) for s in result.steps],
        rewritten_prompt=result.rewritten_prompt,
        complexity=result.complexity,
        reasoning=result.reasoning,
        model=result.model,
        prompt_variant_used=result.prompt_variant_used,
        more_steps_likely=True if result.more_steps_likely else None,
        compaction=CompactionWire(**compaction.model_dump()) if compaction is not None else None,
        program=result.program,
    )


ErrorKind = Literal["invalid_argument", "plan_failed", "step_cap", "run_error"]


class ToolErrorWire(BaseModel):
    """The structured content of a tool result with ``isError``."""

    error: ErrorKind
    message: str = Field(description="One line saying what went wrong.")
    cause: str | None = Field(default=None, description="plan_failed: the failure cause (length_truncated, ...).")
    finish_reason: str | None = None
    argument: str | None = Field(default=None, description="invalid_argument: the argument at fault.")
    model: str | None = None
    prompt_variant_used: str | None = None

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def failure_wire(result: PlanResult) -> ToolErrorWire:
    """The error shape of a plan call that produced no plan."""
    return ToolErrorWire(
        error="plan_failed", cause=result.failure_cause, finish_reason=result.finish_reason,
        message=" ".join((result.error or f"no plan: {result.failure_cause}").split()),
        model=result.model, prompt_variant_used=result.prompt_variant_used,
    )


def plan_text(wire: PlanWire, *, tier: str, step_cap: int | None = None) -> str:
    """The text rendering of a plan, for clients that read content rather than structured content.

    Args:
        wire: The plan.
        tier: The model's tier.
        step_cap: Set when this plan ends the loop at the server's step cap.
    """
    head = f"{wire.complexity} plan for {wire.model} (tier {tier}, {wire.prompt_variant_used})"
    if wire.more_steps_likely:
        head += ": more steps likely; run this step, then call helmdeck.plan again with prior_steps"
    lines = [head]
    if wire.compaction is not None:
        lines.append(f"catalog trimmed {wire.compaction.before_bytes} -> {wire.compaction.after_bytes} bytes "
                     f"({', '.join(wire.compaction.dropped)})")
    lines.append(wire.rewritten_prompt or "(no steps: nothing in the catalog fits this request)")
    if step_cap is not None:
        lines.append(f"step cap reached: this loop has run its {step_cap} steps; stop here")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- route


class RouteChoice(BaseModel):
    kind: Literal["pack", "pipeline"]
    id: str = Field(description="The pack name or pipeline id.")
    tool: str = Field(description="The tool to call: the pack name, or 'helmdeck__pipeline-run' for a pipeline.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments known in advance (a pipeline's id).")
    score: float = Field(description="The ranker's score for the request.")
    why: str = Field(description="The request terms the entry matches, and what it does.")


class GapWarning(BaseModel):
    missing_capability: str = Field(description="What the catalog could not match.")
    message: str


class RouteWire(BaseModel):
    """``helmdeck.route``'s result."""

    model_config = ConfigDict(title="helmdeck.route result")

    recommendation: RouteChoice | None = Field(description="The one entry to call; null when nothing matches.")
    alternatives: list[RouteChoice] = Field(description="Runners-up with a non-zero score, best first.")
    confidence: float = Field(ge=0, le=1, description="(top - runner-up) / top of the ranking scores; 0 with no match.")
    confident: bool = Field(description="Whether the margin clears the threshold at which the planner trusts "
                                        "a ranking.")
    model: str
    gap_warning: GapWarning | None = Field(default=None, description="Present only when nothing in the catalog fits.")

    def dump(self) -> dict[str, Any]:
        out = self.model_dump(mode="json")
        if out["gap_warning"] is None:
            del out["gap_warning"]
        return out


def route_text(wire: RouteWire) -> str:
    """The text rendering of a route answer."""
    if wire.recommendation is None:
        return f"no catalog entry matches: {wire.gap_warning.message if wire.gap_warning else ''}".strip()
    rec = wire.recommendation
    line = f"call {rec.tool}" + (f" with args {json.dumps(rec.args)}" if rec.args else "")
    line += f" ({rec.kind} {rec.id}; confidence {wire.confidence:.2f}): {rec.why}"
    if wire.alternatives:
        line += "\nalternatives: " + ", ".join(a.id for a in wire.alternatives)
    return line
