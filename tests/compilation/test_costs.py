"""What a compile costs: the call estimate made before it starts, the call meter while it runs
(live and cached apart), and an interrupted compile finishing on its cached calls."""

from __future__ import annotations

import pytest

from tests.compile_helpers import compile_one
from helmdeck_dspy.compilation.estimate import estimate_calls
from helmdeck_dspy.compilation.settings import load_optimizer_settings
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.tasks import load_tasks

MODEL = "local/qwen2.5-coder-0.5b-instruct"
TRAIN, DEV = load_tasks("train")[:16], load_tasks("dev")[:4]


class Interrupt(BaseException):
    """Stands in for a kill part-way through a compile (like KeyboardInterrupt, not an Exception: DSPy catches those)."""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh DSPy response cache for one test."""
    import dspy

    path = tmp_path / "cache"
    kept = dspy.cache  # put back as it was, never a fresh default cache over the shared ~/.dspy_cache
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(path))
    yield path
    dspy.cache = kept


@pytest.mark.parametrize("optimizer", ["bootstrap", "mipro", "gepa"])
def test_the_calls_made_stay_within_the_estimates_maximum(tmp_path, optimizer):
    settings = load_optimizer_settings().model_copy(update={"valset": 4})
    seen = []
    r = compile_one(None, "single_pick", model=MODEL, optimizer=optimizer, lm="sim:mid-tier",
                        teacher_lm="sim:frontier-like", train=TRAIN, dev=DEV, out_root=tmp_path, settings=settings,
                        on_call=lambda meter: seen.append(meter.calls))
    est = estimate_calls(optimizer, settings, train_n=len(TRAIN), val_n=4, max_demos=4, scored=True)
    assert r.estimated_calls == est.total > 0
    assert seen == list(range(1, len(seen) + 1))  # on_call after every call
    assert r.lm_calls + r.cached_calls == seen[-1] <= est.total_max + est.replayed
    assert 0 < r.teacher_calls <= est.teacher_max


def test_the_estimate_bootstraps_as_many_demos_as_the_optimizer_does():
    s = load_optimizer_settings()
    assert s.demo_cap("bootstrap", 0) == 1 and s.demo_cap("bootstrap", 4) == 4
    assert s.demo_cap("mipro", 4) == min(4, s.mipro.max_demos) and s.demo_cap("mipro", 1) == 1
    one = estimate_calls("mipro", s, train_n=50, val_n=4, max_demos=1, scored=True)
    four = estimate_calls("mipro", s, train_n=50, val_n=4, max_demos=4, scored=True)
    assert one.teacher < four.teacher and one.replayed == four.replayed == 8


def test_an_interrupted_compile_run_again_replays_its_calls_from_the_cache(tmp_path, cache_dir):
    settings = load_optimizer_settings().model_copy(update={"valset": 4})
    kw = {"model": MODEL, "optimizer": "bootstrap", "lm": "sim:mid-tier", "teacher_lm": "sim:frontier-like",
          "train": TRAIN, "dev": DEV, "settings": settings}
    full = compile_one(None, "single_pick", out_root=tmp_path / "full", **kw)
    assert full.cached_calls == 0 and full.lm_calls > 6

    def stop_after_six(meter):
        if meter.calls == 6:
            raise Interrupt

    cache_dir_2 = tmp_path / "cache2"
    import dspy

    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(cache_dir_2))
    with pytest.raises(Interrupt):
        compile_one(None, "single_pick", out_root=tmp_path / "cut", on_call=stop_after_six, **kw)
    again = compile_one(None, "single_pick", out_root=tmp_path / "cut", **kw)
    assert again.cached_calls == 6  # the six answered before the cut are not asked again
    assert again.lm_calls == full.lm_calls - 6
    assert again.demos == full.demos


def test_optimizer_settings_can_be_replaced_from_a_file_and_bad_ones_are_named(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text("[optimizer]\nvalset = 5\n[optimizer.mipro]\nnum_trials = 2\n")
    s = load_optimizer_settings(good)
    assert (s.valset, s.mipro.num_trials, s.mipro.num_candidates) == (5, 2, 3)
    bad = tmp_path / "bad.toml"
    bad.write_text("[optimizer.mipro]\nnum_trails = 2\n")
    with pytest.raises(DataFileError, match=r"bad\.toml.*mipro\.num_trails"):
        load_optimizer_settings(bad)
