"""The JSON Schema a constrained plan answer is decoded under, built per request.

The schema follows the plan signature's output (``steps``, and ``more_steps_likely`` for
single_pick) over the *selected* catalog, so a model decoding under it cannot name a tool outside
that catalog:

- a step is one branch of an ``anyOf``, one branch per tool: ``tool`` is that tool's id as a
  ``const`` and ``args`` is the tool's own argument schema when the catalog entry has one (its
  required arguments, types and enums then hold by construction), else any object;
- a pipeline run is the branch whose ``tool`` is ``helmdeck__pipeline-run`` and whose ``args.id``
  is an enum of the selected pipelines, or with ``pipelines_as_tools`` one branch per pipeline
  whose ``tool`` is its id (a bare pipeline id is a valid step, as upstream);
- by default the answer opens with ``tool_fits``, a boolean: whether any catalog tool fits the
  request at all, an explicit decision before any step (the guards keep no steps when it is
  false). With ``fit_last`` the decision closes the answer instead: a check on the steps the
  model has just chosen. Without it (``fit_decision=False``) an empty ``steps`` list is the only way to say no,
  as in the plain prompt's ``[]``; docs/results/bfcl-levers.md compares the two. ``steps`` may
  be empty either way.

Only keywords that llama.cpp's JSON-Schema-to-grammar conversion enforces are kept (see
:data:`KEPT_KEYWORDS`); every object is closed (``additionalProperties: false``) where the entry
lists its properties, so unknown arguments cannot be generated. Steps carry no ``order`` or
``rationale``: the guards number steps, and a free-text field would cost output tokens on every
step. The answer-format text shown to the model under a schema is :data:`CONSTRAINED_FORMAT`.
"""

from __future__ import annotations

from typing import Any, Literal

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, PLANNER_TOOL_IDS

KEPT_KEYWORDS = frozenset({
    "type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf",
    "minItems", "maxItems", "additionalProperties",
})
"""Schema keywords carried into the answer schema (descriptions, defaults and formats are not)."""

MAX_STEPS = 8
"""Most steps a full_steps answer may hold under the schema (a runaway list is cut by grammar)."""

_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_MAX_DEPTH = 16


def argument_schema(parameters: dict[str, Any] | None, depth: int = 0) -> dict[str, Any]:
    """A catalog entry's argument schema reduced to what a grammar can enforce.

    An object that lists its properties is closed to others; an unknown ``type`` spelling or a
    schema nested deeper than 16 levels becomes the unconstrained ``{}``.
    """
    if not isinstance(parameters, dict) or depth > _MAX_DEPTH:
        return {}
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if key not in KEPT_KEYWORDS:
            continue
        if key == "type":
            types = value if isinstance(value, list) else [value]
            if not all(isinstance(t, str) and t in _JSON_TYPES for t in types):
                return {}
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {str(name): argument_schema(sub, depth + 1) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = argument_schema(value, depth + 1)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out[key] = [argument_schema(v, depth + 1) for v in value]
        elif key == "required" and isinstance(value, list):
            out[key] = [r for r in value if isinstance(r, str)]
        elif key not in ("properties", "items", "anyOf", "oneOf", "required"):
            out[key] = value
    if "properties" in out:
        out.setdefault("type", "object")
        out["required"] = [r for r in out.get("required", []) if r in out["properties"]]
        out.setdefault("additionalProperties", False)
    return out


def _object_args(parameters: dict[str, Any] | None) -> dict[str, Any]:
    schema = argument_schema(parameters)
    if schema.get("type") != "object":
        return {"type": "object"}
    return schema


def _step(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"tool": {"const": tool}, "args": args},
            "required": ["tool", "args"], "additionalProperties": False}


def step_branches(catalog: RoutingGuide, pipelines_as_tools: bool = False) -> list[dict[str, Any]]:
    """One step schema per tool the selected catalog offers (the planner itself never); with
    ``pipelines_as_tools`` each pipeline is a tool named by its id (its inputs as ``args``)."""
    branches = [_step(p.name, _object_args(p.parameters)) for p in catalog.packs
                if p.name not in PLANNER_TOOL_IDS and p.name != PIPELINE_RUN_TOOL]
    if pipelines_as_tools:
        branches += [_step(p.id, {"type": "object"}) for p in catalog.pipelines]
    elif catalog.pipelines:
        run_args = {"type": "object", "properties": {"id": {"enum": [p.id for p in catalog.pipelines]},
                                                     "inputs": {"type": "object"}},
                    "required": ["id"], "additionalProperties": False}
        branches.append(_step(PIPELINE_RUN_TOOL, run_args))
    return branches


def plan_schema(catalog: RoutingGuide, variant: str, fit_decision: bool = True, fit_last: bool = False,
                pipelines_as_tools: bool = False) -> dict[str, Any]:
    """The answer schema for one request over ``catalog`` (see the module docstring); with
    ``fit_decision``, the ``tool_fits`` field: leading, or with ``fit_last`` closing the answer, as
    a check on the steps already chosen; with ``pipelines_as_tools``, a pipeline is run by naming
    its id as the tool."""
    branches = step_branches(catalog, pipelines_as_tools)
    steps: dict[str, Any] = {"type": "array", "maxItems": 1 if variant == "single_pick" else MAX_STEPS}
    if branches:
        steps["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    else:
        steps["maxItems"] = 0
    fits = {"tool_fits": {"type": "boolean"}} if fit_decision else {}
    properties: dict[str, Any] = {} if fit_last else dict(fits)
    properties["steps"] = steps
    if variant == "single_pick":
        properties["more_steps_likely"] = {"type": "boolean"}
    if fit_last:
        properties.update(fits)
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


SchemaWire = Literal["json_object", "json_schema"]
"""How a schema travels: inside ``response_format`` ``{"type": "json_object", "schema": ...}``
(llama-cpp-python's server, which accepts no other form) or as OpenAI's ``json_schema``."""

DEFAULT_ON = ("llamacpp/",)
"""Endpoints whose plan calls are constrained unless the budget row says otherwise: llama.cpp's
server (``local:`` models), where the constraint was measured (docs/results/bfcl-levers.md)."""


def constrained_wire(model: str, flag: bool | None) -> SchemaWire | None:
    """Whether (and how) a plan call to the LM ``model`` (a LiteLLM/DSPy model string) is
    constrained: ``flag`` False never; unset, for the endpoints in :data:`DEFAULT_ON`; True always.
    llama.cpp takes the schema inside ``json_object``; every other endpoint (vLLM, OpenAI-style)
    gets OpenAI's ``json_schema``."""
    if flag is False or (flag is None and not model.startswith(DEFAULT_ON)):
        return None
    return "json_object" if model.startswith("llamacpp/") else "json_schema"


CONSTRAINED_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"tool_fits": true | false, "steps": [{"tool": "<catalog id>", "args": {<the tool's arguments>}}]}
"tool_fits" says whether any catalog tool can do what the request asks; when it is false, "steps" is empty."""
"""The answer format shown under a schema with the fit decision (after the answer-format mark);
single_pick adds ``more_steps_likely``."""

CONSTRAINED_MULTI_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"tool_fits": true | false, "steps": [{"tool": "<catalog id>", "args": {<its arguments>}}, {"tool": "<catalog id>", "args": {<its arguments>}}, ...]}
"tool_fits" says whether any catalog tool can do what the request asks; when it is false, "steps" is empty.
"steps" holds one entry per call the request asks for, in order: several when it asks for several things."""
"""The answer format shown under a schema with the fit decision when ``multi_call_format`` asks the
format to show that a plan may hold several calls (full_steps)."""

CONSTRAINED_CHECK_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"steps": [{"tool": "<catalog id>", "args": {<the tool's arguments>}}], "tool_fits": true | false}
"tool_fits" checks the steps: true when they do what the request asks; false when no catalog tool does, and the steps are then discarded."""
"""The answer format shown under a schema whose fit decision closes the answer."""

CONSTRAINED_STEPS_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"steps": [{"tool": "<catalog id>", "args": {<the tool's arguments>}}]}
"steps" is empty when no catalog tool can do what the request asks."""
"""The answer format shown under a schema without the fit decision."""


def has_fit_decision(schema: dict[str, Any] | None) -> bool:
    """Whether an answer schema holds the ``tool_fits`` decision."""
    return schema is not None and "tool_fits" in schema.get("properties", {})


def fit_decision_last(schema: dict[str, Any] | None) -> bool:
    """Whether an answer schema's ``tool_fits`` decision closes the answer (after the steps)."""
    return has_fit_decision(schema) and list(schema["properties"])[-1] == "tool_fits"  # type: ignore[index]
