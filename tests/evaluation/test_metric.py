"""The plan metric (helmdeck_dspy.evaluation.metric): one 0-1 score of a guarded plan against a gold task."""

from __future__ import annotations

import pytest

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, UNKNOWN_TOOL
from helmdeck_dspy.evaluation.metric import (
    W_EXACT,
    W_F1,
    W_PIPELINE,
    W_VALID,
    expected_plans,
    score_plan,
    step_key,
)
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.tasks import GoldStep, PlanTask

PIPE = "builtin.brief-rewrite-blog"
PIPELINE_IDS = frozenset({PIPE, "builtin.doc-rewrite-blog"})


def gs(tool: str, **args) -> GoldStep:
    return GoldStep(tool=tool, args=args)


def task(steps: list[GoldStep], alternatives: list[list[GoldStep]] | None = None, category: str | None = None) -> PlanTask:
    n = len(steps)
    complexity = (
        "pack-chain" if n >= 2
        else "pipeline-direct" if n == 1 and steps[0].tool == PIPELINE_RUN_TOOL
        else "single-action"
    )
    cat = category or ("gap" if n == 0 else complexity)
    return PlanTask(
        id="t-1", split="train", category=cat, intent="do it", steps=steps,
        alternatives=alternatives or [], complexity=complexity,
    )


def ps(*tools_or_steps) -> list[GuardedStep]:
    out = []
    for i, t in enumerate(tools_or_steps, 1):
        tool, args = (t, {}) if isinstance(t, str) else t
        out.append(GuardedStep(order=i, tool=tool, args=args))
    return out


CHAIN = task([gs("helmdeck.memory_store"), gs("blog.rewrite_for_audience"), gs("image.generate")])


def test_weights_sum_to_one():
    assert W_F1 + W_EXACT + W_PIPELINE + W_VALID == pytest.approx(1.0)


def test_exact_match_scores_one():
    s = score_plan(CHAIN, ps("helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"))
    assert s.score == 1.0
    assert s.exact and s.pipeline_ok and s.parsed
    assert s.f1 == 1.0 and s.valid_rate == 1.0


def test_parse_failure_scores_zero():
    s = score_plan(CHAIN, None)
    assert s.score == 0.0
    assert s.parsed is False
    assert not s.exact


def test_reversed_order_lowers_f1():
    s = score_plan(CHAIN, ps("image.generate", "blog.rewrite_for_audience", "helmdeck.memory_store"))
    assert 0 < s.f1 < 1
    assert s.f1 == pytest.approx(1 / 3)  # LCS 1 of 3
    assert not s.exact
    assert 0 < s.score < 1


def test_partial_order_lcs():
    # LCS of [a, c, b] with [a, b, c] is 2
    s = score_plan(CHAIN, ps("helmdeck.memory_store", "image.generate", "blog.rewrite_for_audience"))
    assert s.f1 == pytest.approx(2 / 3)


def test_missing_step_lowers_recall():
    s = score_plan(CHAIN, ps("helmdeck.memory_store", "blog.rewrite_for_audience"))
    # precision 1, recall 2/3
    assert s.f1 == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))
    assert not s.exact
    assert s.score < 1


def test_pipeline_decomposed_into_packs_scores_lower():
    t = task([gs(PIPELINE_RUN_TOOL, id=PIPE)])
    run = score_plan(t, ps((PIPELINE_RUN_TOOL, {"id": PIPE, "inputs": {}})))
    decomposed = score_plan(t, ps("doc.parse", "blog.rewrite_for_audience"))
    assert run.score == 1.0 and run.pipeline_ok
    assert decomposed.pipeline_ok is False
    assert decomposed.score < run.score


def test_wrong_pipeline_is_a_wrong_step():
    t = task([gs(PIPELINE_RUN_TOOL, id=PIPE)])
    s = score_plan(t, ps((PIPELINE_RUN_TOOL, {"id": "builtin.doc-rewrite-blog"})))
    assert s.f1 == 0.0 and not s.exact and not s.pipeline_ok


def test_bare_pipeline_id_counts_as_run_when_pipeline_ids_given():
    t = task([gs(PIPELINE_RUN_TOOL, id=PIPE)])
    with_ids = score_plan(t, ps(PIPE), pipeline_ids=PIPELINE_IDS)
    without = score_plan(t, ps(PIPE))
    assert with_ids.score == 1.0 and with_ids.exact
    assert without.score < 1.0 and not without.exact


def test_step_key():
    assert step_key(PIPELINE_RUN_TOOL, {"id": PIPE}) == f"pipeline:{PIPE}"
    assert step_key(PIPE, {}, PIPELINE_IDS) == f"pipeline:{PIPE}"
    assert step_key(PIPE, {}) == PIPE
    assert step_key("image.generate", None, PIPELINE_IDS) == "image.generate"
    assert gs(PIPELINE_RUN_TOOL, id=PIPE).key == f"pipeline:{PIPE}"


def test_unknown_steps_lower_valid_rate():
    full = score_plan(CHAIN, ps("helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"))
    with_gap = score_plan(
        CHAIN, ps("helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate", UNKNOWN_TOOL)
    )
    assert with_gap.valid_rate == pytest.approx(3 / 4)
    assert with_gap.score < full.score


# --------------------------------------------------------------------------------------------
# Gap tasks
# --------------------------------------------------------------------------------------------

GAP = task([], category="gap")


def test_gap_empty_plan_scores_one():
    s = score_plan(GAP, [])
    assert s.score == 1.0
    assert s.exact


def test_gap_only_unknown_steps_scores_one():
    s = score_plan(GAP, ps(UNKNOWN_TOOL, UNKNOWN_TOOL))
    assert s.score == 1.0
    assert s.valid_rate == 0.0


def test_gap_with_a_valid_step_scores_zero():
    assert score_plan(GAP, ps("image.generate")).score == 0.0
    assert score_plan(GAP, ps(UNKNOWN_TOOL, "image.generate")).score == 0.0


def test_gap_parse_failure_scores_zero():
    assert score_plan(GAP, None).score == 0.0


# --------------------------------------------------------------------------------------------
# single_pick
# --------------------------------------------------------------------------------------------


def test_single_pick_scores_against_first_gold_step():
    s = score_plan(CHAIN, ps("helmdeck.memory_store"), variant="single_pick", done=0)
    assert s.score == 1.0 and s.exact
    wrong = score_plan(CHAIN, ps("blog.rewrite_for_audience"), variant="single_pick", done=0)
    assert wrong.score < 1.0 and not wrong.exact


def test_single_pick_scores_against_next_gold_step_after_done():
    s = score_plan(CHAIN, ps("blog.rewrite_for_audience"), variant="single_pick", done=1)
    assert s.score == 1.0
    stale = score_plan(CHAIN, ps("helmdeck.memory_store"), variant="single_pick", done=1)
    assert stale.score < 1.0


def test_single_pick_full_plan_is_not_exact():
    # a full plan answered to a single_pick question is not the expected one step
    s = score_plan(
        CHAIN, ps("helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate"), variant="single_pick"
    )
    assert not s.exact and s.score < 1.0


def test_expected_plans():
    t = task([gs("a.x"), gs("b.y")], alternatives=[[gs("c.z"), gs("a.x")]])
    assert [[g.tool for g in p] for p in expected_plans(t)] == [["a.x", "b.y"], ["c.z", "a.x"]]
    assert [[g.tool for g in p] for p in expected_plans(t, "single_pick", 1)] == [["b.y"], ["a.x"]]


# --------------------------------------------------------------------------------------------
# Alternatives
# --------------------------------------------------------------------------------------------


def test_alternative_counts_as_exact():
    t = task(
        [gs(PIPELINE_RUN_TOOL, id=PIPE)],
        alternatives=[[gs("helmdeck.memory_store"), gs("blog.rewrite_for_audience")]],
    )
    s = score_plan(t, ps("helmdeck.memory_store", "blog.rewrite_for_audience"))
    assert s.exact
    assert s.score == 1.0


def test_best_of_gold_and_alternatives():
    t = task([gs("a.x"), gs("b.y")], alternatives=[[gs("c.z")]])
    assert score_plan(t, ps("a.x", "b.y")).score == 1.0
    assert score_plan(t, ps("c.z")).score == 1.0
    assert score_plan(t, ps("d.w")).score < 0.5


# --------------------------------------------------------------------------------------------
# args_match
# --------------------------------------------------------------------------------------------


def test_args_match_none_without_key_args():
    assert score_plan(CHAIN, ps("helmdeck.memory_store")).args_match is None
    t = task([gs(PIPELINE_RUN_TOOL, id=PIPE)])  # the pipeline id is identity, not a key arg
    assert score_plan(t, ps((PIPELINE_RUN_TOOL, {"id": PIPE}))).args_match is None


def test_args_match_case_insensitive_and_null_means_present():
    t = task([gs("web.scrape", url="https://Example.com/Page"), gs("helmdeck.memory_store", key=None)])
    full = score_plan(
        t,
        ps(("web.scrape", {"url": "  https://example.com/page "}), ("helmdeck.memory_store", {"key": "anything"})),
    )
    assert full.args_match == 1.0
    half = score_plan(
        t, ps(("web.scrape", {"url": "https://example.com/other"}), ("helmdeck.memory_store", {"key": None}))
    )
    assert half.args_match == 0.5  # url differs; key present (any value, even null)
    none = score_plan(t, ps(("web.scrape", {}), ("helmdeck.memory_store", {"value": "x"})))
    assert none.args_match == 0.0


def test_args_match_non_string_values_compared_as_text():
    t = task([gs("github.get_issue", repo="pallets/flask", issue_number=4127)])
    s = score_plan(t, ps(("github.get_issue", {"repo": "Pallets/Flask", "issue_number": "4127"})))
    assert s.args_match == 1.0
    s2 = score_plan(t, ps(("github.get_issue", {"repo": "pallets/flask", "issue_number": 4128})))
    assert s2.args_match == 0.5


def test_args_match_looks_at_the_matching_tool_only():
    t = task([gs("web.scrape", url="u")])
    s = score_plan(t, ps(("image.generate", {"url": "u"})))
    assert s.args_match == 0.0


def test_args_match_pipeline_inputs():
    t = task([gs(PIPELINE_RUN_TOOL, id=PIPE, inputs=None)])
    yes = score_plan(t, ps((PIPELINE_RUN_TOOL, {"id": PIPE, "inputs": {"brief": "b"}})))
    no = score_plan(t, ps((PIPELINE_RUN_TOOL, {"id": PIPE})))
    assert yes.args_match == 1.0
    assert no.args_match == 0.0
