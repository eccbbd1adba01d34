"""``free``: a plan object in the variant's answer format, decoded freely.

The default on every endpoint but llama.cpp's server. A row that wants strict JSON asks for a
JSON-object response format (never on Tier C: ``Budget.json_object_format``).
"""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.program.strategies.base import SpecInputs
from helmdeck_dspy.program.strategies.plan_object import PlanObject


class Free(PlanObject):
    name = "free"
    description = "JSON text in the variant's answer format, decoded freely"

    def shape(self, given: SpecInputs) -> dict[str, Any]:
        return {"json_object": given.budget.json_object_format}
