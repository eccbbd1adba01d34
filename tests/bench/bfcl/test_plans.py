"""Plan accuracy from recorded traces, and a live run scored from the trace files it wrote."""

from __future__ import annotations

import json

from helmdeck_dspy.bench.bfcl.load import load_bfcl
from helmdeck_dspy.bench.bfcl.flow import run_bfcl
from helmdeck_dspy.bench.bfcl.plans import score_traces
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces


def _plan_record(i: int, task_id: str, steps: list[dict], variant: str = "full_steps") -> TraceRecord:
    content = json.dumps({"reasoning": "r", "complexity": "multi-step", "steps": steps})
    return TraceRecord(id=f"r{i}", model="m", prompt_variant=variant, task_id=task_id, intent="x", content=content,
                       finish_reason="stop")


def test_trace_records_are_scored_against_their_task(bfcl_dir, tmp_path):
    data = load_bfcl(bfcl_dir)
    convert = {"tool": "money.convert", "args": {"amount": 10, "source": "EUR", "target": "JPY"}}
    other = {**convert, "args": {**convert["args"], "amount": 25}}
    facts = {"tool": "landmark_facts", "args": {"landmark": "eiffel tower", "facts": ["height", "opening date"]}}
    records = [
        _plan_record(0, "parallel_0", [other, convert]),
        _plan_record(1, "parallel_1", [facts]),
        _plan_record(2, "parallel_0", [convert, other], variant="single_pick"),  # only one step is kept
        _plan_record(3, "parallel_1", [{"tool": "rm_rf", "args": {}}]),  # not in the catalog: demoted
        _plan_record(4, "not_a_question", [facts]),
        TraceRecord(id="r5", task_id="parallel_1", content="<think>hmm", finish_reason="length", prompt_variant="full_steps"),
    ]
    path = tmp_path / "t.jsonl"
    write_jsonl_traces(records, path)
    acc = score_traces(data, path)
    assert acc.unscored == 1
    assert [s.exact for s in acc.scores] == [True, True, False, False, False]
    assert acc.scores[2].predicted_calls == 1 and acc.scores[2].matched_calls == 1
    assert acc.failures == {"length_truncated": 1}
    assert acc.summary.n == 5 and acc.summary.exact == 2


def test_sim_run_records_traces_that_score_the_same(bfcl_dir, tmp_path):
    data = load_bfcl(bfcl_dir)
    rec = tmp_path / "run.jsonl"
    report = run_bfcl(bfcl_dir, rankers=["bm25"], lm_spec="sim:frontier-like", model="anthropic/claude-sonnet-4-6",
                      record_path=rec)
    live = report.plan_accuracy[0]
    assert live.summary.n == 2 and live.source == "sim:frontier-like"
    replayed = score_traces(data, rec)
    assert [s.model_dump() for s in replayed.scores] == [s.model_dump() for s in live.scores]
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert {line["task_id"] for line in lines if line.get("call", "plan") == "plan"} == {"parallel_0", "parallel_1"}
    assert {line["temperature"] for line in lines} == {0.0}  # the study engine's sampling, written down
