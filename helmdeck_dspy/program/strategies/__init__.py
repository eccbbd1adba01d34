"""The answer strategies, by name: one module each (see :mod:`.base` for the stages a strategy
implements). Adding a strategy is a module here and one line in :data:`STRATEGIES`.

Retired strategies (measured, lost, taken out: docs/results/strategies.md) are not here; their
recorded answers re-score through :mod:`helmdeck_dspy.evaluation.scoring`.
"""

from __future__ import annotations

from helmdeck_dspy.errors import ArgumentError
from helmdeck_dspy.program.strategies.base import AnswerStrategy, SpecInputs
from helmdeck_dspy.program.strategies.free import Free
from helmdeck_dspy.program.strategies.plain import Plain
from helmdeck_dspy.program.strategies.schema import Schema

STRATEGIES: dict[str, AnswerStrategy] = {s.name: s for s in (Free(), Schema(), Plain())}
"""Every answer strategy the planner can use, by name."""


def strategy_named(name: str) -> AnswerStrategy:
    """The strategy called ``name``.

    Raises:
        ArgumentError: No strategy has that name.
    """
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ArgumentError(f"unknown answer strategy {name!r}; expected one of {sorted(STRATEGIES)}") from None


__all__ = ["STRATEGIES", "AnswerStrategy", "SpecInputs", "strategy_named"]
