"""The ``draft`` strategy's second look (issue 38): whether a first answer passes the planner's
checks, and the request that asks for it again when it does not.

A draft fails the checks when it holds no readable JSON list of calls, names a function that is
neither in the catalog nor a near miss of one, or gives arguments that are still wrong after
coercion (missing, outside an enum, of a type that cannot be coerced:
:func:`~helmdeck_dspy.planning.arguments.argument_problems`). The repair continues the same
conversation (the draft as the model's turn, then what was wrong with it) and is decoded under
:func:`~helmdeck_dspy.program.answer_schema.call_list_schema` over the functions the first request
showed, with the draft's number of calls: the draft's decision stands, only its form is fixed. A
draft that declines (``[]``) passes the checks and is never repaired.
"""

from __future__ import annotations

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.parsing import ParseResult
from helmdeck_dspy.planning.arguments import argument_problems
from helmdeck_dspy.planning.guards import guard_steps
from helmdeck_dspy.program.answer_schema import call_list_schema, schema_wire
from helmdeck_dspy.program.plain_prompt import repair_request
from helmdeck_dspy.program.prompt_spec import PromptSpec


def draft_problems(parse: ParseResult | None, catalog: RoutingGuide) -> list[str] | None:
    """What is wrong with a draft, in the words the repair ask uses (an empty list: no readable call
    list); None when it passes the checks. ``catalog``: the planner's whole catalog, the names the
    guards accept."""
    if parse is None or parse.plan is None:
        return []
    guarded = guard_steps(parse.plan.steps, catalog.id_set, catalog.pipeline_ids, catalog.arg_schemas, map_names=True)
    problems = [f'"{s.model_tool}" is not one of the functions' for s in guarded if s.demoted]
    problems += [f"{s.tool}: {note}" for s in guarded if not s.demoted for note in argument_problems(s.arg_notes)]
    return problems or None


def repair_spec(spec: PromptSpec, shown: RoutingGuide, whole: RoutingGuide, parse: ParseResult | None,
                content: str | None, endpoint: str) -> PromptSpec | None:
    """The repair of a ``draft`` answer that failed the checks (see the module docstring), or None
    when the spec is not a first draft or the answer passes them. ``shown``: the functions the
    first request showed; ``endpoint``: the LM's model string (the schema's wire)."""
    if spec.strategy != "draft" or spec.draft is not None:
        return None
    problems = draft_problems(parse, whole)
    if problems is None:
        return None
    calls = len(parse.plan.steps) if parse is not None and parse.plan is not None else None
    return spec.model_copy(update={"draft": content or "", "repair_ask": repair_request(problems, calls),
                                   "answer_schema": call_list_schema(shown, calls),
                                   "schema_wire": schema_wire(endpoint)})
