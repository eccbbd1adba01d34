"""``traces simulate``: the real planner against the simulated tier LM, recorded as trace records."""

from __future__ import annotations

from collections import Counter

import pytest
from click.testing import CliRunner

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.cli.app import cli, main
from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.engines.profile import list_profiles, load_profile
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.recording.trace_sets import resolve_profiles, simulate
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.io import read_jsonl_traces

DEV = load_tasks("dev")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def plans(records):
    return [r for r in records if r.call == "plan"]


def test_records_carry_source_task_and_variant(tmp_path):
    out = tmp_path / "sim.jsonl"
    tasks = DEV[:5]
    profiles = [load_profile("nemotron-like"), load_profile("mid-tier")]
    written = simulate(profiles, tasks, out)
    records = list(read_jsonl_traces(out))
    assert written == len(plans(records)) == 2 * 2 * 5
    assert len({r.id for r in records}) == len(records)
    for p in profiles:
        for variant in VARIANTS:
            group = [r for r in plans(records) if r.source == f"sim:{p.name}" and r.prompt_variant == variant]
            assert [r.task_id for r in group] == [t.id for t in tasks]
            assert [r.intent for r in group] == [t.intent for t in tasks]
            assert all(r.model == p.model and r.tier == budget_for(p.model).tier for r in group)
            assert all(r.max_tokens == budget_for(p.model).output_tokens for r in group)
    assert {r.source for r in records} == {"sim:nemotron-like", "sim:mid-tier"}
    # every plan record carries the completion as it came back
    assert all(r.content is not None or r.error for r in plans(records))
    assert any(r.completion_tokens and r.latency_ms and r.latency_ms > 100 for r in plans(records))
    # filter calls (tier C allows the filter) are marked and labelled with the same task
    for r in records:
        if r.call == "filter":
            assert r.source == "sim:nemotron-like" and r.task_id in {t.id for t in tasks}


def test_a_requested_variant_only(tmp_path):
    out = tmp_path / "sim.jsonl"
    assert simulate([load_profile("frontier-like")], DEV[:3], out, variants=["single_pick"]) == 3
    assert {r.prompt_variant for r in read_jsonl_traces(out)} == {"single_pick"}


def test_n_larger_than_the_split_cycles_with_distinct_intents(tmp_path):
    out = tmp_path / "sim.jsonl"
    tasks = DEV[:3]
    assert simulate([load_profile("mid-tier")], tasks, out, variants=["full_steps"], n=8) == 8
    records = plans(list(read_jsonl_traces(out)))
    assert [r.task_id for r in records] == [t.id for t in (tasks * 3)[:8]]
    assert len({r.intent for r in records}) == 8
    assert [r.intent for r in records[:3]] == [t.intent for t in tasks]
    assert all(r.intent.startswith(next(t.intent for t in tasks if t.id == r.task_id)) for r in records)


def test_n_smaller_than_the_split_takes_the_first_tasks(tmp_path):
    out = tmp_path / "sim.jsonl"
    assert simulate([load_profile("mid-tier")], DEV, out, variants=["full_steps"], n=2) == 2
    assert [r.task_id for r in plans(list(read_jsonl_traces(out)))] == [DEV[0].id, DEV[1].id]


def test_max_tokens_and_seed(tmp_path):
    def contents(seed, name):
        out = tmp_path / name
        simulate([load_profile("nemotron-like")], DEV[:8], out, variants=["full_steps"], max_tokens=321, seed=seed)
        records = plans(list(read_jsonl_traces(out)))
        assert all(r.max_tokens == 321 for r in records)
        return [(r.content, r.reasoning_content, r.completion_tokens) for r in records]

    assert contents(3, "a.jsonl") == contents(3, "b.jsonl")
    assert contents(3, "a.jsonl") != contents(4, "c.jsonl")


def test_resolve_profiles_all_and_paths(tmp_path):
    assert [p.name for p in resolve_profiles(["all"])] == list_profiles()
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nmodel = "openrouter/deepseek/deepseek-v3.2"\n', encoding="utf-8")
    assert [p.name for p in resolve_profiles(["mid-tier", str(path)])] == ["mid-tier", "mine"]
    with pytest.raises(DataFileError):
        resolve_profiles(["nope"])


# ----------------------------------------------------------------------------- CLI


def test_cli_profile_all_covers_every_bundled_profile(tmp_path):
    out = tmp_path / "new" / "folder" / "all.jsonl"  # a folder that does not exist yet is made
    r = run("traces", "simulate", "--profile", "all", "--n", "2", "--out", str(out))
    assert r.exit_code == 0, r.output
    n_expected = len(list_profiles()) * 2 * 2
    assert f"wrote {n_expected} plan records" in r.output
    records = plans(list(read_jsonl_traces(out)))
    assert Counter((r.source, r.prompt_variant) for r in records) == {
        (f"sim:{p}", v): 2 for p in list_profiles() for v in VARIANTS
    }
    assert {r.task_id for r in records} == {DEV[0].id, DEV[1].id}
    assert len({r.id for r in read_jsonl_traces(out)}) == len(list(read_jsonl_traces(out)))


def test_cli_cycles_a_task_file_and_takes_a_profile_path(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.model_dump_json() + "\n" for t in DEV[:2]), encoding="utf-8")
    prof = tmp_path / "mine.toml"
    prof.write_text('name = "mine"\nmodel = "openrouter/deepseek/deepseek-v3.2"\n', encoding="utf-8")
    out = tmp_path / "sim.jsonl"
    r = run("traces", "simulate", "-p", str(prof), "--tasks", str(tasks), "--n", "5", "--variant", "single_pick",
            "--max-tokens", "700", "--out", str(out))
    assert r.exit_code == 0, r.output
    records = plans(list(read_jsonl_traces(out)))
    assert [r.task_id for r in records] == [DEV[0].id, DEV[1].id] * 2 + [DEV[0].id]
    assert len({r.intent for r in records}) == 5
    assert {(r.source, r.prompt_variant, r.max_tokens) for r in records} == {("sim:mine", "single_pick", 700)}


def test_cli_unknown_profile_is_exit_1(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["traces", "simulate", "--profile", "nope", "--out", str(tmp_path / "x.jsonl")])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "nope" in err and "nemotron-like" in err
    assert not (tmp_path / "x.jsonl").exists()


def test_cli_needs_a_profile(tmp_path):
    r = CliRunner().invoke(cli, ["traces", "simulate", "--out", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2


# ----------------------------------------------------------------------------- the bundled set


def test_bundled_nemotron_style_set_covers_every_profile_variant_and_dev_task():
    path = bundled_dir() / "traces" / "nemotron-style.jsonl"
    records = list(read_jsonl_traces(path))
    assert len({r.id for r in records}) == len(records)
    dev_ids = {t.id for t in DEV}
    for name in list_profiles():
        for variant in VARIANTS:
            group = [r for r in plans(records) if r.source == f"sim:{name}" and r.prompt_variant == variant]
            assert {r.task_id for r in group} == dev_ids, (name, variant)
            assert all(r.model == load_profile(name).model for r in group)
    assert all(r.source.startswith("sim:") for r in records)
    assert {r.call for r in records} <= {"plan", "filter"}
