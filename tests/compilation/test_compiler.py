"""Per-tier compilation: fit (no LM), DSPy's optimizers against the simulated tier LM, the
manifest, the CLI, and loading a compiled program into the planner."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.cli.app import cli, main
from tests.compile_helpers import compile_one
from helmdeck_dspy.compilation.manifest import CompileResult, manifest_path
from helmdeck_dspy.compilation.tier_setup import TierSetup, load_tier_config
from helmdeck_dspy.engines.lm_spec import make_lm
from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.sections import CATALOG_HEADER
from helmdeck_dspy.program.calls import capture_completions
from helmdeck_dspy.program.store import load_program, program_path
from helmdeck_dspy.tasks import load_tasks

NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
DEEPSEEK = "openrouter/deepseek/deepseek-v3.2"
TRAIN, DEV = load_tasks("train"), load_tasks("dev")
FIELDS = set(CompileResult.model_fields)


def manifest(root):
    return json.loads(manifest_path(root).read_text(encoding="utf-8"))


def saved_demos(root, tier, variant):
    return json.loads(program_path(tier, variant, root).read_text(encoding="utf-8"))["plan"]["demos"]


# ----------------------------------------------------------------------------- fit


@pytest.mark.parametrize(("tier", "variant"), [("A", "full_steps"), ("B", "single_pick"), ("C", "full_steps"),
                                               ("C", "single_pick")])
def test_fit_writes_the_program_and_manifest_without_an_lm(tmp_path, tier, variant):
    config = load_tier_config(tier)
    r = compile_one(tier, variant, optimizer="fit", out_root=tmp_path)
    assert r.lm_calls == 0 and r.prompt_tokens_used == 0 and r.completion_tokens_used == 0
    assert r.lm is None and r.dev_score_before is None and r.dev_score_after is None
    assert (r.tier, r.variant, r.optimizer, r.budget_model) == (tier, variant, "fit", config.budget_model)
    assert (r.train_n, r.dev_n) == (len(TRAIN), len(DEV))
    assert len(r.train_sha256) == 64 and r.train_sha256 != r.dev_sha256
    assert r.path == f"tier_{tier}/{variant}.json"
    assert (tmp_path / r.path).is_file()

    entry = manifest(tmp_path)["programs"][f"tier_{tier}/{variant}"]
    assert set(entry) == FIELDS
    assert entry == json.loads(r.model_dump_json())

    demos = saved_demos(tmp_path, tier, variant)
    assert len(demos) == r.demos
    assert 1 <= r.demos <= config.max_demos
    if config.max_demos >= 2:
        assert len({d["complexity"] for d in demos}) >= 2
    if variant == "single_pick":
        assert all(len(d["steps"]) == 1 for d in demos)
    budget = budget_for(config.budget_model)
    assert r.prompt_tokens <= budget.input_tokens - budget.output_tokens
    if config.prompt_token_target:
        assert r.prompt_tokens <= config.prompt_token_target
    # the recorded prompt size is the size of the saved program's prompt
    setup = TierSetup(tier, variant)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = load_program(tier, variant, tmp_path)
    assert len(program.plan.demos) == r.demos
    assert setup.prompt_tokens(program) == r.prompt_tokens


def test_tier_c_prompt_fits_its_token_target(tmp_path):
    target = load_tier_config("C").prompt_token_target
    assert target == 4000
    for variant in ("full_steps", "single_pick"):
        r = compile_one("C", variant, out_root=tmp_path)
        assert r.prompt_tokens <= target
        assert r.demos == load_tier_config("C").max_demos
    assert set(manifest(tmp_path)["programs"]) == {"tier_C/full_steps", "tier_C/single_pick"}


def test_a_tight_prompt_token_target_limits_the_demos(tmp_path, monkeypatch):
    import helmdeck_dspy.compilation.tier_setup as compiler
    from helmdeck_dspy.program.modules import MODULES

    setup = TierSetup("C", "full_steps")
    bare = setup.prompt_tokens(MODULES["full_steps"]())
    roomy = compile_one("C", "full_steps", out_root=tmp_path / "roomy")
    assert roomy.demos == 3 and roomy.prompt_tokens > bare + 60
    tight = load_tier_config("C").model_copy(update={"prompt_token_target": roomy.prompt_tokens - 60})
    monkeypatch.setattr(compiler, "load_tier_config", lambda tier: tight)
    r = compile_one("C", "full_steps", out_root=tmp_path / "tight")
    assert 1 <= r.demos < roomy.demos
    assert r.prompt_tokens <= tight.prompt_token_target


def test_recompiling_replaces_the_manifest_entry(tmp_path):
    first = compile_one("C", "single_pick", out_root=tmp_path, train=TRAIN[:40])
    second = compile_one("C", "single_pick", out_root=tmp_path)
    entries = manifest(tmp_path)["programs"]
    assert list(entries) == ["tier_C/single_pick"]
    assert entries["tier_C/single_pick"]["train_n"] == len(TRAIN) != first.train_n
    assert entries["tier_C/single_pick"]["train_sha256"] == second.train_sha256


# ----------------------------------------------------------------------------- with an LM


def test_sim_auto_measures_the_dev_score(tmp_path):
    dev = DEV[:10]
    r = compile_one("C", "single_pick", optimizer="fit", lm="sim:auto", dev=dev, out_root=tmp_path,
                        seed=9137)
    assert r.lm == f"sim:{load_tier_config('C').sim_profile}" == "sim:nemotron-like"
    for score in (r.dev_score_before, r.dev_score_after):
        assert isinstance(score, float) and 0.0 <= score <= 1.0
    assert r.lm_calls == 2 * len(dev)  # one call per dev task, before and after
    assert r.prompt_tokens_used > 0 and r.completion_tokens_used > 0
    assert manifest(tmp_path)["programs"]["tier_C/single_pick"]["lm_calls"] == r.lm_calls


def test_a_second_identical_bootstrap_compile_is_served_from_the_cache(tmp_path):
    # seed 4242 appears nowhere else in the suite: it is part of the sim LM's model string, so
    # the first compile cannot hit answers another test cached.
    train, dev = TRAIN[:12], DEV[:6]
    kw = dict(optimizer="bootstrap", lm="sim:mid-tier", train=train, dev=dev, seed=4242)
    first = compile_one("B", "full_steps", out_root=tmp_path / "one", **kw)
    second = compile_one("B", "full_steps", out_root=tmp_path / "two", **kw)
    assert first.lm_calls > 0
    assert second.lm_calls == 0 and second.prompt_tokens_used == 0
    assert (second.dev_score_before, second.dev_score_after, second.demos) == (
        first.dev_score_before, first.dev_score_after, first.demos)
    assert 1 <= first.demos <= load_tier_config("B").max_demos
    assert saved_demos(tmp_path / "one", "B", "full_steps") == saved_demos(tmp_path / "two", "B", "full_steps")


@pytest.mark.parametrize("optimizer", ["bootstrap", "mipro", "gepa"])
def test_optimizers_other_than_fit_need_an_lm(tmp_path, optimizer):
    with pytest.raises(HelmdeckError, match="needs an LM"):
        compile_one("B", "full_steps", optimizer=optimizer, out_root=tmp_path)
    assert not manifest_path(tmp_path).exists()


def test_unknown_optimizer_tier_or_variant(tmp_path):
    with pytest.raises(HelmdeckError):
        compile_one("B", "full_steps", optimizer="magic", out_root=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(HelmdeckError):
        compile_one("D", "full_steps", out_root=tmp_path)
    with pytest.raises(HelmdeckError):
        compile_one("B", "all_steps", out_root=tmp_path)


@pytest.mark.parametrize("optimizer", ["mipro", "gepa"])
def test_mipro_and_gepa_run_end_to_end_on_tiny_subsets(tmp_path, optimizer):
    r = compile_one("B", "full_steps", optimizer=optimizer, lm="sim:mid-tier", train=TRAIN[:6], dev=DEV[:4],
                        out_root=tmp_path, seed=31)
    assert r.optimizer == optimizer and r.lm == "sim:mid-tier" and (r.train_n, r.dev_n) == (6, 4)
    assert r.lm_calls > 0
    for score in (r.dev_score_before, r.dev_score_after):
        assert isinstance(score, float) and 0.0 <= score <= 1.0
    assert r.demos <= load_tier_config("B").max_demos
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planner = Planner.for_model(DEEPSEEK, lm=make_lm("sim:mid-tier", cache=False), compiled_root=tmp_path,
                                    use_filter=False)
    assert not [w for w in caught if "no compiled program" in str(w.message)]
    assert len(planner.program.plan.demos) == r.demos
    assert planner.plan("generate an image of a red fox").ok


# ----------------------------------------------------------------------------- loading a compiled program


def test_compiled_program_loads_into_the_planner_with_demos_as_pairs(tmp_path):
    r = compile_one("C", "single_pick", out_root=tmp_path)
    demos = saved_demos(tmp_path, "C", "single_pick")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        planner = Planner.for_model(NEMOTRON, lm=make_lm("sim:nemotron-like", cache=False), compiled_root=tmp_path,
                                    use_filter=False)
    assert not [w for w in caught if "no compiled program" in str(w.message)]
    with capture_completions() as calls:
        planner.plan("generate an image of a red fox and send it to the team by email")
    (call,) = calls
    messages = call.messages
    assert len(messages) == 2 * r.demos + 1
    assert [m["role"] for m in messages] == ["user", "assistant"] * r.demos + ["user"]
    for i, d in enumerate(demos):
        user, answer = messages[2 * i]["content"], messages[2 * i + 1]["content"]
        assert user.startswith(f"USER REQUEST:\n{d['user_intent']}")
        assert CATALOG_HEADER not in user and '"packs"' not in user
        assert [s["tool"] for s in json.loads(answer)["steps"]] == [s["tool"] for s in d["steps"]]
    assert messages[-1]["content"].startswith(CATALOG_HEADER)  # tier C: the catalog goes in the user message
    assert CATALOG_HEADER not in call.system


def test_tier_b_demos_leave_the_catalog_in_the_system_message(tmp_path):
    r = compile_one("B", "full_steps", out_root=tmp_path)
    planner = Planner.for_model(DEEPSEEK, lm=make_lm("sim:mid-tier", cache=False), compiled_root=tmp_path,
                                use_filter=False)
    with capture_completions() as calls:
        planner.plan("generate an image of a red fox")
    (call,) = calls
    assert CATALOG_HEADER in call.system
    assert len(call.messages) == 2 * r.demos + 1
    assert not any(CATALOG_HEADER in m["content"] for m in call.messages)


def test_without_a_compiled_program_the_planner_warns(tmp_path):
    with pytest.warns(UserWarning, match="no compiled program"):
        Planner.for_model(NEMOTRON, lm=make_lm("sim:nemotron-like", cache=False), compiled_root=tmp_path)


# ----------------------------------------------------------------------------- CLI


def run(*args):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    "args",
    [
        ["--tier", "C"],
        ["--variant", "single_pick"],
        ["--all", "--tier", "C"],
        ["--all", "--tier", "C", "--variant", "single_pick"],
        ["--all", "--variant", "full_steps"],
        [],
    ],
)
def test_cli_compile_usage_errors_exit_2(tmp_path, args):
    r = run("compile", *args, "--out", str(tmp_path))
    assert r.exit_code == 2, r.output
    assert not manifest_path(tmp_path).exists()


def test_cli_compile_json_prints_one_manifest_entry(tmp_path):
    out = tmp_path / "compiled"
    r = run("compile", "--tier", "C", "--variant", "single_pick", "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    printed = json.loads(r.output)
    assert isinstance(printed, list) and len(printed) == 1
    (entry,) = printed
    assert set(entry) == FIELDS
    assert (entry["tier"], entry["variant"], entry["optimizer"], entry["lm_calls"]) == ("C", "single_pick", "fit", 0)
    assert manifest(out)["programs"] == {"tier_C/single_pick": entry}
    assert (out / "tier_C" / "single_pick.json").is_file()


def test_cli_compile_text_output_and_lm_errors(tmp_path, capsys):
    r = run("compile", "--tier", "B", "--variant", "full_steps", "--out", str(tmp_path))
    assert r.exit_code == 0 and "tier B full_steps" in r.output and "LM calls 0" in r.output
    with pytest.raises(SystemExit) as info:
        main(["compile", "--tier", "B", "--variant", "full_steps", "--optimizer", "bootstrap", "--out", str(tmp_path)])
    assert info.value.code == 2  # a usage error (issue 52, item 7)
    assert "needs an LM" in capsys.readouterr().err


def test_target_and_run_write_nothing_until_persist(tmp_path):
    from helmdeck_dspy.compilation.compiler import compile_target, compiled_entry, persist_compile, run_compile
    from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest

    request = CompileRequest(tier="C", variant="single_pick", options=CompileOptions(out_root=tmp_path))
    target = compile_target(request)
    assert target.done() is None and compiled_entry(request) is None
    run = run_compile(target)
    assert list(tmp_path.iterdir()) == []  # the optimizer ran; nothing is on disk yet
    result = persist_compile(target, run)
    assert result.demos == len(run.program.plan.demos) > 0 and target.path.is_file()
    again = compiled_entry(request)
    assert again is not None and again.skipped and again.program_sha256 == result.program_sha256
