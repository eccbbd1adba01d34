"""The selected catalog as native function tools, for models asked to answer with tool calls.

Each pack becomes one function named by :func:`~helmdeck_dspy.decoding.tool_calls.wire_name`
(``blog.publish`` → ``blog__publish``) with its description and, when the catalog gives one, its
parameter schema. Pipelines are run through one ``helmdeck__pipeline-run`` function whose ``id``
lists the selected pipelines. The planner itself is never offered (a plan cannot call the planner).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.tool_calls import wire_name
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, PLANNER_TOOL_IDS

MAX_DESCRIPTION = 1024  # characters; providers cap function descriptions around here
_ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
_PIPELINE_DESCRIPTION = (
    "Run one of the catalog's curated pipelines by its id, with the inputs it takes. Prefer a pipeline "
    "when one covers the whole request."
)


class NativeTool(BaseModel):
    """One function offered to the model.

    Attributes:
        name: The function name on the wire.
        tool_id: The catalog id a call to it stands for.
        description: What it does (the catalog's description).
        parameters: A JSON Schema object for its arguments.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    tool_id: str
    description: str = ""
    parameters: dict[str, Any] = _ANY_OBJECT


def _schema(parameters: dict[str, Any] | None) -> dict[str, Any]:
    """A pack's schema when it describes an object, else one that accepts any object."""
    if isinstance(parameters, dict) and parameters.get("type", "object") == "object":
        return {"type": "object", **parameters}
    return dict(_ANY_OBJECT)


def native_tools(catalog: RoutingGuide) -> tuple[NativeTool, ...]:
    """The functions a native-tool-call request offers for ``catalog`` (already selected to the budget)."""
    tools = [
        NativeTool(name=wire_name(p.name), tool_id=p.name, description=p.description[:MAX_DESCRIPTION],
                   parameters=_schema(p.parameters))
        for p in catalog.packs if p.name not in PLANNER_TOOL_IDS and p.name != PIPELINE_RUN_TOOL
    ]
    if catalog.pipelines:
        ids = [p.id for p in catalog.pipelines]
        tools.append(NativeTool(
            name=wire_name(PIPELINE_RUN_TOOL), tool_id=PIPELINE_RUN_TOOL, description=_PIPELINE_DESCRIPTION,
            parameters={"type": "object", "properties": {
                "id": {"type": "string", "enum": ids, "description": "The pipeline's id."},
                "inputs": {"type": "object", "description": "The pipeline's inputs."},
            }, "required": ["id"]},
        ))
    return tuple(tools)
