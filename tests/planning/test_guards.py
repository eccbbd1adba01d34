"""Post-model guards: helmdeck's normalizePlanSteps / normalizeComplexity / renderRewrittenPrompt
(anchor report §1.9 and the plan_test.go cases in §2)."""

from __future__ import annotations

import pytest
from helmdeck_dspy.signatures.types import PlanStep

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, UNKNOWN_TOOL
from helmdeck_dspy.planning.guards import (
    REASON_BAD_PIPELINE,
    REASON_NO_TOOL,
    REASON_SELF_CALL,
    REWRITE_FOOTER,
    GuardedStep,
    derive_complexity,
    guard_steps,
    render_rewritten_prompt,
)

PACKS = ["helmdeck.memory_store", "blog.rewrite_for_audience", "image.generate", "helmdeck.route"]
PIPELINES = ["builtin.brief-rewrite-blog", "builtin.doc-rewrite-blog"]
# The full catalog's ids: pack names and pipeline ids (helmdeck.plan is itself a pack upstream,
# so it is in the catalog and must still be refused).
CATALOG_IDS = frozenset([*PACKS, *PIPELINES, "helmdeck.plan"])
PIPELINE_IDS = frozenset(PIPELINES)


def step(tool: str, args: dict | None = None, rationale: str = "", order: int | None = None) -> PlanStep:
    return PlanStep(order=order, tool=tool, args=args or {}, rationale=rationale)


def guard(*steps: PlanStep) -> list[GuardedStep]:
    return guard_steps(list(steps), CATALOG_IDS, PIPELINE_IDS)


# --------------------------------------------------------------------------------------------
# Kept steps
# --------------------------------------------------------------------------------------------


def test_known_pack_is_kept_unchanged():
    [g] = guard(step("helmdeck.memory_store", {"key": "k", "value": "v"}, "Save the fact."))
    assert g == GuardedStep(
        order=1, tool="helmdeck.memory_store", args={"key": "k", "value": "v"}, rationale="Save the fact."
    )
    assert g.demoted is False and g.model_tool is None


def test_pipeline_run_with_known_id_is_kept():
    args = {"id": "builtin.brief-rewrite-blog", "inputs": {"brief": "b"}}
    [g] = guard(step(PIPELINE_RUN_TOOL, args, "Run the pipeline."))
    assert g.tool == PIPELINE_RUN_TOOL
    assert g.args == args
    assert not g.demoted


def test_bare_pipeline_id_as_tool_is_accepted():
    [g] = guard(step("builtin.doc-rewrite-blog", {"inputs": {}}))
    assert g.tool == "builtin.doc-rewrite-blog"
    assert not g.demoted


def test_helmdeck_route_is_not_blocked():
    [g] = guard(step("helmdeck.route", {"user_intent": "x"}, "Let route pick."))
    assert g.tool == "helmdeck.route"
    assert not g.demoted
    assert g.rationale == "Let route pick."


def test_tool_and_rationale_are_trimmed():
    [g] = guard(step("  image.generate \n", {}, "  Draw it.  "))
    assert g.tool == "image.generate"
    assert g.rationale == "Draw it."
    assert not g.demoted


# --------------------------------------------------------------------------------------------
# Demotions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "reason"),
    [
        ("", {"key": "k"}, REASON_NO_TOOL),
        ("   ", {"key": "k"}, REASON_NO_TOOL),
        ("helmdeck.plan", {"user_intent": "again"}, REASON_SELF_CALL),
        ("helmdeck__plan", {"user_intent": "again"}, REASON_SELF_CALL),
        (" helmdeck.plan ", {}, REASON_SELF_CALL),
        (PIPELINE_RUN_TOOL, {"inputs": {"brief": "b"}}, REASON_BAD_PIPELINE),
        (PIPELINE_RUN_TOOL, {"id": ""}, REASON_BAD_PIPELINE),
        (PIPELINE_RUN_TOOL, {"id": 7}, REASON_BAD_PIPELINE),
        (PIPELINE_RUN_TOOL, {"id": "builtin.does-not-exist"}, REASON_BAD_PIPELINE),
        (PIPELINE_RUN_TOOL, {"id": "blog.rewrite_for_audience"}, REASON_BAD_PIPELINE),
        ("youtube.transcript", {"url": "u"}, 'tool "youtube.transcript" not in catalog'),
    ],
)
def test_demotions(tool, args, reason):
    [g] = guard(step(tool, args, "Because."))
    assert g.tool == UNKNOWN_TOOL
    assert g.demoted is True
    assert g.model_tool == tool
    assert g.args == args, "args are kept on a demoted step"
    assert g.rationale == f"gap: {reason} — model said: Because."


def test_reason_texts_match_upstream():
    assert REASON_NO_TOOL == "step had no tool id"
    assert REASON_SELF_CALL == "helmdeck.plan cannot call itself; rejected"
    assert "args.id missing or not" in REASON_BAD_PIPELINE


def test_demoted_rationale_without_model_rationale():
    [g] = guard(step("youtube.transcript", {}, "   "))
    assert g.rationale == 'gap: tool "youtube.transcript" not in catalog'


def test_unknown_tool_reason_uses_trimmed_name():
    [g] = guard(step("  made.up \t", {}, ""))
    assert g.rationale == 'gap: tool "made.up" not in catalog'


def test_plan_test_four_step_mix():
    """plan_test.go: known / youtube.transcript / helmdeck.plan / pipeline-run builtin.does-not-exist."""
    out = guard(
        step("helmdeck.memory_store", {"key": "a"}, "save"),
        step("youtube.transcript", {}, "fetch"),
        step("helmdeck.plan", {}, "recurse"),
        step(PIPELINE_RUN_TOOL, {"id": "builtin.does-not-exist"}, "run"),
    )
    assert [s.tool for s in out] == ["helmdeck.memory_store", UNKNOWN_TOOL, UNKNOWN_TOOL, UNKNOWN_TOOL]
    assert "not in catalog" in out[1].rationale
    assert "cannot call itself" in out[2].rationale
    assert "pipeline-run args.id" in out[3].rationale
    assert [s.order for s in out] == [1, 2, 3, 4]


# --------------------------------------------------------------------------------------------
# Renumbering
# --------------------------------------------------------------------------------------------


def test_renumbered_in_given_order_ignoring_model_order():
    out = guard(
        step("image.generate", order=7),
        step("helmdeck.memory_store", order=1),
        step("made.up", order=7),
        step("blog.rewrite_for_audience", order=None),
        step("helmdeck.route", order=-3),
    )
    assert [s.order for s in out] == [1, 2, 3, 4, 5]
    assert [s.tool for s in out] == [
        "image.generate", "helmdeck.memory_store", UNKNOWN_TOOL, "blog.rewrite_for_audience", "helmdeck.route",
    ]


def test_no_steps_gives_no_steps():
    assert guard_steps([], CATALOG_IDS, PIPELINE_IDS) == []


# --------------------------------------------------------------------------------------------
# Complexity
# --------------------------------------------------------------------------------------------


def g(tool: str, args: dict | None = None, order: int = 1) -> GuardedStep:
    return GuardedStep(order=order, tool=tool, args=args or {})


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([], "single-action"),
        ([g("helmdeck.memory_store")], "single-action"),
        ([g(PIPELINE_RUN_TOOL, {"id": "builtin.brief-rewrite-blog"})], "pipeline-direct"),
        ([g(UNKNOWN_TOOL)], "single-action"),
        ([g("helmdeck.memory_store"), g("image.generate", order=2)], "pack-chain"),
        ([g(PIPELINE_RUN_TOOL, {"id": "x"}), g(PIPELINE_RUN_TOOL, {"id": "y"}, 2)], "pack-chain"),
        ([g(UNKNOWN_TOOL), g(UNKNOWN_TOOL, order=2), g("image.generate", order=3)], "pack-chain"),
    ],
)
def test_derive_complexity(steps, expected):
    assert derive_complexity(steps) == expected


def test_complexity_from_guarded_unknown_pipeline_is_single_action():
    # a pipeline run with a bad id is demoted first, so it is no longer pipeline-direct
    out = guard(step(PIPELINE_RUN_TOOL, {"id": "nope"}))
    assert derive_complexity(out) == "single-action"


# --------------------------------------------------------------------------------------------
# rewritten_prompt
# --------------------------------------------------------------------------------------------


def test_render_rewritten_prompt_exact():
    steps = [
        GuardedStep(order=1, tool="helmdeck.memory_store", args={"key": "launch", "value": "v1"}, rationale="Save it."),
        GuardedStep(order=2, tool="image.generate", args={}, rationale="Draw the hero image."),
        GuardedStep(order=3, tool=PIPELINE_RUN_TOOL, args={"id": "builtin.brief-rewrite-blog", "inputs": {"n": 2}}),
        GuardedStep(order=4, tool="helmdeck.route"),
    ]
    expected = (
        "Plan for: write the launch post\n"
        'Step 1: call helmdeck.memory_store with args {"key":"launch","value":"v1"} — Save it.\n'
        "Step 2: call image.generate — Draw the hero image.\n"
        'Step 3: call helmdeck__pipeline-run with args {"id":"builtin.brief-rewrite-blog","inputs":{"n":2}}\n'
        "Step 4: call helmdeck.route\n"
        "Execute the steps in order. Stop and surface any tool error to the user before proceeding to the next step."
    )
    assert render_rewritten_prompt("  write the launch post \n", steps) == expected


def test_render_rewritten_prompt_shape():
    steps = guard(step("image.generate", {}, "Draw."), step("made.up", {"q": "é"}, ""))
    text = render_rewritten_prompt("Draw a thing", steps)
    lines = text.split("\n")
    assert lines[0] == "Plan for: Draw a thing"
    assert lines[1] == "Step 1: call image.generate — Draw."
    assert lines[2] == 'Step 2: call unknown with args {"q":"é"} — gap: tool "made.up" not in catalog'
    assert lines[-1] == REWRITE_FOOTER
    assert REWRITE_FOOTER == (
        "Execute the steps in order. Stop and surface any tool error to the user before proceeding to the next step."
    )
    assert not text.endswith("\n")
    assert " with args" not in lines[1]


def test_render_rewritten_prompt_empty_for_no_steps():
    assert render_rewritten_prompt("anything", []) == ""


def test_render_uses_guarded_order():
    out = guard(step("image.generate", order=9), step("helmdeck.route", order=4))
    text = render_rewritten_prompt("x", out)
    assert "Step 1: call image.generate" in text
    assert "Step 2: call helmdeck.route" in text
    assert "Step 9" not in text and "Step 4" not in text
