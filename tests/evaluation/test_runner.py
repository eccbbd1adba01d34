"""evaluate(): the Done-when figures, grouping, gold scoring, errors, formats and workers."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.evaluation.runner import evaluate
from tests.conftest import PROJECT_ROOT

PUBLISHED = PROJECT_ROOT / "eval" / "traces" / "published-adr053.jsonl"
NEMO = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})
PIPE = json.dumps({"steps": [{"order": 1, "tool": "helmdeck__pipeline-run", "args": {"id": "builtin.scrape-deck"}}]})


def write(tmp_path, rows, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps({"id": f"r{i}", **r}) + "\n" for i, r in enumerate(rows)))
    return p


def test_published_nemotron_group_is_three_of_six_with_two_length():
    r = evaluate([PUBLISHED], progress=False)
    (g,) = r.groups
    assert (g.model, g.prompt_variant, g.n) == (NEMO, "full_steps", 6)
    assert g.strict == 3 and g.tolerant == 3
    assert g.finish_reason_counts == {"stop": 4, "length": 2}
    assert g.failure_cause_counts == {"length_truncated": 2, "reasoning_only": 1}
    assert g.reasoning_leak_count == 1 and g.from_label == 6
    assert g.completion_tokens.max == 1547 and g.completion_tokens.p50 == pytest.approx(655)
    assert g.latency_ms.max == 94958 and g.max_tokens_counts == {"600": 6}
    assert g.strict_ci[0] == pytest.approx(0.1876, abs=1e-3)


def test_recorded_llamastack_set_reproduces_its_finish_reasons(shared_dir, tmp_path):
    from helmdeck_dspy.traces.importers import import_traces
    from helmdeck_dspy.traces.io import save_traces

    out = tmp_path / "ls.jsonl"
    save_traces(import_traces("llamastack", shared_dir / "data/recorded/llamastack-chat-completions.jsonl"), out)
    r = evaluate([out], progress=False)
    assert r.n_records == 2599
    totals: dict[str, int] = {}
    for g in r.groups:
        for k, v in g.finish_reason_counts.items():
            totals[k] = totals.get(k, 0) + v
    assert totals == {"stop": 2145, "tool_calls": 440, "length": 14}
    assert sum(g.reasoning_tag_kinds.get("think", 0) for g in r.groups) == 12
    assert sum(t.n for t in r.tiers) == 2599


def test_groups_by_model_and_variant_with_rates_and_comparison(tmp_path):
    rows = (
        [{"model": "m/x", "prompt_variant": "full_steps", "tier": "C", "content": PLAN, "finish_reason": "stop"}] * 4
        + [{"model": "m/x", "prompt_variant": "full_steps", "tier": "C", "content": PLAN[:20], "finish_reason": "length"}] * 6
        + [{"model": "m/x", "prompt_variant": "single_pick", "tier": "C", "content": PLAN, "finish_reason": "stop"}] * 9
        + [{"model": "m/x", "prompt_variant": "single_pick", "tier": "C", "content": "{'steps': [{'tool': 'a'}]}",
            "finish_reason": "stop"}]
    )
    r = evaluate([write(tmp_path, rows)], progress=False)
    full, single = r.groups
    assert (full.prompt_variant, full.n, full.strict, full.length_rate) == ("full_steps", 10, 4, 0.6)
    assert (single.n, single.strict, single.tolerant) == (10, 9, 10)
    (c,) = r.comparisons
    assert c.strict_diff == pytest.approx(0.5)
    assert c.strict_diff_ci[0] > 0  # the interval excludes zero
    (tier,) = r.tiers
    assert tier.tier == "C" and tier.n == 20


def test_gold_scoring_uses_the_task(tmp_path):
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(json.dumps({
        "id": "t-1", "split": "dev", "category": "pipeline-direct", "intent": "slides from https://example.org",
        "steps": [{"tool": "helmdeck__pipeline-run", "args": {"id": "builtin.scrape-deck"}}],
        "complexity": "pipeline-direct",
    }) + "\n")
    from helmdeck_dspy.tasks import load_tasks

    rows = [
        {"model": "m/y", "prompt_variant": "full_steps", "tier": "B", "task_id": "t-1", "content": PIPE, "finish_reason": "stop"},
        {"model": "m/y", "prompt_variant": "full_steps", "tier": "B", "task_id": "t-1", "content": PLAN, "finish_reason": "stop"},
        {"model": "m/y", "prompt_variant": "full_steps", "tier": "B", "task_id": "t-1", "content": "", "finish_reason": "length"},
    ]
    r = evaluate([write(tmp_path, rows)], tasks=load_tasks(path=tasks_file), progress=False)
    gold = r.groups[0].gold
    assert gold.n == 3 and gold.exact_rate == pytest.approx(1 / 3)
    assert gold.plan_score_mean == pytest.approx((1.0 + 0.0 + 0.0) / 3, abs=0.2)
    assert gold.plan_score_mean < 0.5 and gold.valid_tool_rate == 1.0


def test_missing_tier_and_variant_come_from_the_budget_table(tmp_path):
    r = evaluate([write(tmp_path, [{"model": "anthropic/claude-sonnet-4-6", "content": PLAN, "finish_reason": "stop"}])],
                 progress=False)
    assert (r.groups[0].tier, r.groups[0].prompt_variant) == ("A", "full_steps")


def test_http_failures_are_classified(tmp_path):
    rows = [{"model": "m/z", "http_status": 429, "error": "Too Many Requests"},
            {"model": "m/z", "http_status": 502, "error": "bad gateway"}]
    r = evaluate([write(tmp_path, rows)], progress=False)
    assert r.groups[0].failure_cause_counts == {"rate_limited": 1, "transport_error": 1}


def test_invalid_lines_fail_with_file_and_line_or_are_skipped(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"id": "a", "model": "m/a", "content": PLAN}) + "\nnot json\n"
                 + json.dumps({"id": "b", "model": "m/a", "completion_tokens": "lots"}) + "\n")
    with pytest.raises(DataFileError) as err:
        evaluate([p], progress=False)
    assert f"{p}:2:" in str(err.value)
    r = evaluate([p], on_error="skip", progress=False)
    assert r.n_records == 1 and r.n_skipped == 2
    assert any(f"{p}:3:" in e and "completion_tokens" in e for e in r.errors)


def test_unknown_outcome_label_is_an_invalid_record(tmp_path):
    p = write(tmp_path, [{"model": "m/a", "outcome_label": "meh"}])
    with pytest.raises(DataFileError, match="outcome_label"):
        evaluate([p], progress=False)


def test_two_workers_give_the_same_report(tmp_path):
    rows = [{"model": f"m/{i % 3}", "prompt_variant": "full_steps", "tier": "C", "content": PLAN if i % 4 else PLAN[:9],
             "finish_reason": "stop" if i % 4 else "length", "completion_tokens": i} for i in range(5000)]
    p = write(tmp_path, rows)
    one = evaluate([p], progress=False, workers=1)
    two = evaluate([p], progress=False, workers=2)
    strip = {"created_at", "seconds", "workers"}
    assert one.model_dump(exclude=strip) == two.model_dump(exclude=strip)


def test_worker_errors_carry_file_and_line(tmp_path):
    rows = [{"model": "m/a", "content": PLAN}] * 2500
    p = write(tmp_path, rows)
    with p.open("a") as f:
        f.write("{broken\n")
    with pytest.raises(DataFileError) as err:
        evaluate([p], progress=False, workers=2)
    assert err.value.line == 2501


def test_parquet_and_hf_dataset_inputs(tmp_path):
    from helmdeck_dspy.traces.io import load_traces, save_traces

    src = write(tmp_path, [{"model": "m/a", "content": PLAN, "finish_reason": "stop", "custom": 1}] * 3
                + [{"model": "m/a", "content": "", "finish_reason": "length"}])
    recs = list(load_traces(src))
    save_traces(recs, tmp_path / "t.parquet")
    save_traces(recs, tmp_path / "ds")
    base = evaluate([src], progress=False)
    for other in (tmp_path / "t.parquet", tmp_path / "ds"):
        rep = evaluate([other], progress=False)
        assert rep.groups[0].model_dump() == base.groups[0].model_dump()
    assert list(load_traces(tmp_path / "t.parquet"))[0].model_extra == {"custom": 1}


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataFileError, match="no such file"):
        evaluate([tmp_path / "nope.jsonl"], progress=False)


def test_a_byte_order_mark_on_the_first_line_is_accepted_by_every_reader(tmp_path):
    from helmdeck_dspy.evaluation.runner import evaluate
    from helmdeck_dspy.traces.io import load_traces

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "r1", "model": "m/x", "content": "{}"}\n{"id": "r2", "model": "m/x", "content": "{}"}\n')
    assert [r.id for r in load_traces(path)] == ["r1", "r2"]
    for workers in (1, 2):
        report = evaluate([path], workers=workers, progress=False)
        assert report.n_records == 2 and report.n_skipped == 0


def test_a_runaway_the_client_stopped_is_no_cap_or_prompt_size_evidence(tmp_path):
    base = {"model": "m/x", "prompt_variant": "plain", "tier": "C", "max_tokens": 1500, "prompt_tokens": 900}
    cut = [{**base, "content": "[" + PLAN[:30], "finish_reason": "length", "completion_tokens": 1500}] * 2
    stopped = [{**base, "content": "[" + PLAN[:30], "finish_reason": "length", "completion_tokens": 200,
                "answer_cut": True}] * 3
    r = evaluate([write(tmp_path, cut + stopped)], progress=False)
    (g,) = r.groups
    assert g.failure_cause_counts == {"length_truncated": 5}
    assert g.length_below_cap == 3  # not the cap's doing: the cap rule sees 2 cut-offs
    (bucket,) = g.length_by_prompt_tokens
    assert (bucket["length"], bucket["length_below_cap"]) == (5, 0)  # nor a prompt crowding the answer
