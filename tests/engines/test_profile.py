"""Simulator profiles (eval/profiles/*.toml) and ``sim:`` LM specs."""

from __future__ import annotations

import dspy
import pytest

from helmdeck_dspy.budgets import budget_for
from helmdeck_dspy.compilation.tier_setup import load_tier_config
from helmdeck_dspy.domain import TIERS
from helmdeck_dspy.engines.lm_spec import lm_kind, make_lm
from helmdeck_dspy.engines.profile import (
    SimProfile,
    list_profiles,
    load_profile,
    profiles_dir,
)
from helmdeck_dspy.engines.sim import SimEngine
from helmdeck_dspy.errors import DataFileError, HelmdeckError

BUNDLED = ["frontier-like", "kimi-like", "mid-tier", "nemotron-like"]


def test_all_four_bundled_profiles_load():
    assert list_profiles() == BUNDLED
    for name in BUNDLED:
        p = load_profile(name)
        assert isinstance(p, SimProfile) and p.name == name
        assert p == load_profile(profiles_dir() / f"{name}.toml")  # by name or by path


def test_bundled_profiles_stand_for_models_of_their_tier():
    tiers = {"frontier-like": "A", "mid-tier": "B", "nemotron-like": "C", "kimi-like": "C"}
    for name, tier in tiers.items():
        budget = budget_for(load_profile(name).model)
        assert budget.tier == tier and budget.matched != "fallback"
    for tier in TIERS:  # sim:auto's profile per tier stands for that tier
        assert budget_for(load_profile(load_tier_config(tier).sim_profile).model).tier == tier


def test_nemotron_profile_is_a_separate_field_reasoner():
    p = load_profile("nemotron-like")
    assert p.model == "openrouter/nvidia/nemotron-3-super-120b-a12b:free"
    assert p.shape.reasoning == "field" and not p.shape.reasoning_counts_toward_cap
    assert load_profile("kimi-like").shape.reasoning == "inline"
    assert load_profile("frontier-like").shape.reasoning == "none"


GOOD = 'name = "custom"\nmodel = "x/y"\n'


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (GOOD + "colour = 'red'\n", "colour"),  # unknown top-level key
        (GOOD + "[shape]\nfence_rat = 0.1\n", "fence_rat"),  # unknown key in a table
        (GOOD + "[planning]\nwrong_tool_rate = 1.5\n", "wrong_tool_rate"),  # a rate above 1
        (GOOD + "[shape]\nleak_rate = -0.1\n", "leak_rate"),  # a negative rate
        ('name = "Bad Name"\nmodel = "x/y"\n', "name"),  # not a lowercase slug
        ('name = "custom"\n', "model"),  # missing model
        (GOOD + "[shape]\nreasoning = 'sometimes'\n", "reasoning"),
        (GOOD + "[timing]\ntokens_per_s = 0\n", "tokens_per_s"),
        ("name = \n", "TOML"),  # not TOML
    ],
)
def test_bad_profile_raises_data_file_error_naming_the_file(tmp_path, text, fragment):
    path = tmp_path / "custom.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        load_profile(path)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def test_a_good_profile_file_loads_with_defaults(tmp_path):
    path = tmp_path / "custom.toml"
    path.write_text(GOOD + "[planning]\nwrong_tool_rate = 1.0\n", encoding="utf-8")
    p = load_profile(path)
    assert p.name == "custom" and p.planning.wrong_tool_rate == 1.0 and p.planning.demo_gain == 0.0
    assert p.shape.reasoning == "none" and p.shape.strict_json_obeys


def test_missing_profile_file_is_a_data_file_error(tmp_path):
    with pytest.raises(DataFileError) as info:
        load_profile(tmp_path / "absent.toml")
    assert str(tmp_path / "absent.toml") in str(info.value)


def test_make_lm_builds_a_sim_lm():
    lm = make_lm("sim:nemotron-like")
    assert isinstance(lm, dspy.LM) and lm_kind("sim:nemotron-like") == "sim"
    # the name carries the profile's content hash and the simulator version (DSPy's cache key)
    assert lm.model.startswith("sim/nemotron-like/v") and lm.model.endswith("/seed0")
    assert isinstance(lm.engine, SimEngine) and lm.engine.profile == load_profile("nemotron-like")
    seeded = make_lm("sim:mid-tier", seed=5, cache=False)
    assert seeded.model.startswith("sim/mid-tier/") and seeded.model.endswith("/seed5") and seeded.engine.seed == 5


def test_make_lm_takes_a_profile_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nmodel = "x/y"\n', encoding="utf-8")
    lm = make_lm(f"sim:{path}")
    assert lm.model.startswith("sim/mine/") and lm.model.endswith("/seed0") and lm.engine.profile.name == "mine"


def test_unknown_sim_profile_lists_the_bundled_ones():
    with pytest.raises(HelmdeckError) as info:
        make_lm("sim:unknown")
    message = str(info.value)
    assert "unknown" in message
    for name in BUNDLED:
        assert name in message


def test_sim_lm_name_changes_with_profile_content_so_the_cache_cannot_serve_stale_answers():
    from helmdeck_dspy.engines.sim import sim_model_name

    base = load_profile("nemotron-like")
    changed = base.model_copy(update={"shape": base.shape.model_copy(update={"leak_rate": 0.5})})
    assert sim_model_name(base, 0) != sim_model_name(changed, 0)
    assert sim_model_name(base, 0) == sim_model_name(load_profile("nemotron-like"), 0)
    assert sim_model_name(base, 0) != sim_model_name(base, 1)


def test_fitted_profiles_are_listed_apart_from_the_hand_written_ones(tmp_path, monkeypatch):
    from helmdeck_dspy.engines import profile as profile_module

    (tmp_path / "mine.toml").write_text('name = "mine"\nmodel = "x/y"\n', encoding="utf-8")
    (tmp_path / "fitted-mine.toml").write_text(
        'name = "fitted-mine"\nmodel = "x/y"\n[fitted_to]\ntraces = "eval/traces/x.jsonl"\n'
        f'sha256 = "{"0" * 64}"\nmodel = "x/y"\nrecords = {{ full_steps = 3 }}\nfitted_on = "2026-01-01"\n',
        encoding="utf-8")
    monkeypatch.setattr(profile_module, "profiles_dir", lambda: tmp_path)
    assert profile_module.list_profiles() == ["mine"]  # what `traces simulate -p all` runs
    assert profile_module.list_profiles(fitted=True) == ["fitted-mine"]
    assert load_profile("fitted-mine").fitted_to.records == {"full_steps": 3}
    with pytest.raises(DataFileError, match="fitted-mine"):
        load_profile("nope")


def test_shipped_fitted_profiles_stand_for_local_models_and_name_their_trace_set():
    for name in list_profiles(fitted=True):
        p = load_profile(name)
        assert p.fitted_to is not None and p.fitted_to.model == p.model, name
        assert p.fitted_to.traces.startswith("eval/traces/"), name
        assert budget_for(p.model).matched != "fallback", name
        assert name not in list_profiles()
