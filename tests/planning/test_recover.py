"""A re-plan that answers no call right after a failed call is asked once more, in the same
conversation, to correct it (``PlannerOptions.recover_after_error``), under each strategy."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.plain_prompt import RECOVER_ASK, RECOVER_STEPS_ASK
from helmdeck_dspy.serve.catalogs import read_tools_catalog
from helmdeck_dspy.signatures.types import ExecutedStep
from tests.fault_server import FaultServer, ok

TOOLS = [{"name": "move_file", "description": "Move or rename a file.",
          "inputSchema": {"type": "object", "properties": {"source": {"type": "string"},
                                                          "destination": {"type": "string"}}}},
         {"name": "read_file", "description": "Read a file.",
          "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
INTENT = "Rename files/todo.md to files/tasks.md."
FAILED = ExecutedStep(order=1, tool="unknown", args={"source": "files/todo.md", "destination": "files/tasks.md"},
                      output="no tool named 'rename_file' on the run's servers", error=True)
WORKED = FAILED.model_copy(update={"error": False, "output": "done"})
FIX = [{"name": "move_file", "arguments": {"source": "files/todo.md", "destination": "files/tasks.md"}}]
CASES = {  # strategy -> (model whose row answers with it over a tool list, a decline, a corrected answer, the ask)
    "plain": ("local/qwen2.5-coder-1.5b-instruct", "[]", json.dumps(FIX), RECOVER_ASK),
    "schema": ("local/qwen2.5-coder-0.5b-instruct", json.dumps({"tool_fits": False, "steps": []}),
               json.dumps({"tool_fits": True, "steps": [{"tool": "move_file", "args": FIX[0]["arguments"]}]}),
               RECOVER_STEPS_ASK),
}


def _plan(strategy: str, prior: list[ExecutedStep], recover: bool):
    model, decline, fixed, _ = CASES[strategy]
    with FaultServer([ok(decline), ok(fixed)]) as server:
        lm = make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)
        planner = Planner.for_model(model, lm=lm, catalog=read_tools_catalog(TOOLS), history=None, use_filter=False,
                                    cache=False, answer_strategy=strategy, recover_after_error=recover)
        result = planner.plan(INTENT, prior_steps=prior)
        return result, [r.body for r in server.requests]


@pytest.mark.parametrize("strategy", sorted(CASES))
def test_a_decline_after_a_failed_call_is_asked_to_correct_it(strategy):
    result, bodies = _plan(strategy, [FAILED], recover=True)
    assert len(bodies) == 2 and result.rechecked
    first, again = bodies[0]["messages"], bodies[1]["messages"]
    assert again[: len(first)] == first  # the same conversation: the first request, then
    assert again[len(first)]["role"] == "assistant" and again[-1] == {"role": "user", "content": CASES[strategy][3]}
    assert [(s.tool, s.args) for s in result.steps] == [("move_file", FIX[0]["arguments"])]


@pytest.mark.parametrize(("prior", "recover"), [([FAILED], False), ([WORKED], True), ([], True)])
def test_no_ask_without_the_option_after_a_success_or_on_a_first_plan(prior, recover):
    result, bodies = _plan("plain", prior, recover)
    assert len(bodies) == 1 and not result.steps and not result.rechecked
