"""Per-model programs: compiling one for a model id under its own budget row, the manifest entry
it gets, and ``Planner.for_model`` (and ``plan --json``, and trace records) using it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.cli.app import cli
from tests.compile_helpers import compile_one
from helmdeck_dspy.errors import CompiledProgramError, InputError
from helmdeck_dspy.io.resources import compiled_dir, default_budgets_path
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.store import (
    manifest_path,
    model_key,
    model_program_path,
    model_slug,
    read_manifest,
    resolve_program,
)
from helmdeck_dspy.compilation.settings import OptimizerSettings
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.io import read_jsonl_traces

MODEL = "local/qwen2.5-coder-0.5b-instruct"
OTHER = "local/qwen2.5-coder-1.5b-instruct"
TRAIN, DEV = load_tasks("train")[:20], load_tasks("dev")[:4]
INTENT = "take a screenshot of https://example.com"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A compiled root: the bundled tier programs plus a bootstrap program compiled for MODEL (single_pick)."""
    path = tmp_path_factory.mktemp("compiled")
    shutil.copytree(compiled_dir() / "tier_B", path / "tier_B")
    shutil.copytree(compiled_dir() / "tier_C", path / "tier_C")
    shutil.copy(manifest_path(compiled_dir()), manifest_path(path))
    compile_one(None, "single_pick", model=MODEL, optimizer="bootstrap", lm="sim:mid-tier",
                    teacher_lm="sim:frontier-like", train=TRAIN, dev=DEV, out_root=path)
    return path


def test_a_model_program_is_compiled_under_the_models_own_budget_row(root):
    entry = read_manifest(root)["programs"][model_key(MODEL, "single_pick")]
    budget = budget_for(MODEL)
    assert entry["model"] == MODEL and entry["tier"] == budget.tier and entry["budget_model"] == MODEL
    assert entry["path"] == f"models/{model_slug(MODEL)}/single_pick.json"
    assert model_program_path(MODEL, "single_pick", root).is_file()
    assert entry["lm"] == "sim:mid-tier" and entry["teacher_lm"] == "sim:frontier-like"
    assert entry["optimizer"] == "bootstrap" and entry["optimizer_settings"]["max_rounds"] == 1
    assert entry["teacher_calls"] > 0 and entry["lm_calls"] >= entry["teacher_calls"]
    assert entry["estimated_calls"] > 0 and entry["demos"] > 0
    # the tier programs' entries are untouched
    assert read_manifest(root)["programs"]["tier_B/single_pick"] == read_manifest(compiled_dir())["programs"]["tier_B/single_pick"]


def test_for_model_uses_the_models_own_program_for_that_exact_id_and_variant(root):
    own = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick")
    assert own.program_ref.kind == "model" and own.program_ref.optimizer == "bootstrap"
    assert own.program_ref.path == f"models/{model_slug(MODEL)}/single_pick.json"
    assert own.program_ref.sha256 == read_manifest(root)["programs"][model_key(MODEL, "single_pick")]["program_sha256"]
    # no program for the other variant, nor for another model of the same row family: the tier's
    other_variant = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="full_steps")
    assert other_variant.program_ref.kind == "tier" and other_variant.program_ref.path == "tier_B/full_steps.json"
    other_model = Planner.for_model(OTHER, lm="sim:mid-tier", compiled_root=root, variant="single_pick")
    assert other_model.program_ref.kind == "tier"
    # a manifest entry naming another id under the same folder is not this model's
    assert resolve_program(MODEL.upper(), "B", "single_pick", root)[1].kind == "tier"


def test_the_program_choice_can_force_the_tier_program_bare_instructions_or_a_file(root):
    _, tier = resolve_program(MODEL, "B", "single_pick", root, "tier")
    assert tier.kind == "tier" and tier.path == "tier_B/single_pick.json"
    module, bare = resolve_program(MODEL, "B", "single_pick", root, "bare")
    assert bare.kind == "bare" and not module.plan.demos
    path = model_program_path(MODEL, "single_pick", root)
    _, file_ref = resolve_program(MODEL, "B", "single_pick", root, str(path))
    assert file_ref.kind == "file" and file_ref.path == str(path)
    with pytest.raises(CompiledProgramError, match="no such program file"):
        resolve_program(MODEL, "B", "single_pick", root, str(root / "missing.json"))


def test_a_changed_program_file_warns_and_reports_the_files_own_hash(tmp_path, root):
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    path = model_program_path(MODEL, "single_pick", copy)
    state = json.loads(path.read_text())
    state["plan"]["demos"] = state["plan"]["demos"][:1]
    path.write_text(json.dumps(state))
    with pytest.warns(UserWarning, match="differs from the file its manifest entry"):
        _, ref = resolve_program(MODEL, "B", "single_pick", copy)
    assert ref.kind == "model" and ref.sha256 != read_manifest(copy)["programs"][model_key(MODEL, "single_pick")]["program_sha256"]


def test_plan_results_and_trace_records_name_the_program_used(tmp_path, root):
    record = tmp_path / "rec.jsonl"
    planner = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick", record_path=record)
    result = planner.plan(INTENT, task_id="t1")
    assert result.program == planner.program_ref and result.program.kind == "model"
    (rec,) = list(read_jsonl_traces(record))
    assert rec.run["program"] == planner.program_ref.stamp()


def test_plan_json_reports_the_shipped_model_program_or_else_the_tier_program():
    result = CliRunner().invoke(cli, ["plan", INTENT, "--model", MODEL, "--lm", "sim:mid-tier", "--no-history", "--json"])
    assert result.exit_code == 0, result.output
    variant = budget_for(MODEL).resolved_prompt_variant
    shipped = model_key(MODEL, variant) in read_manifest(compiled_dir())["programs"]
    program = json.loads(result.output)["program"]
    assert program["kind"] == ("model" if shipped else "tier")
    assert program["path"] == (f"models/{model_slug(MODEL)}/{variant}.json" if shipped else f"tier_{budget_for(MODEL).tier}/{variant}.json")
    forced = CliRunner().invoke(cli, ["plan", INTENT, "--model", MODEL, "--lm", "sim:mid-tier", "--no-history", "--json",
                                      "--program", "bare"])
    assert json.loads(forced.output)["program"] == {"kind": "bare", "path": None, "sha256": None, "optimizer": None}


def test_compile_model_cli_writes_the_program_and_says_what_it_will_cost(tmp_path):
    result = CliRunner().invoke(cli, [
        "compile", "--model", MODEL, "--variant", "full_steps", "--optimizer", "bootstrap", "--lm", "sim:mid-tier",
        "--valset", "3", "--out", str(tmp_path), "--no-progress",
    ])
    assert result.exit_code == 0, result.output
    assert "estimated LM calls: ~" in result.output
    assert f"model {MODEL} full_steps" in result.output
    entry = read_manifest(tmp_path)["programs"][model_key(MODEL, "full_steps")]
    assert entry["dev_n"] == 3 and entry["optimizer_settings"]["valset"] == 3


@pytest.mark.parametrize(("args", "says"), [
    (["--model", MODEL, "--variant", "full_steps", "--optimizer", "bootstrap"], "--model needs --lm"),
    (["--model", MODEL, "--tier", "C", "--lm", "sim:mid-tier"], "not with --tier or --all"),
    (["--tier", "C", "--variant", "full_steps", "--budgets", str(default_budgets_path())], "--budgets gives a --model's"),
])
def test_compile_model_usage_errors(tmp_path, args, says):
    result = CliRunner().invoke(cli, ["compile", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2 and says in result.output


def test_two_model_ids_with_one_slug_do_not_overwrite_each_others_program(tmp_path, root):
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    twin = MODEL.replace("/", "-")  # local-qwen2.5-coder-0.5b-instruct: the same folder name
    with pytest.raises(InputError, match="share the program folder"):
        compile_one(None, "single_pick", model=twin, optimizer="bootstrap", lm="sim:mid-tier",
                        train=TRAIN, dev=DEV, out_root=copy)
    assert read_manifest(copy)["programs"][model_key(MODEL, "single_pick")]["model"] == MODEL


def test_model_slugs_name_a_folder_and_refuse_an_id_without_letters():
    assert model_slug("openrouter/nvidia/nemotron-3-super-120b-a12b:free") == "openrouter-nvidia-nemotron-3-super-120b-a12b-free"
    assert model_slug(" Local/Qwen2.5 ") == "local-qwen2.5"
    with pytest.raises(CompiledProgramError):
        model_slug("///")


def test_mlflow_logs_a_model_compile_with_its_estimate_and_call_counts(tmp_path, monkeypatch):
    from helmdeck_dspy.compilation import runs

    logged = []
    monkeypatch.setattr(runs, "log_compile_run", lambda params, metrics, path, **kw: logged.append((params, metrics, path)))
    options = runs.CompileOptions(model=MODEL, optimizer="bootstrap", lm="sim:mid-tier", teacher_lm="sim:frontier-like",
                                  out_root=tmp_path, settings=OptimizerSettings(valset=2))
    (r,) = runs.compile_programs([(None, "single_pick")], options, mlflow=True)
    (params, metrics, path), = logged
    assert path == model_program_path(MODEL, "single_pick", tmp_path)
    assert params["model"] == MODEL and params["teacher_lm"] == "sim:frontier-like"
    assert params["optimizer_settings"]["valset"] == 2
    assert metrics["estimated_calls"] == r.estimated_calls > 0
    assert metrics["lm_calls"] == r.lm_calls > 0 and metrics["teacher_calls"] == r.teacher_calls > 0


def test_another_tiers_program_can_be_chosen_and_survives_a_variant_switch(root):
    planner = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick", program="tier:C")
    assert planner.program_ref.kind == "tier" and planner.program_ref.path == "tier_C/single_pick.json"
    switched = planner.derive(variant="full_steps")
    assert switched.program_ref.path == "tier_C/full_steps.json"
    filed = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick",
                              program=str(model_program_path(MODEL, "single_pick", root)))
    assert filed.derive(variant="full_steps").program_ref.kind == "tier"  # a file fits one variant: back to auto


def test_a_fallback_model_keeps_a_general_choice_but_not_a_program_chosen_for_the_first(root):
    from helmdeck_dspy.planning.resilience.policy import FallbackModel

    other = FallbackModel(model=OTHER, lm="sim:mid-tier")
    filed = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick",
                              program=str(model_program_path(MODEL, "single_pick", root)))
    assert filed.for_fallback(other).program_ref.kind == "tier"
    tier_c = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, program="tier:C")
    assert tier_c.for_fallback(other).program_ref.path == Planner.for_model(
        OTHER, lm="sim:mid-tier", compiled_root=root).program_ref.path
    bare = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, program="bare")
    assert bare.for_fallback(other).program_ref.kind == "bare"


def test_a_program_file_says_what_it_was_compiled_for_and_another_variant_refuses_it(root, capsys):
    path = model_program_path(MODEL, "single_pick", root)
    about = json.loads(path.read_text())["metadata"]["helmdeck"]
    assert about["variant"] == "single_pick" and about["model"] == MODEL and about["optimizer"] == "bootstrap"
    assert about["inputs_sha256"] == read_manifest(root)["programs"][model_key(MODEL, "single_pick")]["inputs_sha256"]
    with pytest.raises(CompiledProgramError, match="a single_pick program, but this planner plans full_steps"):
        Planner.for_model(MODEL, lm="sim:mid-tier", program=str(path), variant="full_steps")
    # a bundled program from before files described themselves is told by its instructions
    with pytest.raises(CompiledProgramError, match="a full_steps program, but this planner plans single_pick"):
        resolve_program(MODEL, "B", "single_pick", None, str(compiled_dir() / "tier_B" / "full_steps.json"))
    # the CLI: one line, exit 1, and the way out
    result = CliRunner().invoke(cli, ["plan", INTENT, "--model", OTHER, "--lm", "sim:mid-tier", "--no-history",
                                      "--program", str(path)])
    assert result.exit_code == 1 and "plan with --variant single_pick" in str(result.exception or result.output)
    ok = CliRunner().invoke(cli, ["plan", INTENT, "--model", OTHER, "--lm", "sim:mid-tier", "--no-history",
                                  "--program", str(path), "--variant", "single_pick"])
    assert ok.exit_code == 0, ok.output
