"""The shipped fitted simulator profiles (eval/profiles/fitted-*.toml) reproduce their real trace
sets: simulated on the same tasks and variants, every strict, tolerant and failure-cause rate falls
inside the real rate's Wilson 95% interval, and completion tokens p50 and latency p50 are within the
check's tolerance (fitting/check.py)."""

from __future__ import annotations

import pytest

from helmdeck_dspy.engines.profile import list_profiles, load_profile
from helmdeck_dspy.fitting.check import (
    DEFAULT_TOLERANCE,
    check_profile,
    fitted_traces_path,
)
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.io.resources import bundled_dir

REAL_SETS = ("qwen2.5-coder-0.5b", "gemma-3-270m", "qwen2.5-coder-1.5b")  # eval/traces/local-NAME.jsonl
FITTED = list_profiles(fitted=True)


def _fit_command(name: str) -> str:
    return (f"helmdeck-dspy traces fit eval/traces/local-{name}.jsonl --name fitted-{name} "
            f"--out eval/profiles/fitted-{name}.toml --check")


@pytest.mark.parametrize("name", FITTED or ["(none shipped)"])
def test_shipped_fitted_profile_reproduces_its_real_set(name, tmp_path):
    if name == "(none shipped)":
        pytest.skip("no fitted profile is shipped in eval/profiles/")
    profile = load_profile(name)
    src = profile.fitted_to
    assert src is not None and profile.model == src.model
    traces = fitted_traces_path(profile)
    if not traces.exists():
        pytest.skip(f"{src.traces}, the trace set {name} was fitted to, is not there")
    assert file_sha256(traces) == src.sha256, (
        f"{src.traces} changed since {name} was fitted to it: fit again ({_fit_command(name.removeprefix('fitted-'))})")
    report = check_profile(profile, traces, model=src.model, work_dir=tmp_path, tolerance=DEFAULT_TOLERANCE)
    assert report.n_real == src.records
    assert report.ok, report.table()


@pytest.mark.parametrize("name", REAL_SETS)
def test_each_real_set_has_a_fitted_profile(name):
    traces = bundled_dir() / "traces" / f"local-{name}.jsonl"
    if not traces.exists():
        pytest.skip(f"eval/traces/local-{name}.jsonl is not recorded yet (bash scripts/record_real_traces.sh {name})")
    fitted_to = {load_profile(p).fitted_to.traces for p in FITTED}
    if f"eval/traces/local-{name}.jsonl" not in fitted_to:
        pytest.skip(f"eval/traces/local-{name}.jsonl has no fitted profile yet: {_fit_command(name)}")
    profile = load_profile(f"fitted-{name}")
    assert profile.fitted_to.traces == f"eval/traces/local-{name}.jsonl"
    assert profile.model == profile.fitted_to.model and profile.model.startswith("local/")
