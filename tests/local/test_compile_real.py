"""Compiling a per-model program against the real model: Qwen2.5 Coder 0.5B served by llama.cpp.

A small bootstrap run (4 training tasks, 1 valset task) compiles the model's own single_pick
program; ``Planner.for_model`` then plans with it. Run again, the same compile is answered from
DSPy's response cache and says so: no cached answer is counted as a call the model made. Needs
the ``local`` extra and the installed model; skips, saying which is missing, otherwise.
"""

from __future__ import annotations

import shutil

import pytest

from tests.compile_helpers import compile_one
from helmdeck_dspy.compilation.settings import load_optimizer_settings
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.local.registry import get_model
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.store import manifest_path, model_key, read_manifest
from helmdeck_dspy.tasks import load_tasks
from tests.local.conftest import REAL_MODEL, real_model_marks

NAME = REAL_MODEL
MODEL = get_model(NAME)

pytestmark = real_model_marks()


@pytest.fixture(autouse=True)
def _stop_servers(stop_local_servers):
    yield


def test_a_bootstrap_compile_on_the_real_model_is_picked_up_by_for_model_and_replays_from_the_cache(tmp_path):
    import dspy

    kept = dspy.cache  # put back as it was: building a fresh default cache opens the shared ~/.dspy_cache,
    # whose sqlite another test process may hold (a "disk I/O error" under xdist)
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "cache"))
    root = tmp_path / "compiled"
    shutil.copytree(compiled_dir() / "tier_B", root / "tier_B")
    shutil.copytree(compiled_dir() / "tier_C", root / "tier_C")
    shutil.copy(manifest_path(compiled_dir()), manifest_path(root))
    settings = load_optimizer_settings().model_copy(update={"valset": 1})
    kw = {"model": MODEL.model_id, "optimizer": "bootstrap", "lm": f"local:{NAME}", "train": load_tasks("train")[:4],
          "dev": load_tasks("dev")[:1], "out_root": root, "seed": 7, "temperature": 0.0, "settings": settings}
    try:
        first = compile_one(None, "single_pick", **kw)
        assert first.lm_calls >= 3 and first.cached_calls == 0  # before, 1-4 bootstrap attempts, after
        assert first.prompt_tokens_used > 0 and first.completion_tokens_used > 0
        assert first.lm_calls <= first.estimated_calls + 2
        entry = read_manifest(root)["programs"][model_key(MODEL.model_id, "single_pick")]
        assert entry["lm"] == f"local:{NAME}" and entry["temperature"] == 0.0 and entry["model"] == MODEL.model_id

        planner = Planner.for_model(MODEL.model_id, lm=f"local:{NAME}", compiled_root=root, variant="single_pick")
        assert planner.program_ref.kind == "model" and planner.program_ref.sha256 == entry["program_sha256"]
        result = planner.plan("take a screenshot of https://example.com")
        assert result.program == planner.program_ref

        again = compile_one(None, "single_pick", **kw)  # not resumed from the manifest: every call is re-sent
        assert again.lm_calls == 0 and again.cached_calls == first.lm_calls
        assert again.program_sha256 == first.program_sha256
    finally:
        dspy.cache = kept
