"""Source kinds and LM calls per plan in the evaluation's outputs.

Two groups of one model and different kinds stay apart in the groups, tier roll-ups, comparisons,
report.json, report.md, the CLI table, the plots, MLflow's names and the checkpoint; a request's
plan and filter records are counted together.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helmdeck_dspy.evaluation import runner
from helmdeck_dspy.evaluation.checkpoint import EvalState
from helmdeck_dspy.evaluation.markdown import render_markdown
from helmdeck_dspy.evaluation.runner import build_context, evaluate, process_chunk
from helmdeck_dspy.traces.io import iter_raw_rows

PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})
MODEL = "acme/kx"


def write(tmp_path, rows, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps({"id": f"r{i}", **r}) + "\n" for i, r in enumerate(rows)))
    return p


def two_kinds(tmp_path):
    """One model, recorded live (every plan parses) and simulated (none does), both variants."""
    rows = []
    for source, content in (("sim:foo", "not a plan"), ("live", PLAN)):
        for variant in ("full_steps", "single_pick"):
            rows += [{"source": source, "model": MODEL, "prompt_variant": variant, "tier": "C", "task_id": f"t-{i}",
                      "intent": f"intent {i}", "content": content, "finish_reason": "stop"} for i in range(10)]
    return write(tmp_path, rows)


@pytest.fixture
def report(tmp_path):
    return evaluate([two_kinds(tmp_path)], progress=False)


def test_groups_tiers_and_comparisons_keep_kinds_apart(report):
    assert [(g.kind, g.model, g.prompt_variant) for g in report.groups] == [
        ("live", MODEL, "full_steps"), ("live", MODEL, "single_pick"),
        ("sim:foo", MODEL, "full_steps"), ("sim:foo", MODEL, "single_pick"),
    ]  # measured kinds first
    assert [(g.n, g.strict_rate) for g in report.groups] == [(10, 1.0), (10, 1.0), (10, 0.0), (10, 0.0)]
    assert [(t.kind, t.tier, t.n, t.strict_rate) for t in report.tiers] == [("live", "C", 20, 1.0), ("sim:foo", "C", 20, 0.0)]
    assert [(c.kind, c.model, c.full_steps_n) for c in report.comparisons] == [("live", MODEL, 10), ("sim:foo", MODEL, 10)]
    assert report.kinds == {"live": 20, "sim:foo": 20}
    data = json.loads(report.model_dump_json())
    assert data["schema_version"] == 2
    assert [g["kind"] for g in data["groups"]] == ["live", "live", "sim:foo", "sim:foo"]
    assert [t["kind"] for t in data["tiers"]] == ["live", "sim:foo"]
    assert [c["kind"] for c in data["comparisons"]] == ["live", "sim:foo"]


def test_markdown_names_the_kind_in_every_row_and_heading(report):
    md = render_markdown(report)
    for kind in ("live", "sim:foo"):
        for variant in ("full_steps", "single_pick"):
            assert f"| {MODEL} · {kind} | {variant} | C | 10 |" in md  # groups table
            assert f"### {MODEL} · {kind} — {variant}" in md  # the per-group heading
            assert f"| {MODEL} · {kind} | {variant} | 10 | 10 (10 + 0) | 1.00 / 1 | 0 |" in md  # calls per plan
        assert f"| C | {kind} | 20 |" in md  # tiers
        assert f"| {MODEL} · {kind} | 10 / 10 |" in md  # comparisons
    assert f"| {MODEL} |" not in md  # never the model alone
    assert "**2 of 4 groups are simulated**" in md
    assert "- `sim:foo` (20 records): SIMULATED" in md and "- `live` (20 records): answered by the model" in md


def test_cli_table_shows_the_kind_and_says_which_groups_are_simulated(tmp_path):
    from helmdeck_dspy.cli.app import cli

    r = CliRunner().invoke(cli, ["eval", str(two_kinds(tmp_path)), "--no-progress"])
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if line.startswith(MODEL)]
    assert len(rows) == 4
    assert [row.split("  ")[0].strip() for row in rows] == [f"{MODEL} · live"] * 2 + [f"{MODEL} · sim:foo"] * 2
    assert "by kind: live 20, sim:foo 20" in r.output
    assert "simulated (sim:foo): the simulator's output under a real model's name" in r.output
    assert f"single_pick - full_steps, {MODEL} · live: +0.0 pts" in r.output
    assert f"single_pick - full_steps, {MODEL} · sim:foo: +0.0 pts" in r.output


def test_mlflow_names_carry_the_kind_and_never_pool_kinds(report):
    from helmdeck_dspy.tracking.mlflow import (
        eval_metrics,
        eval_params,
        source_kind_tags,
    )

    m = eval_metrics(report)
    assert m[f"strict_rate.live.{MODEL}.full_steps"] == 1.0
    assert m[f"strict_rate.sim_foo.{MODEL}.full_steps"] == 0.0
    assert m["all.live.n"] == m["all.sim_foo.n"] == 20 and m["all.live.strict_rate"] == 1.0
    assert m["tier_C.live.n"] == m["tier_C.sim_foo.n"] == 20
    assert f"strict_diff.live.{MODEL}" in m and f"strict_diff.sim_foo.{MODEL}" in m
    assert not [k for k in m if k.startswith("all.") and k.count(".") == 1]  # no pooled figure
    assert eval_params(report)["kinds"] == "live 20, sim:foo 20"
    assert source_kind_tags(report) == {"helmdeck_dspy.source_kinds": "live, sim:foo", "helmdeck_dspy.simulated": "some"}


def test_plots_draw_one_block_per_kind_labelled_with_it(report, tmp_path):
    from helmdeck_dspy.evaluation.plots import (
        PLOT_FILES,
        SIM_LABEL_COLOR,
        _layout,
        write_plots,
    )

    layout = _layout(report.groups)
    assert len(layout.model_labels) == 2
    live, sim = layout.model_labels
    assert live.endswith("live · tier C") and sim.endswith("sim:foo (simulated) · tier C")
    assert layout.label_colors[1] == SIM_LABEL_COLOR != layout.label_colors[0]
    assert write_plots(report, tmp_path) == list(PLOT_FILES)


def test_checkpoint_state_keeps_kinds_and_calls_apart(tmp_path):
    path = two_kinds(tmp_path)
    res = process_chunk(str(path), list(iter_raw_rows(path, "jsonl")), "fail", build_context())
    assert sorted(res.groups) == [("live", MODEL, "full_steps"), ("live", MODEL, "single_pick"),
                                  ("sim:foo", MODEL, "full_steps"), ("sim:foo", MODEL, "single_pick")]
    back = EvalState.from_dict(json.loads(EvalState(groups=res.groups).to_json("key")))
    assert sorted(back.groups) == sorted(res.groups)
    for key, agg in res.groups.items():
        assert back.groups[key].n == agg.n and back.groups[key].strict == agg.strict
        assert back.groups[key].requests == agg.requests and len(agg.requests) == 10


# ------------------------------------------------------------------------ LM calls per plan


def calls_rows():
    base = {"source": "live", "model": "m/c", "prompt_variant": "full_steps", "tier": "C"}
    return [
        {**base, "task_id": "t1", "intent": "a", "call": "filter", "content": '{"ids": []}', "finish_reason": "stop"},
        {**base, "task_id": "t1", "intent": "a", "content": PLAN, "finish_reason": "stop"},
        {**base, "task_id": "t2", "intent": "b", "error": "DeadlineExceeded: attempt exceeded its 120 s deadline"},
        {**base, "task_id": "t3", "intent": "c", "content": PLAN, "finish_reason": "stop"},
        {**base, "content": PLAN, "finish_reason": "stop"},  # names no request: one of its own
        {**base, "task_id": "t2", "intent": "b", "content": PLAN, "finish_reason": "stop"},  # the retry, later
        {**base, "content": PLAN, "finish_reason": "stop"},
        {**base, "source": "sim:x", "task_id": "t1", "intent": "a", "content": PLAN, "finish_reason": "stop"},
    ]


def test_calls_per_plan_counts_filter_calls_and_repeated_plan_calls(tmp_path):
    r = evaluate([write(tmp_path, calls_rows())], progress=False)
    live, sim = r.groups
    assert (live.kind, sim.kind) == ("live", "sim:x")
    assert live.n == 6  # plan records; the filter call is not a plan completion
    c = live.calls_per_plan
    # t1: filter + plan = 2 calls; t2: two plan calls (a repeat); t3: 1; two plan records naming no request: 1 each
    assert (c.requests, c.identified, c.calls, c.plan_calls, c.filter_calls) == (5, 3, 7, 6, 1)
    assert c.mean == pytest.approx(7 / 5) and c.max == 2 and c.repeated == 1
    # the simulated record of the same task and intent is another group's request
    assert (sim.calls_per_plan.requests, sim.calls_per_plan.calls, sim.calls_per_plan.repeated) == (1, 1, 0)
    assert "| m/c · live | full_steps | 5 | 7 (6 + 1) | 1.40 / 2 | 1 |" in render_markdown(r)
    data = json.loads(r.model_dump_json())["groups"][0]["calls_per_plan"]
    assert data == {"requests": 5, "identified": 3, "calls": 7, "plan_calls": 6, "filter_calls": 1, "mean": 1.4,
                    "max": 2, "repeated": 1}


def test_calls_per_plan_are_the_same_when_a_request_spans_chunks_and_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK_RECORDS", 2)
    path = write(tmp_path, calls_rows() * 3)  # every request three times over: t1 is 3 filter + 3 plan calls
    one = evaluate([path], progress=False, workers=1)
    two = evaluate([path], progress=False, workers=2)
    assert [g.calls_per_plan for g in one.groups] == [g.calls_per_plan for g in two.groups]
    c = one.groups[0].calls_per_plan
    assert (c.requests, c.calls, c.max, c.repeated) == (3 + 6, 21, 6, 3)


def test_the_comparison_pairs_requests_answered_under_both_variants(tmp_path):
    from helmdeck_dspy.evaluation.runner import evaluate
    from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces

    plan = '{"steps": [{"order": 1, "tool": "web.scrape", "args": {}, "rationale": "r"}], "complexity": "single-action"}'
    recs = []
    for i in range(12):
        for variant, ok in (("full_steps", i < 4), ("single_pick", i < 10)):
            recs.append(TraceRecord(id=f"{variant}-{i}", model="m/x", tier="C", prompt_variant=variant,
                                    task_id=f"t{i}", intent=f"intent {i}", content=plan if ok else "no plan here",
                                    finish_reason="stop"))
    recs.append(TraceRecord(id="unpaired", model="m/x", tier="C", prompt_variant="single_pick", task_id="t99",
                            intent="only single", content=plan, finish_reason="stop"))
    path = tmp_path / "t.jsonl"
    write_jsonl_traces(recs, path)
    (c,) = evaluate([path], progress=False).comparisons
    assert c.paired_n == 12 and c.single_pick_n == 13
    assert c.paired_strict_diff == pytest.approx(6 / 12)
    lo, hi = c.paired_strict_diff_ci
    assert 0 < lo < 0.5 < hi
