"""The model-alone prompt: the tools as JSON functions, the question, and one sentence asking for a
JSON list of ``{name, arguments}`` (``[]`` when no function fits). No instructions, no demos.

It is the baseline every study pairs the planner against (``bench.bfcl.baseline``) and, verbatim,
the request of the ``plain`` answer strategy (``program.strategies.plain``), whose answer then goes
through the planner's checks. A catalog's pipelines are offered as functions named by their ids,
without parameters.
"""

from __future__ import annotations

import json
from typing import Any

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.program.sections import DATA_NOTE

ASK = ('Answer with only a JSON list of the function calls that answer the question, each as '
       '{"name": "<function name>", "arguments": {...}}. Answer [] if none of the functions fits.')
NEXT_ASK = ('Answer with only a JSON list of the next function calls, each as {"name": "<function name>", '
            '"arguments": {...}}. Answer [] if no more calls are needed.')
"""The ask after calls have run, in the model-alone loop's conversation (:func:`results_message`; a
``plain`` re-plan with it tied on the end-to-end study's dev half, and so did one that continued
the conversation: docs/results/e2e.md)."""
CALL_ASK = ("A function above does fit this question. Answer again with only a JSON list of the function calls "
            "that answer it, each as {\"name\": \"<function name>\", \"arguments\": {...}}.")
"""The ask after a decline a decline threshold overrules (``planning.decision``), model-alone format."""
FIT_ASK = "A catalog tool does fit this request. Answer again, with the steps that do what it asks."
"""The same ask under the schema strategy's answer format."""
RETRY_ASK = ("The last call above failed; its output says why. Answer again with only a JSON list of the function "
             "calls that repair it and answer the question, each as {\"name\": \"<function name>\", \"arguments\": {...}}.")
"""The ask after a re-plan declined right after a failed call (``PlannerOptions.retry_errors``), model-alone format."""
RETRY_FIT_ASK = "The last step above failed; its output says why. Answer again, with the steps that repair it and do what the request asks."
"""The same ask under the schema strategy's answer format."""
CONTEXT_LEAD = "Context:"
PRIOR_LEAD = f"Calls already made, with their results ({DATA_NOTE}):"
RESULTS_LEAD = "Results of those calls:"


def plain_functions(catalog: RoutingGuide) -> str:
    """The catalog as the JSON list of functions the prompt shows (entries in catalog order)."""
    empty = {"type": "object", "properties": {}}
    functions = [{"name": p.name, "description": p.description, "parameters": p.parameters or empty}
                 for p in catalog.packs]
    functions += [{"name": p.id, "description": p.description or p.name, "parameters": empty}
                  for p in catalog.pipelines]  # a pipeline is offered as a function named by its id
    return json.dumps(functions, ensure_ascii=False)


def plain_request(functions: str, intent: str, context: str | None = None, prior: list[Any] | None = None) -> str:
    """The one user message: functions, question (then any context and calls already made), the ask."""
    parts = [f"Functions:\n{functions}", f"Question: {intent.strip()}"]
    if context is not None and str(context).strip():
        parts.append(f"{CONTEXT_LEAD}\n{str(context).strip()}")
    if prior:
        parts.append(f"{PRIOR_LEAD}\n{json.dumps(prior, ensure_ascii=False)}")
    return "\n\n".join([*parts, ASK])


def results_message(steps: list[dict[str, Any]]) -> str:
    """The user turn that hands the model its calls' results (errors marked) and asks for the next calls."""
    shown = [{"name": s.get("tool"), "arguments": s.get("args") or {}, "result": s.get("output", ""),
              **({"error": True} if s.get("error") else {})} for s in steps]
    return f"{RESULTS_LEAD}\n{json.dumps(shown, ensure_ascii=False)}\n\n{NEXT_ASK}"
