"""Compile arms in a study (the held-out comparison's rows): compiled before they answer, resumable,
answered again when their program changes, their test scores written into the manifest, and a
winner shipped as the model's own program. The LMs are simulated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helmdeck_dspy.bench.study.compiled import beats, ship
from helmdeck_dspy.bench.study.flow import pending, run_study
from helmdeck_dspy.bench.study.spec import StudySpecError, load_study_spec
from helmdeck_dspy.bench.study.table import score_study
from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.errors import UsageValueError
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.store import manifest_path, model_key, read_manifest
from tests.conftest import PROJECT_ROOT

MODEL = "local/qwen2.5-coder-0.5b-instruct"
SPEC = f'''
model = "{MODEL}"
lm = "sim:mid-tier"
teacher = "sim:frontier-like"
tasks = "{PROJECT_ROOT / 'eval/tasks/test.jsonl'}"
catalog = "{PROJECT_ROOT / 'eval/catalog/routing-guide.json'}"
split = "test"
categories = ["single-action", "pack-chain", "pipeline-direct", "supersedes", "gap", "adversarial", "long-context"]
limit = 49
baseline = "b"
valset = 3

[[config]]
name = "b"
program = "tier"
variant = "single_pick"

[[config]]
name = "b2"
program = "tier"
variant = "single_pick"

[[config]]
name = "c"
optimizer = "bootstrap"
variant = "single_pick"
'''


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """A study with a compile arm, run once through the CLI; returns its spec file."""
    folder = tmp_path_factory.mktemp("study")
    spec = folder / "study.toml"
    spec.write_text(SPEC)
    result = CliRunner().invoke(cli, ["bench", "study", str(spec), "--no-progress"])
    assert result.exit_code == 0, result.output
    return spec


def _rows(spec: Path) -> dict:
    return {r.config: r for r in score_study(load_study_spec(spec)) if r.scope == "all"}


def test_a_compile_arm_is_compiled_then_answers_and_the_table_shows_its_cost(ran):
    folder = ran.parent
    assert all((folder / f"{name}.jsonl").is_file() for name in ("b", "b2", "c"))
    assert model_key(MODEL, "single_pick") in read_manifest(folder / "programs" / "c")["programs"]
    rows = _rows(ran)
    assert {r.n for r in rows.values()} == {49} and rows["c"].paired_n == 49 and rows["b"].paired_n == 0
    records = [json.loads(line) for line in (folder / "c.jsonl").read_text().splitlines()]
    assert {r["run"]["program"]["path"].endswith("programs/c/models/local-qwen2.5-coder-0.5b-instruct/single_pick.json")
            for r in records} == {True}
    md = (folder / "table.md").read_text()
    assert "SIMULATED" in md and "| compile arm | optimizer |" in md and "| c | bootstrap | " in md


def test_a_compile_arm_gets_its_test_scores_whether_it_wins_or_not(ran):
    rows = _rows(ran)
    test = read_manifest(ran.parent / "programs" / "c")["programs"][model_key(MODEL, "single_pick")]["test"]
    assert test["after"]["plan_score"] == rows["c"].plan_score and test["before"]["plan_score"] == rows["b"].plan_score
    assert test["diff"] == rows["c"].plan_score_diff and test["after"]["n"] == 49
    assert test["traces"] == ["../../b.jsonl", "../../c.jsonl"]  # beside the spec, from programs/c/


def test_the_same_program_answering_twice_differs_by_exactly_nothing(ran):
    rows = _rows(ran)
    same = rows["b2"]
    assert same.plan_score_diff == 0 and (same.plan_score_diff_low, same.plan_score_diff_high) == (0, 0)
    assert same.plan_score == rows["b"].plan_score and not beats(same)


def test_a_finished_study_has_nothing_left_and_runs_no_call(ran):
    assert pending(load_study_spec(ran)) == 0
    again = CliRunner().invoke(cli, ["bench", "study", str(ran), "--no-progress", "--json"])
    assert again.exit_code == 0
    assert "compile [" not in again.output and "study: 0 calls to make" in again.output
    assert json.loads(again.stdout)["rows"] == json.loads((ran.parent / "table.json").read_text())["rows"]


def test_answers_by_another_program_are_asked_again(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    trace = copy / "c.jsonl"
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    for r in records:
        r["run"]["program"]["sha256"] = "0" * 64
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert pending(load_study_spec(copy / "study.toml")) == 49
    assert pending(load_study_spec(copy / "study.toml"), ["b", "b2"]) == 0


def test_a_changed_compile_input_compiles_again_and_the_dry_run_says_so(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    spec = copy / "study.toml"
    spec.write_text(spec.read_text().replace("valset = 3", "valset = 2"))
    assert pending(load_study_spec(spec)) == 1  # the compile; its answers count once it changes the program
    dry = CliRunner().invoke(cli, ["bench", "study", str(spec), "--dry-run"])
    assert dry.exit_code == 0 and dry.stdout.strip() == "1 compiles (c), 0 calls left (dry run: nothing ran)"
    (copy / "b2.jsonl").write_text("".join((copy / "b2.jsonl").read_text().splitlines(keepends=True)[:40]))
    dry = CliRunner().invoke(cli, ["bench", "study", str(spec), "--dry-run", "--json"])
    assert json.loads(dry.stdout) == {"compiles": ["c"], "calls": {"b2": 9}}
    assert len((copy / "b2.jsonl").read_text().splitlines()) == 40  # nothing ran: nothing was answered


def test_shipping_copies_only_a_program_that_beats_its_paired_row(ran, tmp_path):
    spec = load_study_spec(ran)
    rows = score_study(spec)
    root = tmp_path / "compiled"
    shutil.copytree(compiled_dir() / "tier_B", root / "tier_B")
    shutil.copy(manifest_path(compiled_dir()), manifest_path(root))
    c = next(r for r in rows if r.config == "c" and r.scope == "all")
    c.plan_score_diff, c.plan_score_diff_low, c.plan_score_diff_high = 0.05, -0.01, 0.11  # inside its interval
    assert ship(spec, rows, root) == []
    c.plan_score_diff, c.plan_score_diff_low, c.plan_score_diff_high = 0.05, 0.01, 0.09
    assert ship(spec, rows, root) == [model_key(MODEL, "single_pick")]
    entry = read_manifest(root)["programs"][model_key(MODEL, "single_pick")]
    assert entry["test"]["after"]["plan_score"] == c.plan_score and entry["test"]["diff_ci"] == [0.01, 0.09]
    assert entry["test"]["before"]["program"] == "tier"
    planner = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick")
    assert planner.program_ref.kind == "model" and planner.program_ref.sha256 == entry["program_sha256"]


@pytest.mark.parametrize(("change", "says"), [
    (('name = "c"\n', 'name = "c"\nprogram = "tier"\n'), "an optimizer row compiles its own program"),
    (('name = "b2"\n', 'name = "b2"\npaired_with = "z"\n'), "paired_with 'z' is not a config"),
    (('optimizer = "bootstrap"', 'optimizer = "dspy"'), "optimizer"),
])
def test_a_bad_compile_arm_names_the_file_and_the_problem(tmp_path, change, says):
    path = tmp_path / "study.toml"
    path.write_text(SPEC.replace(*change))
    with pytest.raises(StudySpecError, match=says) as info:
        load_study_spec(path)
    assert str(path) in str(info.value)


def test_a_row_paired_with_another_row_is_paired_against_it(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    spec = copy / "study.toml"
    spec.write_text(spec.read_text().replace('name = "c"\n', 'name = "c"\npaired_with = "b2"\n'))
    rows = _rows(spec)
    assert rows["c"].plan_score_diff == pytest.approx(rows["c"].plan_score - rows["b2"].plan_score, abs=1e-4)
    assert "(or the row its paired_with names)" in run_study(spec, score_only=True).written[0].read_text()


def test_run_study_refuses_an_unknown_config_before_running_anything(ran):
    before = (ran.parent / "table.json").stat().st_mtime_ns
    with pytest.raises(UsageValueError, match="no config 'zz' in"):
        run_study(ran, only=["zz"])
    assert (ran.parent / "table.json").stat().st_mtime_ns == before
