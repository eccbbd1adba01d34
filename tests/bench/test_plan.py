"""A plan file runs study steps in order, resumes, and refuses an unusable step before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from helmdeck_dspy.bench.plan import load_plan, run_plan
from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.io import read_jsonl_traces

ROOT = Path(__file__).resolve().parents[2]


def _lever_spec(folder: Path, bfcl_dir: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "levers.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ndata = ["{bfcl_dir}"]\ncategories = ["parallel"]\nlimit = 2\n'
                    'baseline = "plain"\n[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "planner"\n',
                    encoding="utf-8")
    return path


def _plan(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "studies.toml"
    path.write_text(body, encoding="utf-8")
    return path


def _answers(folder: Path) -> dict[str, int]:
    return {p.stem: len(list(read_jsonl_traces(p))) for p in sorted(folder.glob("*.jsonl"))}


def test_steps_run_in_order_and_a_second_run_makes_no_call(tmp_path, bfcl_dir):
    _lever_spec(tmp_path / "a", bfcl_dir)
    _lever_spec(tmp_path / "b", bfcl_dir)
    (tmp_path / "hello.py").write_text("print('measured')\n", encoding="utf-8")
    plan = load_plan(_plan(tmp_path, '[[step]]\nspec = "b/levers.toml"\nonly = ["planner"]\n'
                                     '[[step]]\nscript = "hello.py"\nout = "hello.txt"\n'
                                     '[[step]]\nspec = "a/levers.toml"\n'))
    said: list[str] = []
    assert [n for _, n in run_plan(plan, dry_run=True, notify=said.append)] == [2, 1, 4]
    assert _answers(tmp_path / "a") == {} and not (tmp_path / "hello.txt").exists()  # a dry run runs nothing
    said.clear()
    run_plan(plan, notify=said.append)
    steps = [s for s in said if s.startswith("[")]
    assert [s.split("]")[0] for s in steps] == ["[1/3", "[2/3", "[3/3"] and "b/levers.toml --only planner" in steps[0]
    assert _answers(tmp_path / "b") == {"planner": 2} and _answers(tmp_path / "a") == {"plain": 2, "planner": 2}
    assert (tmp_path / "hello.txt").read_text() == "measured\n" and (tmp_path / "a" / "table.json").exists()
    again = run_plan(plan, notify=said.append)
    assert [n for _, n in again] == [0, 0, 0] and _answers(tmp_path / "a") == {"plain": 2, "planner": 2}
    assert [s.spec for s, _ in run_plan(plan, dry_run=True, matching=("b/", ".py"))] == [tmp_path / "b/levers.toml", None]


@pytest.mark.parametrize(("body", "message"), [
    ('[[step]]\nspec = "a/levers.toml"\nonly = ["nope"]\n', "step 1 (a/levers.toml): no config 'nope'"),
    ('[[step]]\nspec = "a/spec.toml"\n', "step 1: a/spec.toml is not a study.toml, a levers.toml or an e2e.toml"),
    ('[[step]]\nspec = "a/levers.toml"\n[[step]]\nscript = "missing.py"\nout = "x.txt"\n', "step 2: no script"),
    ('[[step]]\nspec = "a/levers.toml"\nscript = "x.py"\n', "either spec or script"),
    ('[[step]]\nscript = "x.py"\n', "a script step needs out"),
    ('[[step]]\nspec = "a/levers.toml"\nonly = ["plain"]\nrepeat = 2\n', "repeat"),
    ("", "step"),
])
def test_an_unusable_step_is_refused_before_anything_runs(tmp_path, bfcl_dir, body, message):
    _lever_spec(tmp_path / "a", bfcl_dir)
    with pytest.raises(DataFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_plan(_plan(tmp_path, body))
    assert _answers(tmp_path / "a") == {}


def test_a_failing_script_keeps_no_output(tmp_path):
    (tmp_path / "bad.py").write_text("print('half')\nraise SystemExit('broke')\n", encoding="utf-8")
    plan = load_plan(_plan(tmp_path, '[[step]]\nscript = "bad.py"\nout = "out.txt"\n'))
    with pytest.raises(DataFileError, match="exited 1: broke"):
        run_plan(plan)
    assert not (tmp_path / "out.txt").exists()


def test_the_committed_plan_checks_and_the_cli_says_what_is_left(shared_dir):
    plan = ROOT / "experiments" / "studies.toml"
    assert len(load_plan(plan).step) >= 30
    r = CliRunner().invoke(cli, ["bench", "plan", "--dry-run", "--no-progress", str(plan)])
    assert r.exit_code == 0, r.output
    assert r.output.strip().splitlines()[-1].endswith("(dry run: nothing ran)")


def _e2e_run(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "one.e2e.toml"
    path.write_text('model = "m"\nlm = "sim:mid-tier"\nout = "../results"\n' + body, encoding="utf-8")
    return path


def test_an_end_to_end_run_spec_counts_what_its_results_lack(tmp_path):
    from helmdeck_dspy.bench.e2e.checks import task_split
    from helmdeck_dspy.bench.e2e.spec import load_e2e_spec

    spec = load_e2e_spec(_e2e_run(tmp_path / "runs", 'split = "dev"\nonly = ["time", "git-01"]\n'))
    tasks, digest = spec.selected()
    assert tasks and all(task_split(t.id) == "dev" and (t.type == "time" or t.id == "git-01") for t in tasks)
    assert len(digest) == 64 and spec.pending() == 2 * len(tasks)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "results.jsonl").write_text(
        '{"model": "m", "arm": "alone", "task_id": "%s"}\n{"model": "other", "arm": "planner", "task_id": "%s"}\n'
        % (tasks[0].id, tasks[0].id), encoding="utf-8")
    assert spec.pending() == 2 * len(tasks) - 1
    with pytest.raises(DataFileError, match="unknown arm 'planner-next'"):  # a retired arm cannot run again
        load_e2e_spec(_e2e_run(tmp_path / "bad", 'arms = ["planner-next"]\n'))


def test_a_plan_step_can_be_an_end_to_end_run_with_some_of_its_arms(tmp_path):
    _e2e_run(tmp_path / "runs", 'only = ["git-01"]\n')
    plan = load_plan(_plan(tmp_path, '[[step]]\nspec = "runs/one.e2e.toml"\nonly = ["alone"]\n'))
    assert plan.step[0].kind == "e2e" and [n for _, n in run_plan(plan, dry_run=True)] == [1]
    with pytest.raises(DataFileError, match="no arm 'planner-fill'"):
        load_plan(_plan(tmp_path, '[[step]]\nspec = "runs/one.e2e.toml"\nonly = ["planner-fill"]\n'))


def test_bench_e2e_names_an_unknown_arm():
    r = CliRunner().invoke(cli, ["bench", "e2e", "-m", "m", "--arms", "planner,bogus"])
    assert r.exit_code == 2 and "unknown arm 'bogus'" in r.output
