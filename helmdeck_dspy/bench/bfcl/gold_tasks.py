"""The project's own gold tasks as BFCL-style questions, so a lever run can pair the planner with the
model alone on a catalog of real tools (issue 23: the catalog imported from real MCP servers).

Each task becomes one question offering every tool of the catalog (the planner selects from them
to its budget; the model alone sees them all). A gold step becomes a gold call: an argument the
task fixes must have that value, an argument it names without a value (``null``) must be present
with any value, and the tool's other schema arguments may be given with any value or left out.
A task's alternatives are alternative gold call lists. A task with no steps (a gap: no tool fits)
expects no call.

A pipeline run (``helmdeck__pipeline-run`` with ``args.id``) is a call named by the pipeline's id,
without arguments: that is how the model alone is offered a pipeline
(:func:`~helmdeck_dspy.bench.bfcl.baseline.plain_prompt`), and :func:`as_call` names a
planner's pipeline run the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.bench.bfcl.models import ANY_VALUE, OPTIONAL_MARK, BfclQuestion, GoldCall
from helmdeck_dspy.bench.bfcl.score import Call
from helmdeck_dspy.tasks import GoldStep, PlanTask


def as_call(call: Call) -> Call:
    """A pipeline run as the call named by the pipeline's id; any other call as it is."""
    if call.name == PIPELINE_RUN_TOOL and isinstance(call.args.get("id"), str):
        return Call(name=call.args["id"])
    return call


def _called(step: GoldStep) -> str:
    """The name a gold step is called by: its tool, or a pipeline run's pipeline id."""
    return str(step.args.get("id", "")) if step.tool == PIPELINE_RUN_TOOL else step.tool


def gold_call(step: GoldStep, schemas: dict[str, dict]) -> GoldCall:
    """One gold step as a gold call (see the module docstring for what each argument accepts)."""
    if step.tool == PIPELINE_RUN_TOOL:
        return GoldCall(name=_called(step))
    args: dict[str, list] = {k: [ANY_VALUE] if v is None else [v] for k, v in step.args.items()}
    for name in (schemas.get(step.tool) or {}).get("properties", {}):
        args.setdefault(name, [ANY_VALUE, OPTIONAL_MARK])
    return GoldCall(name=step.tool, args=args)


def questions_from_tasks(tasks: Sequence[PlanTask], catalog: RoutingGuide, source: str = "<tasks>") -> list[BfclQuestion]:
    """Every task as a question over the whole catalog.

    Raises:
        DataFileError: a task names a tool or pipeline the catalog lacks.
    """
    schemas = catalog.arg_schemas
    ids = catalog.id_set
    out = []
    for t in tasks:
        missing = sorted({_called(s) for plan in (t.steps, *t.alternatives) for s in plan} - ids)
        if missing:
            raise DataFileError(source, f"task {t.id} names tools the catalog lacks: {missing}")
        out.append(BfclQuestion(
            id=t.id, category=t.category, intent=t.intent, functions=catalog.packs, pipelines=catalog.pipelines,
            gold=tuple(gold_call(s, schemas) for s in t.steps),
            alternatives=tuple(tuple(gold_call(s, schemas) for s in alt) for alt in t.alternatives),
            expect="calls" if t.steps else "no_call",
        ))
    return out
