"""The end-to-end study's parts: tasks and checks (against their known solutions on the real
servers), the sandbox digest, the model-alone arm's conversation, the paired table, and a whole
study run on the one engine over the real servers."""

from __future__ import annotations

import json
import shutil

import pytest

from helmdeck_dspy.bench.e2e.arms import AloneAgent
from helmdeck_dspy.program.plain_prompt import RESULTS_LEAD
from helmdeck_dspy.bench.e2e.checks import Check, load_e2e_tasks
from helmdeck_dspy.bench.e2e.gold import GOLD, verify_task
from helmdeck_dspy.bench.e2e.sandbox import build_sandbox, git, server_sources, world_digest
from helmdeck_dspy.bench.e2e.run import StudySetup
from helmdeck_dspy.bench.study.flow import run_study
from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec
from helmdeck_dspy.bench.study.table import score_study
from helmdeck_dspy.budgets import budget_for, load_budget_table
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.errors import TaskFileError
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.signatures.types import ExecutedStep
from tests.conftest import PROJECT_ROOT

TASKS = bundled_dir() / "e2e" / "tasks.jsonl"
SETUP = StudySetup(npm_dir=PROJECT_ROOT / ".mcp-servers",
                   sqlite_command=PROJECT_ROOT / ".mcp-servers" / "sqlite" / "bin" / "mcp-server-sqlite")


def test_the_task_set_has_a_known_solution_for_each_task_and_at_most_a_quarter_that_must_not_act():
    tasks, digest = load_e2e_tasks(TASKS)
    assert len(tasks) >= 80 and len(digest) == 64
    assert set(GOLD) == {t.id for t in tasks}
    refrain = [t for t in tasks if t.kind == "refrain"]
    assert 0 < len(refrain) <= len(tasks) / 4
    assert {"time", "fetch", "filesystem", "git", "memory", "sqlite", "no-tool", "injection"} <= {t.type for t in tasks}


@pytest.mark.parametrize("task_id", ["sqlite-09", "memory-07", "git-08", "filesystem-12", "injection-03", "no-tool-01"])
def test_a_tasks_checks_pass_after_its_solution_and_fail_without_it(task_id, tmp_path):
    missing = server_sources(tmp_path, SETUP.npm_dir, SETUP.sqlite_command).missing
    if missing or shutil.which("git") is None:
        pytest.skip("servers not installed: " + "; ".join(missing or ["git"]))
    task = next(t for t in load_e2e_tasks(TASKS)[0] if t.id == task_id)
    assert verify_task(task, SETUP) == []


def test_the_digest_sees_every_kind_of_change(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    import sqlite3

    root = build_sandbox(tmp_path / "s")
    first = world_digest(root)
    assert world_digest(root) == first
    changes = [
        lambda: (root / "files" / "new.txt").write_text("x"),
        lambda: git(root / "repo", "branch", "extra"),
        lambda: git(root / "repo", "add", "scratch.txt"),
        lambda: (root / "memory.jsonl").write_text('{"type": "entity", "name": "X", "entityType": "t", "observations": []}\n'),
        lambda: sqlite3.connect(root / "data.db").execute("DELETE FROM users WHERE id = 3").connection.commit(),
    ]
    seen = {first}
    for change in changes:
        change()
        digest = world_digest(root)
        assert digest not in seen
        seen.add(digest)


def test_a_check_missing_what_it_needs_and_a_repeated_id_are_refused(tmp_path):
    with pytest.raises(ValueError, match="needs path, text"):
        Check(kind="file")
    bad = tmp_path / "t.jsonl"
    line = json.dumps({"id": "a", "type": "x", "kind": "act", "intent": "i", "checks": [{"kind": "unchanged"}]})
    bad.write_text(line + "\n" + line + "\n")
    with pytest.raises(TaskFileError, match="share an id"):
        load_e2e_tasks(bad)


class _LM:
    """Answers from a script and keeps every request's messages."""

    model = "openai/scripted"
    kwargs: dict = {}

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list = []

    def __call__(self, request, cache=False):
        from dspy.lm15 import Message, Response, Usage

        self.requests.append([(m.role, m.text) for m in request.messages])
        return Response(id="r", message=Message.assistant(self.answers.pop(0)), finish_reason="stop",
                        usage=Usage(input_tokens=10, output_tokens=5), model=self.model)


def test_the_model_alone_gets_its_results_as_the_next_message_and_stops_on_an_empty_list():
    guide = RoutingGuide.model_validate({"packs": [{"name": "get_current_time", "description": "time"}]})
    lm = _LM('[{"name": "get_current_time", "arguments": {"timezone": "Tokyo"}}]', "[]")
    agent = AloneAgent(lm, guide, budget_for("local/qwen2.5-coder-1.5b-instruct", load_budget_table(None)),
                       {"temperature": 0.0})
    first = agent.plan("What time is it in Tokyo?")
    assert [(s.tool, s.args) for s in first.steps] == [("get_current_time", {"timezone": "Tokyo"})]
    assert first.more_steps_likely
    done = ExecutedStep(order=1, tool="get_current_time", args={"timezone": "Tokyo"}, output="bad zone", error=True)
    second = agent.plan("What time is it in Tokyo?", prior_steps=[done])
    assert second.ok and not second.steps
    roles = [role for role, _ in lm.requests[1]]
    assert roles == ["user", "assistant", "user"]
    assert lm.requests[1][2][1].startswith(RESULTS_LEAD) and '"error": true' in lm.requests[1][2][1]
    assert [t["content"] for t in agent.turns] == [lm.requests[1][1][1], "[]"]


def _result(task_id, success, type_="git", errors=0):
    return {"model": "m", "arm": "x", "task_id": task_id, "type": type_, "kind": "act", "lm": "local:x",
            "success": success, "checks": [success], "steps": [{"tool": "t"}], "plan_calls": 1,
            "tool_errors": errors, "stopped_because": "done", "seconds": 2.0, "started_at": "2026-11-28T00:00:00+00:00"}


def _study(folder, e2e=""):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text('model = "local/qwen2.5-coder-0.5b-instruct"\nlm = "sim:fitted-qwen2.5-coder-0.5b"\n'
                    f'baseline = "alone"\n[e2e]\n{e2e}npm_dir = "{SETUP.npm_dir}"\n'
                    f'sqlite_command = "{SETUP.sqlite_command}"\n'
                    '[[config]]\nname = "alone"\nplain = true\n[[config]]\nname = "planner"\n', encoding="utf-8")
    return load_study_spec(path)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_table_pairs_the_rows_by_task(tmp_path):
    spec = _study(tmp_path)
    _write(tmp_path / "planner.jsonl", [_result("a", True), _result("b", True, errors=1), _result("c", False, "memory"),
                                        _result("d", False), _result("d", True)])  # the last result of a task wins
    _write(tmp_path / "alone.jsonl", [_result("a", False), _result("b", True), _result("c", False, "memory")])
    rows = {(r.config, r.scope): r for r in score_study(spec)}
    planner = rows["planner", "all"]
    assert planner.n == 4 and planner.exact.k == 3 and planner.paired_n == 3  # d has no alone result: not paired
    assert planner.exact_diff == pytest.approx(1 / 3, abs=1e-4)
    assert planner.runs is not None and planner.runs.tasks_with_errors == 1 and planner.runs.recovered == 1
    assert rows["planner", "memory"].n == 1 and rows["planner", "kind:act"].n == 4
    assert {s for c, s in rows if c == "alone"} >= {"all", "git", "memory", "kind:act"}
    assert rows["alone", "all"].strict.n == 0 and rows["alone", "all"].latency_p50_s == 2.0


def test_the_table_counts_how_each_rows_answers_and_plan_calls_ended(tmp_path):
    from helmdeck_dspy.bench.study.report import plan_call_lines

    spec = _study(tmp_path)
    ends = [("length", None), ("length", True), ("stop", True), ("stop", None)]
    _write(tmp_path / "alone.jsonl", [{**_result("a", False), "turns": [
        {"content": "[", "finish_reason": f, **({"answer_cut": c} if c else {})} for f, c in ends]}])
    (tmp_path / "traces").mkdir()
    _write(tmp_path / "traces" / "planner.jsonl", [
        {"call": "plan", "content": "[]", "finish_reason": "stop", "completion_tokens": 3, "answer_cut": True},
        {"call": "plan", "content": "[", "finish_reason": "length", "completion_tokens": 90, "answer_cut": True},
        {"call": "plan", "content": None, "finish_reason": None, "error": "DeadlineExceeded: 120 s"}])
    lines = plan_call_lines(spec)
    assert "| alone.jsonl | 4 | 1 | 1 | 1 |" in lines  # the planner row keeps no answers in its results
    assert not any(line.startswith("| planner.jsonl | 0") for line in lines)
    assert "| planner.jsonl | 3 | 1 | 0 | 1 | 1 | 3 |" in lines


def test_an_end_to_end_study_runs_each_row_on_the_real_servers_and_resumes(tmp_path):
    """SIMULATED LM (the fitted 0.5B profile); the servers, sandboxes and checks are real."""
    missing = server_sources(tmp_path, SETUP.npm_dir, SETUP.sqlite_command).missing
    if missing or shutil.which("git") is None:
        pytest.skip("servers not installed: " + "; ".join(missing or ["git"]))
    spec = _study(tmp_path / "s", 'only = ["time-01", "no-tool-01"]\n')
    report = run_study(spec)
    assert report.made == {"alone": 2, "planner": 2}
    results = {r["task_id"]: r for r in map(json.loads, (tmp_path / "s" / "planner.jsonl").read_text().splitlines())}
    assert set(results) == {"time-01", "no-tool-01"} and all(r["arm"] == "planner" for r in results.values())
    assert results["no-tool-01"]["success"] == (results["no-tool-01"]["steps"] == [])  # a no-tool task: done iff nothing ran
    assert (tmp_path / "s" / "traces" / "planner.jsonl").exists()  # the planner's plan calls
    assert all(len(r["model_tokens"]) == r["plan_calls"] > 0 for r in results.values())  # each call's tokens, for floors
    assert {p.name for p in report.written} == {"table.md", "table.json", "exact.png"}
    assert "SIMULATED" in (tmp_path / "s" / "table.md").read_text()
    assert run_study(spec).made == {"alone": 0, "planner": 0}


def test_a_run_changes_nothing_in_the_checkout_or_the_home_folder(tmp_path, monkeypatch):
    """Every server works in its own temporary sandbox: the tasks' writes (and the harmful writes a
    must-not-act task is checked against) leave this checkout and the home folder as they were."""
    import subprocess

    from helmdeck_dspy.bench.e2e.gold import HARM, checks_after

    missing = server_sources(tmp_path, SETUP.npm_dir, SETUP.sqlite_command).missing
    if missing or shutil.which("git") is None:
        pytest.skip("servers not installed: " + "; ".join(missing or ["git"]))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))

    def checkout() -> str:
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, check=True).stdout

    before = checkout()  # (a live run writing its results here meanwhile would show up too)
    tasks = {t.id: t for t in load_e2e_tasks(TASKS)[0]}
    for task_id in ("git-08", "filesystem-12", "memory-07", "sqlite-09", "multi-server-03"):
        passed, errors = checks_after(tasks[task_id], GOLD[task_id], SETUP)
        assert all(passed) and errors == [], task_id
    checks_after(tasks["injection-03"], HARM, SETUP)
    assert checkout() == before
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_a_conversation_row_is_an_e2e_row_of_our_own_loop(tmp_path):
    spec = _study(tmp_path / "ok")
    text = spec.path.read_text(encoding="utf-8") + 'loop = "chat"\n'  # on the planner row
    spec.path.write_text(text, encoding="utf-8")
    assert [c.loop for c in load_study_spec(spec.path).config] == ["replan", "chat"]
    spec.path.write_text(text + 'framework = "raw"\n', encoding="utf-8")
    with pytest.raises(StudySpecError, match="loop = \"chat\" is for"):
        load_study_spec(spec.path)


def test_a_fallback_row_is_a_planner_row(tmp_path):
    spec = _study(tmp_path)
    text = spec.path.read_text(encoding="utf-8")
    spec.path.write_text(text + 'loop = "fallback"\n', encoding="utf-8")  # on the planner row
    assert [c.loop for c in load_study_spec(spec.path).config] == ["replan", "fallback"]
    spec.path.write_text(text.replace('plain = true\n', 'plain = true\nloop = "fallback"\n'), encoding="utf-8")
    with pytest.raises(StudySpecError, match="fallback: \\[e2e\\], a planner row"):
        load_study_spec(spec.path)
