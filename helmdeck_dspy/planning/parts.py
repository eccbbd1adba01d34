"""What the planning steps read of a planner (:class:`PlannerParts`), apart from the planner itself
so that the attempt and the modules it calls share it without importing each other."""

from __future__ import annotations

from typing import Any, Protocol

from helmdeck_dspy.budgets import Budget
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import Variant
from helmdeck_dspy.planning.history import HistoryStore
from helmdeck_dspy.planning.options import PlannerOptions
from helmdeck_dspy.program.store import ProgramRef


class PlannerParts(Protocol):
    """What an attempt reads of a planner."""

    budget: Budget
    variant: Variant
    program: Any
    lm: Any
    catalog: RoutingGuide
    history: HistoryStore | None
    options: PlannerOptions
    program_ref: ProgramRef | None
