"""compile_programs(): the run marker, resuming an interrupted run, task paths, MLflow and on_result."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.compilation import compiler, runs
from helmdeck_dspy.compilation.manifest import manifest_path
from helmdeck_dspy.compilation.request import CompileOptions
from helmdeck_dspy.compilation.runs import RESUMING, RUN_MARKER, compile_programs
from helmdeck_dspy.errors import InputError
from helmdeck_dspy.program.store import program_path
from helmdeck_dspy.tasks import load_tasks

TARGETS = [("C", "single_pick"), ("C", "full_steps"), ("B", "full_steps")]


def programs(root):
    return json.loads(manifest_path(root).read_text())["programs"]


def test_compiles_each_target_in_order_and_reports_each_result(tmp_path):
    seen = []
    results = compile_programs(TARGETS, CompileOptions(out_root=tmp_path), on_result=seen.append)
    assert [(r.tier, r.variant) for r in results] == TARGETS
    assert seen == results and not any(r.skipped for r in results)
    assert set(programs(tmp_path)) == {"tier_C/single_pick", "tier_C/full_steps", "tier_B/full_steps"}
    assert all(program_path(t, v, tmp_path).is_file() for t, v in TARGETS)
    assert not (tmp_path / RUN_MARKER).exists()


def test_an_interrupted_run_resumes_and_skips_what_is_done(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = compiler.fit_demos

    def fit(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # killed while compiling the second program
        return real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(compiler, "fit_demos", fit)
        with pytest.raises(KeyboardInterrupt):
            compile_programs(TARGETS, CompileOptions(out_root=tmp_path))
    assert (tmp_path / RUN_MARKER).is_file() and list(programs(tmp_path)) == ["tier_C/single_pick"]

    said, seen = [], []
    results = compile_programs(TARGETS, CompileOptions(out_root=tmp_path), notify=said.append, on_result=seen.append)
    assert said == [RESUMING]
    assert [r.skipped for r in results] == [True, False, False] and seen == results
    assert not (tmp_path / RUN_MARKER).exists()

    # a finished run is not "interrupted": everything compiles again unless resume is asked for
    said.clear()
    assert not any(r.skipped for r in compile_programs(TARGETS, CompileOptions(out_root=tmp_path), notify=said.append))
    assert said == []
    assert all(r.skipped for r in compile_programs(TARGETS, CompileOptions(out_root=tmp_path), resume=True))
    # and resume=False recompiles even right after an interruption
    with monkeypatch.context() as m:
        calls["n"] = 0
        m.setattr(compiler, "fit_demos", fit)
        with pytest.raises(KeyboardInterrupt):
            compile_programs(TARGETS, CompileOptions(out_root=tmp_path))
    said.clear()
    assert not any(r.skipped for r in compile_programs(TARGETS, CompileOptions(out_root=tmp_path), resume=False, notify=said.append))
    assert said == []


def test_task_paths_are_loaded(tmp_path):
    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    train.write_text("".join(t.model_dump_json() + "\n" for t in load_tasks("train")[:12]))
    dev.write_text("".join(t.model_dump_json() + "\n" for t in load_tasks("dev")[:3]))
    (r,) = compile_programs([("C", "single_pick")], CompileOptions(out_root=tmp_path / "out"), train_path=train, dev_path=dev)
    assert (r.train_n, r.dev_n) == (12, 3)


def test_mlflow_logs_compiled_programs_not_skipped_ones(tmp_path, monkeypatch):
    logged = []

    def log(params, metrics, program_file, *, tracking_uri=None):
        logged.append((params, metrics, program_file, tracking_uri))
        return "run-1"

    monkeypatch.setattr(runs, "log_compile_run", log)
    compile_programs(TARGETS[:2], CompileOptions(out_root=tmp_path), mlflow=True, tracking_uri="sqlite:///m.db")
    assert [(p["tier"], p["variant"]) for p, *_ in logged] == TARGETS[:2]
    params, metrics, program_file, uri = logged[0]
    assert program_file == program_path("C", "single_pick", tmp_path) and uri == "sqlite:///m.db"
    assert metrics["lm_calls"] == 0 and "demos" in metrics and "dev_score_before" not in metrics
    assert metrics["estimated_calls"] == 0 and metrics["cached_calls"] == 0
    assert params["optimizer"] == "fit" and "lm_calls" not in params
    logged.clear()
    compile_programs(TARGETS[:2], CompileOptions(out_root=tmp_path), mlflow=True, resume=True)
    assert logged == []  # both skipped


@pytest.mark.parametrize(("targets", "kw", "says"), [
    ([("D", "full_steps")], {}, "unknown tier/variant D/full_steps"),
    ([("A", "all_steps")], {}, "unknown tier/variant"),
    ([("A", "full_steps")], {"optimizer": "magic"}, "unknown optimizer"),
    ([("A", "full_steps")], {"optimizer": "gepa"}, "needs an LM"),
])
def test_bad_arguments_fail_before_the_run_starts(tmp_path, targets, kw, says):
    with pytest.raises(InputError, match=says):
        compile_programs(targets, CompileOptions(out_root=tmp_path, **kw))
    assert not (tmp_path / RUN_MARKER).exists() and not manifest_path(tmp_path).exists()
