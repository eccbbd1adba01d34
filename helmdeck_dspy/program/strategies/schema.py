"""``schema``: a plan object decoded under the selected catalog's answer schema.

The schema (:func:`~helmdeck_dspy.program.answer_schema.plan_schema`) names only the selected
tools, so the model cannot name another; it travels on the endpoint's wire
(:func:`~helmdeck_dspy.program.answer_schema.schema_wire`). With the fit decision the answer opens
with ``tool_fits``: on for a plain list of tools, off for a catalog with pipelines, unless the
planner's ``fit_decision`` option says otherwise (docs/results/test-split.md). A request with no
catalog yet (compile time) gets the free shape. The default on llama.cpp's server.
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.program.answer_schema import plan_schema, schema_wire
from helmdeck_dspy.program.strategies.base import SpecInputs
from helmdeck_dspy.program.strategies.plan_object import PlanObject


class Schema(PlanObject):
    name = "schema"
    description = "JSON text decoded under the selected catalog's answer schema"
    answer_kind = "object"

    def shape(self, given: SpecInputs) -> dict[str, Any]:
        if given.selected is None:
            return {"json_object": given.budget.json_object_format}
        fits = (not given.whole.pipelines) if given.fit_decision is None else given.fit_decision
        return {"answer_schema": plan_schema(given.selected, given.variant, fits),
                "schema_wire": schema_wire(given.endpoint)}
