"""The tools nearest to one the servers do not have, named where the re-plan sees the failed call
(``PlannerOptions.name_nearest``; issue 55, item 3).

When the model calls a tool no server offers (``update_user``), the step is demoted and its result
says so (:data:`~helmdeck_dspy.domain.NO_SUCH_TOOL`). The re-plan then sees only that the name is
wrong, and the 1.5B often answers with another invented name or an unrelated call. This adds, to the
re-plan's copy of that step's result, the tools the planner's ranker scores above zero for the name
the model called, its argument names and the request: ``update_user`` → ``edit_file, list_tables,
create_table, write_query, describe_table``. A name that matches nothing (``send_email`` in a
catalog without mail) gets no list, so a request no tool serves is not steered to one. The step the
loop keeps, and the executor's text, are unchanged: only the prompt of the next plan call differs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helmdeck_dspy.domain import missing_tool
from helmdeck_dspy.signatures.types import ExecutedStep

if TYPE_CHECKING:
    from helmdeck_dspy.planning.context import PlanContext

NEAREST_LEAD = "tools that exist, nearest to it:"
"""Joins a missing tool's result to the names of the nearest tools that exist."""


def nearest_tools(ctx: PlanContext, called: str, arg_names: list[str], intent: str) -> list[str]:
    """Up to ``ctx.options.name_nearest`` catalog ids the ranker scores above zero for ``called``,
    ``arg_names`` and ``intent``, best first."""
    from helmdeck_dspy.catalog.ranking import RANKERS

    query = " ".join([called, *arg_names, intent])
    ranked = RANKERS[ctx.options.ranker](ctx.catalog, query, None)
    return [r.id for r in ranked if r.score > 0 and r.id != called][:ctx.options.name_nearest]


def with_nearest(ctx: PlanContext, intent: str, prior_steps: list[ExecutedStep] | None) -> list[ExecutedStep] | None:
    """``prior_steps`` with each failed call to a missing tool's result followed by the nearest tools
    that exist (:func:`nearest_tools`); the same list when the option is off or nothing matches."""
    if not ctx.options.name_nearest or not prior_steps:
        return prior_steps
    shown: list[ExecutedStep] = []
    for step in prior_steps:
        called = missing_tool(step.output) if step.error else None
        names = nearest_tools(ctx, called, list(step.args), intent) if called else []
        shown.append(step.model_copy(update={"output": f"{step.output}; {NEAREST_LEAD} {', '.join(names)}"})
                     if names else step)
    return shown
