"""The one scoring path: a completion and a DSPy prediction of the same plan score the same."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.evaluation.metric import score_plan
from helmdeck_dspy.evaluation.scoring import (
    guard_completion,
    guard_prediction,
    score_prediction,
)
from helmdeck_dspy.tasks import load_tasks

CATALOG = load_catalog()
IDS, PIPES = CATALOG.id_set, CATALOG.pipeline_ids
TASK = next(t for t in load_tasks("dev") if len(t.steps) >= 2)
GOLD = [{"order": i, "tool": g.tool, "args": dict(g.args), "rationale": "r"} for i, g in enumerate(TASK.steps, 1)]


@pytest.mark.parametrize("variant", ["full_steps", "single_pick"])
def test_a_completion_and_a_prediction_of_the_same_plan_score_the_same(variant):
    content = json.dumps({"reasoning": "x", "steps": GOLD})
    guarded = guard_completion(content, "stop", None, variant=variant, catalog_ids=IDS, pipeline_ids=PIPES)
    assert guarded.parse.outcome == "strict"
    assert len(guarded.steps) == (1 if variant == "single_pick" else len(GOLD))
    from_text = score_plan(TASK, guarded.steps, variant=variant, pipeline_ids=PIPES)
    from_pred = score_prediction(TASK, GOLD, variant=variant, catalog_ids=IDS, pipeline_ids=PIPES)
    assert from_text == from_pred and from_pred.score == 1.0
    assert guard_prediction(GOLD, variant=variant, catalog_ids=IDS, pipeline_ids=PIPES) == guarded.steps


def test_truncated_or_failed_output_scores_zero():
    content = json.dumps({"steps": GOLD})
    cut = guard_completion(content, "length", None, variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES)
    assert cut.steps is None and cut.parse.cause == "length_truncated"
    assert score_plan(TASK, cut.steps, pipeline_ids=PIPES).score == 0.0
    assert score_prediction(TASK, None, variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES).score == 0.0


def test_unknown_tools_are_demoted_as_the_planner_does():
    steps = [{"order": 1, "tool": "rm_rf", "args": {}, "rationale": ""}, *GOLD]
    guarded = guard_completion(json.dumps({"steps": steps}), "stop", None, variant="full_steps", catalog_ids=IDS,
                               pipeline_ids=PIPES)
    assert guarded.steps[0].demoted and guarded.steps[0].tool == "unknown"
    assert score_plan(TASK, guarded.steps, pipeline_ids=PIPES).score < 1.0


def test_a_prediction_takes_dicts_or_steps_and_is_renumbered():
    from helmdeck_dspy.signatures.types import PlanStep

    pack, pipe = CATALOG.packs[0].name, sorted(PIPES)[0]
    out = guard_prediction([{"tool": pack, "args": {}}, PlanStep(tool="no.such.tool"), {"tool": pipe}],
                           variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES)
    assert [s.tool for s in out] == [pack, "unknown", pipe] and [s.order for s in out] == [1, 2, 3]


def test_the_compile_metric_runs_the_chain_guard_as_the_planner_does():
    """A prediction spelling out a pipeline's packs scores as the planner's plan would: one run of it."""
    chains = CATALOG.pipeline_chains
    task = next(t for t in load_tasks("dev") if len(t.steps) == 1 and t.steps[0].args.get("id") in chains)
    packs = [{"tool": p, "args": {}} for p in sorted(chains[task.steps[0].args["id"]])]
    spelled = score_prediction(task, packs, variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES)
    guarded = score_prediction(task, packs, variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES, chains=chains)
    assert guarded.score > spelled.score
    steps = guard_prediction(packs, variant="full_steps", catalog_ids=IDS, pipeline_ids=PIPES, chains=chains)
    assert [(s.tool, s.args.get("id")) for s in steps] == [(PIPELINE_RUN_TOOL, task.steps[0].args["id"])]
