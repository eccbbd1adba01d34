"""traces record: the planner over gold tasks with any LM spec, every exchange recorded."""

from __future__ import annotations

import json

from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.io import read_traces
from helmdeck_dspy.traces.runs import record


def test_record_with_a_sim_spec_then_replay_it(tmp_path):
    tasks = load_tasks("dev")[:4]
    first = tmp_path / "first.jsonl"
    n = record("openrouter/deepseek/deepseek-v3.2", "sim:mid-tier", tasks, first, variants=("full_steps",))
    recs = [r for r in read_traces(first) if r.call == "plan"]
    assert n == 4 and [r.task_id for r in recs] == [t.id for t in tasks]
    assert {r.source for r in recs} == {"sim:mid-tier"} and {r.tier for r in recs} == {"B"}
    again = tmp_path / "again.jsonl"
    record("openrouter/deepseek/deepseek-v3.2", f"replay:{first}", tasks, again, variants=("full_steps",))
    replayed = [r for r in read_traces(again) if r.call == "plan"]
    assert {r.source for r in replayed} == {"replay"}
    assert [r.content for r in replayed] == [r.content for r in recs]


def test_cli_record(tmp_path):
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(cli, ["traces", "record", "-m", "anthropic/claude-sonnet-4-6", "--lm", "sim:frontier-like",
                                      "--n", "3", "--variant", "single_pick", "--out", str(out)])
    assert result.exit_code == 0 and "wrote 3 plan records" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["prompt_variant"] for r in rows] == ["single_pick"] * 3
