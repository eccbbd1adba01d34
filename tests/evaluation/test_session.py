"""run_eval(): default trace sets, output files, the checkpoint's life cycle, paths for catalog and tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helmdeck_dspy.errors import DataFileError, InputError
from helmdeck_dspy.evaluation import runner, session
from helmdeck_dspy.evaluation.checkpoint import checkpoint_path
from helmdeck_dspy.evaluation.session import bundled_trace_paths, run_eval
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces
from tests.conftest import PROJECT_ROOT

PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})
VOLATILE = {"created_at", "seconds"}


def traces(path: Path, n: int = 300) -> Path:
    write_jsonl_traces([TraceRecord(id=f"r{i}", model=f"m/{i % 2}", prompt_variant="full_steps", tier="C",
                              content=PLAN if i % 3 else PLAN[:12], finish_reason="stop" if i % 3 else "length",
                              completion_tokens=100 + i) for i in range(n)], path)
    return path


def stable(report) -> dict:
    return report.model_dump(mode="json", exclude=VOLATILE)


def _interrupted_run(monkeypatch, path, out, *, after: int, **kw) -> None:
    """Run ``run_eval`` and stop it with Ctrl-C when it folds its ``after``-th chunk."""
    real = runner.merge_groups
    calls = {"n": 0}

    def merge(into, other):
        calls["n"] += 1
        if calls["n"] == after:
            raise KeyboardInterrupt
        real(into, other)

    with monkeypatch.context() as m:
        m.setattr(runner, "merge_groups", merge)
        with pytest.raises(KeyboardInterrupt):
            run_eval([path], out_dir=out, **kw)


def test_no_paths_means_the_bundled_trace_sets():
    run = run_eval([])
    assert [i.path for i in run.report.inputs] == [str(p) for p in bundled_trace_paths()]
    assert bundled_trace_paths() and all(p.parent == PROJECT_ROOT / "eval" / "traces" for p in bundled_trace_paths())
    assert run.plots == [] and run.checkpoint is None and run.mlflow_run_id is None


def test_out_dir_gets_the_report_and_plots_and_no_checkpoint(tmp_path):
    out = tmp_path / "rep"
    run = run_eval([traces(tmp_path / "t.jsonl")], out_dir=out)
    assert run.checkpoint == checkpoint_path(out) and not run.checkpoint.exists()
    assert run.plots == ["parse_success.png", "finish_reasons.png", "completion_tokens.png"]
    assert all((out / p).is_file() for p in run.plots)
    assert json.loads((out / "report.json").read_text())["n_records"] == run.report.n_records == 300
    assert "parse_success.png" in (out / "report.md").read_text()


def test_catalog_and_tasks_may_be_paths(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({
        "id": "t-1", "split": "dev", "category": "single-action", "intent": "scrape https://example.org",
        "steps": [{"tool": "web.scrape"}], "complexity": "single-action",
    }) + "\n")
    path = tmp_path / "t.jsonl"
    write_jsonl_traces([TraceRecord(id="a", model="m/x", prompt_variant="full_steps", tier="C", task_id="t-1",
                              content=PLAN, finish_reason="stop")], path)
    run = run_eval([path], catalog=PROJECT_ROOT / "eval" / "catalog" / "routing-guide.json", tasks=tasks)
    assert run.report.tasks == 1
    assert run.report.groups[0].gold.n == 1 and run.report.groups[0].gold.exact_rate == 1.0
    bad = tmp_path / "c.json"
    bad.write_text("nope")
    with pytest.raises(DataFileError, match="not valid JSON"):
        run_eval([path], catalog=bad)


def test_resume_needs_an_output_directory(tmp_path):
    with pytest.raises(InputError, match="output directory"):
        run_eval([traces(tmp_path / "t.jsonl", 5)], resume=True)


def test_an_interrupted_run_says_where_progress_is_and_the_next_run_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK_RECORDS", 50)
    monkeypatch.setattr(runner, "CHECKPOINT_SECONDS", 0.0)
    path = traces(tmp_path / "t.jsonl")
    full = run_eval([path]).report
    out = tmp_path / "out"
    said: list[str] = []
    _interrupted_run(monkeypatch, path, out, after=3, notify=said.append)
    ckpt = checkpoint_path(out)
    assert said == [f"interrupted: progress is saved in {ckpt}; run the same command again to resume"]
    assert ckpt.is_file() and not (out / "report.json").exists()

    said.clear()
    resumed = run_eval([path], out_dir=out, notify=said.append)
    assert len(said) == 1 and said[0].startswith(f"resumed from {ckpt}: 100 records")
    assert stable(resumed.report) == stable(full) and not ckpt.exists()


def test_no_resume_starts_over(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHUNK_RECORDS", 50)
    monkeypatch.setattr(runner, "CHECKPOINT_SECONDS", 0.0)
    path = traces(tmp_path / "t.jsonl")
    out = tmp_path / "out"
    _interrupted_run(monkeypatch, path, out, after=2)
    said: list[str] = []
    run = run_eval([path], out_dir=out, resume=False, notify=said.append)
    assert said == [] and run.report.n_records == 300 and not checkpoint_path(out).exists()


def test_mlflow_logs_the_report_and_plots(tmp_path, monkeypatch):
    logged = []

    def log(report, out_dir, plots, *, tracking_uri=None):
        logged.append((report.n_records, out_dir, list(plots), tracking_uri))
        return "run-123"

    monkeypatch.setattr(session, "log_eval_run", log)
    out = tmp_path / "rep"
    run = run_eval([traces(tmp_path / "t.jsonl", 10)], out_dir=out, mlflow=True, tracking_uri="sqlite:///x.db")
    assert run.mlflow_run_id == "run-123"
    assert logged == [(10, out, run.plots, "sqlite:///x.db")]
    assert run_eval([traces(tmp_path / "u.jsonl", 4)], mlflow=False).mlflow_run_id is None and len(logged) == 1
