"""A plan file runs study steps in order, resumes, and refuses an unusable step before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from helmdeck_dspy.bench.plan import load_plan, run_plan
from helmdeck_dspy.bench.study.spec import OldSpellingError
from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.traces.io import read_jsonl_traces

ROOT = Path(__file__).resolve().parents[2]


def _lever_spec(folder: Path, bfcl_dir: Path) -> Path:
    folder.mkdir(parents=True)
    path = folder / "study.toml"
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
    plan = load_plan(_plan(tmp_path, '[[step]]\nspec = "b/study.toml"\nonly = ["planner"]\n'
                                     '[[step]]\nscript = "hello.py"\nout = "hello.txt"\n'
                                     '[[step]]\nspec = "a/study.toml"\n'))
    said: list[str] = []
    assert [n for _, n in run_plan(plan, dry_run=True, notify=said.append)] == [2, 1, 4]
    assert _answers(tmp_path / "a") == {} and not (tmp_path / "hello.txt").exists()  # a dry run runs nothing
    said.clear()
    run_plan(plan, notify=said.append)
    steps = [s for s in said if s.startswith("[")]
    assert [s.split("]")[0] for s in steps] == ["[1/3", "[2/3", "[3/3"] and "b/study.toml --only planner" in steps[0]
    assert _answers(tmp_path / "b") == {"planner": 2} and _answers(tmp_path / "a") == {"plain": 2, "planner": 2}
    assert (tmp_path / "hello.txt").read_text() == "measured\n" and (tmp_path / "a" / "table.json").exists()
    again = run_plan(plan, notify=said.append)
    assert [n for _, n in again] == [0, 0, 0] and _answers(tmp_path / "a") == {"plain": 2, "planner": 2}
    assert [s.spec for s, _ in run_plan(plan, dry_run=True, matching=("b/", ".py"))] == [tmp_path / "b/study.toml", None]


@pytest.mark.parametrize(("body", "message"), [
    ('[[step]]\nspec = "a/study.toml"\nonly = ["nope"]\n', "step 1 (a/study.toml): no config 'nope'"),
    ('[[step]]\nspec = "a/spec.toml"\n', "step 1: a/spec.toml is not a study.toml"),
    ('[[step]]\nspec = "a/study.toml"\n[[step]]\nscript = "missing.py"\nout = "x.txt"\n', "step 2: no script"),
    ('[[step]]\nspec = "a/study.toml"\nscript = "x.py"\n', "either spec or script"),
    ('[[step]]\nscript = "x.py"\n', "a script step needs out"),
    ('[[step]]\nspec = "a/study.toml"\nonly = ["plain"]\nrepeat = 2\n', "repeat"),
    ("", "step"),
])
def test_an_unusable_step_is_refused_before_anything_runs(tmp_path, bfcl_dir, body, message):
    _lever_spec(tmp_path / "a", bfcl_dir)
    with pytest.raises(DataFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_plan(_plan(tmp_path, body))
    assert _answers(tmp_path / "a") == {}



def test_an_old_spelling_in_a_step_is_refused_naming_the_new_one(tmp_path, bfcl_dir):
    spec = _lever_spec(tmp_path / "a", bfcl_dir)
    spec.rename(spec.with_name("levers.toml"))
    plan = _plan(tmp_path, '[[step]]\nspec = "a/levers.toml"\n')
    with pytest.raises(OldSpellingError) as info:
        load_plan(plan)
    assert str(info.value) == f"{plan}: step 1: a/levers.toml: levers.toml is a study spec's old name; rename the file " \
                              "study.toml" and info.value.exit_code == 2
    spec.with_name("levers.toml").rename(spec)
    spec.write_text(spec.read_text(encoding="utf-8") + "constrained = false\n", encoding="utf-8")  # on the planner row
    with pytest.raises(OldSpellingError, match=r'step 1 \(a/study.toml\): .*config planner: constrained = false is the '
                                               r'old spelling of the answer strategy; write strategy = "free"'):
        load_plan(_plan(tmp_path, '[[step]]\nspec = "a/study.toml"\n'))


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


def _e2e_study(folder: Path, e2e: str, rows: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text('model = "m"\nlm = "sim:mid-tier"\nbaseline = "alone"\n[e2e]\n' + e2e
                    + '[[config]]\nname = "alone"\nplain = true\n[[config]]\nname = "planner"\n' + rows, encoding="utf-8")
    return path


def test_an_end_to_end_study_counts_the_runs_its_rows_lack(tmp_path):
    from helmdeck_dspy.bench.e2e.checks import task_split
    from helmdeck_dspy.bench.study.flow import left
    from helmdeck_dspy.bench.study.questions import load_cases
    from helmdeck_dspy.bench.study.spec import load_study_spec

    spec = load_study_spec(_e2e_study(tmp_path, 'split = "dev"\nonly = ["time", "git-01"]\n',
                                      '[[config]]\nname = "tested"\nsplit = "test"\n'
                                      '[[config]]\nname = "gone"\nretired = ["next_ask"]\n'))
    tasks = load_cases(spec)
    assert tasks and all(task_split(t.id) == "dev" and (t.category == "time" or t.id == "git-01") for t in tasks)
    assert left(spec)[1] == {"alone": len(tasks), "planner": len(tasks)}  # a test-half row on a dev study, a retired row: none
    (tmp_path / "alone.jsonl").write_text('{"task_id": "%s"}\n' % tasks[0].id, encoding="utf-8")
    assert left(spec)[1] == {"alone": len(tasks) - 1, "planner": len(tasks)}


def test_a_plan_step_can_be_an_end_to_end_study_with_some_of_its_rows(tmp_path):
    _e2e_study(tmp_path / "e2e", 'only = ["git-01"]\n')
    plan = load_plan(_plan(tmp_path, '[[step]]\nspec = "e2e/study.toml"\nonly = ["alone"]\n'))
    assert [n for _, n in run_plan(plan, dry_run=True)] == [1]
    with pytest.raises(DataFileError, match="no config 'planner-fill'"):
        load_plan(_plan(tmp_path, '[[step]]\nspec = "e2e/study.toml"\nonly = ["planner-fill"]\n'))


@pytest.mark.parametrize(("e2e", "rows", "message"), [
    ("", '[[config]]\nname = "p2"\npool = true\n', "answers_from, pool and catalog do not apply"),
    ("", '[[config]]\nname = "p2"\noptions = { fill_holes = true }\n', "not planner options: \\['fill_holes'\\]"),
    ("", '[[config]]\nname = "p2"\noptions = { recheck_top = -1 }\n', "recheck_top"),
    ('split = "half"\n', "", "split"),
])
def test_an_unusable_end_to_end_study_is_refused(tmp_path, e2e, rows, message):
    from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec

    with pytest.raises(StudySpecError, match=message):
        load_study_spec(_e2e_study(tmp_path, e2e, rows))


def test_limits_and_halves_belong_to_their_own_sources(tmp_path, bfcl_dir):
    from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec

    e2e = _e2e_study(tmp_path / "e", "")
    e2e.write_text("limit = 3\n" + e2e.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(StudySpecError, match="limit and start count questions"):
        load_study_spec(e2e)
    path = _lever_spec(tmp_path / "b", bfcl_dir)
    path.write_text(path.read_text(encoding="utf-8") + 'split = "dev"\n', encoding="utf-8")
    with pytest.raises(StudySpecError, match="split picks a half of the end-to-end tasks"):
        load_study_spec(path)


def test_bench_e2e_resumes_its_own_study_and_refuses_another(tmp_path):
    out = tmp_path / "e2e"
    out.mkdir()
    (out / "study.toml").write_text('model = "other"\n', encoding="utf-8")
    r = CliRunner().invoke(cli, ["bench", "e2e", "-m", "m", "--lm", "sim:mid-tier", "--out", str(out)])
    assert r.exit_code == 2 and "holds another study" in r.output
    assert (out / "study.toml").read_text(encoding="utf-8") == 'model = "other"\n'
