"""The JSON Schema a constrained plan answer is decoded under, built per request.

The schema follows the plan signature's output (``steps``, and ``more_steps_likely`` for
single_pick) over the *selected* catalog, so a model decoding under it cannot name a tool outside
that catalog:

- a step is one branch of an ``anyOf``, one branch per tool: ``tool`` is that tool's id as a
  ``const`` and ``args`` is the tool's own argument schema when the catalog entry has one (its
  required arguments, types and enums then hold by construction), else any object;
- a pipeline run is the branch whose ``tool`` is ``helmdeck__pipeline-run`` and whose ``args.id``
  is an enum of the selected pipelines;
- with ``fit_decision`` the answer opens with ``tool_fits``, a boolean: whether any catalog tool
  fits the request at all, an explicit decision before any step. The schema ties the steps to it:
  its ``anyOf`` holds the answer with ``tool_fits`` true and the one with ``tool_fits`` false and
  no steps (the 0.5B answered ``{"tool_fits": false, "steps": [<a call>]}`` 3 times in 25 under the
  untied schema; the guards kept no steps then too, so plans are the same, without the wasted
  call). Without it an empty ``steps`` list is the only way to say no, as in the plain
  prompt's ``[]``; docs/results/bfcl-levers.md compares the two. ``steps`` may be empty either way.

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


def step_branches(catalog: RoutingGuide) -> list[dict[str, Any]]:
    """One step schema per tool the selected catalog offers (the planner itself never), and one
    for a run of any of its pipelines."""
    branches = [_step(p.name, _object_args(p.parameters)) for p in catalog.packs
                if p.name not in PLANNER_TOOL_IDS and p.name != PIPELINE_RUN_TOOL]
    if catalog.pipelines:
        run_args = {"type": "object", "properties": {"id": {"enum": [p.id for p in catalog.pipelines]},
                                                     "inputs": {"type": "object"}},
                    "required": ["id"], "additionalProperties": False}
        branches.append(_step(PIPELINE_RUN_TOOL, run_args))
    return branches


def plan_schema(catalog: RoutingGuide, variant: str, fit_decision: bool = True, must_call: bool = False) -> dict[str, Any]:
    """The answer schema for one request over ``catalog`` (see the module docstring), opening with
    the ``tool_fits`` decision when ``fit_decision``; ``must_call``: at least one step (and
    ``tool_fits`` true), for a decline a threshold overrules (``planning.decision``)."""
    branches = step_branches(catalog)
    steps: dict[str, Any] = {"type": "array", "maxItems": 1 if variant == "single_pick" else MAX_STEPS}
    if must_call and branches:
        steps["minItems"] = 1
    if branches:
        steps["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    else:
        steps["maxItems"] = 0
    properties: dict[str, Any] = {"tool_fits": {"type": "boolean"}} if fit_decision else {}
    properties["steps"] = steps
    if variant == "single_pick":
        properties["more_steps_likely"] = {"type": "boolean"}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    if fit_decision and must_call:
        schema["properties"] = {**properties, "tool_fits": {"const": True}}
    elif fit_decision:  # tool_fits false: steps must be empty (the grammar takes the branches, readers the properties)
        no = {**properties, "tool_fits": {"const": False}, "steps": {"const": []}}
        schema["anyOf"] = [{**schema, "properties": {**properties, "tool_fits": {"const": True}}},
                           {**schema, "properties": no}]
    return schema


def call_list_schema(catalog: RoutingGuide, minimum: int = 0) -> dict[str, Any]:
    """A JSON list of ``minimum`` to :data:`MAX_STEPS` ``{name, arguments}`` calls in the model-alone
    format, each naming one of the functions ``catalog`` shows (``program.plain_prompt.plain_functions``:
    its packs, and its pipelines by id) with arguments under that function's schema: what a decline a
    threshold overrules is asked again under (``planning.decision``, ``minimum`` 1)."""
    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": {"name": {"const": name}, "arguments": args},
                "required": ["name", "arguments"], "additionalProperties": False}

    branches = [call(p.name, _object_args(p.parameters)) for p in catalog.packs]
    branches += [call(p.id, {"type": "object"}) for p in catalog.pipelines]
    count = {"minItems": minimum, "maxItems": MAX_STEPS} if minimum else {"maxItems": MAX_STEPS}
    if not branches:
        return {"type": "array", "maxItems": 0}
    return {"type": "array", **count, "items": branches[0] if len(branches) == 1 else {"anyOf": branches}}


SchemaWire = Literal["json_object", "json_schema"]
"""How a schema travels: inside ``response_format`` ``{"type": "json_object", "schema": ...}``
(llama-cpp-python's server, which accepts no other form) or as OpenAI's ``json_schema``."""


def schema_wire(model: str) -> SchemaWire:
    """How an answer schema travels to the LM ``model`` (a LiteLLM/DSPy model string): llama.cpp's
    server takes it inside ``json_object``; every other endpoint (vLLM, OpenAI-style) gets
    OpenAI's ``json_schema``."""
    return "json_object" if model.startswith("llamacpp/") else "json_schema"


CONSTRAINED_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"tool_fits": true | false, "steps": [{"tool": "<catalog id>", "args": {<the tool's arguments>}}]}
"tool_fits" says whether any catalog tool can do what the request asks; when it is false, "steps" is empty."""
"""The answer format shown under a schema with the fit decision (after the answer-format mark);
single_pick adds ``more_steps_likely``."""

CONSTRAINED_STEPS_FORMAT = """: one JSON object, decoded under a schema of the catalog's tools:
{"steps": [{"tool": "<catalog id>", "args": {<the tool's arguments>}}]}
"steps" is empty when no catalog tool can do what the request asks."""
"""The answer format shown under a schema without the fit decision."""


def has_fit_decision(schema: dict[str, Any] | None) -> bool:
    """Whether an answer schema holds the ``tool_fits`` decision."""
    return schema is not None and "tool_fits" in schema.get("properties", {})

