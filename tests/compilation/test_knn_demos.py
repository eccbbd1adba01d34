"""A demo pool chosen at compile time (``compile --knn-demos K``): built from the train split over
the catalog, saved in the program file and the manifest, drawn from per request by the planner,
and only where the planner's catalog has the pool's tools."""

from __future__ import annotations

import json
import warnings

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.errors import CompiledProgramError, InputError
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.demo_pool import GAP_DEMO_TOOLS, best_match, pool_from_tasks
from helmdeck_dspy.program.modules import SinglePick
from helmdeck_dspy.program.store import load_compiled_state, program_path
from helmdeck_dspy.tasks import load_tasks
from tests.compile_helpers import compile_one

TRAIN = load_tasks("train")
CATALOG = load_catalog()
MODEL = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"  # a Tier C row


def test_the_pool_holds_tasks_with_their_packs_and_pipelines_and_gaps_with_the_closest_packs():
    pool = pool_from_tasks(TRAIN, CATALOG, k=3)
    by_id = {d.id: d for d in pool.demos}
    runs = 0
    for task in TRAIN:
        demo = by_id[task.id]
        names = [s.tool for s in task.steps]
        if names:
            run = [s.args["id"] for s in task.steps if s.tool == PIPELINE_RUN_TOOL]
            runs += bool(run)
            assert [t.name for t in demo.tools] == list(dict.fromkeys(n for n in names if n != PIPELINE_RUN_TOOL))
            assert [p.id for p in demo.pipelines] == list(dict.fromkeys(run))
            assert [s["tool"] for s in demo.steps] == names
        else:
            assert len(demo.tools) == GAP_DEMO_TOOLS and demo.steps == () and demo.pipelines == ()
    assert pool.k == 3 and len(pool.demos) == len(TRAIN) and runs > 20


def test_a_task_naming_a_pipeline_the_catalog_lacks_is_left_out():
    task = next(t for t in TRAIN if any(s.tool == PIPELINE_RUN_TOOL for s in t.steps))
    ran = {s.args["id"] for s in task.steps if s.tool == PIPELINE_RUN_TOOL}
    fewer = CATALOG.model_copy(update={"pipelines": tuple(p for p in CATALOG.pipelines if p.id not in ran)})
    assert task.id not in {d.id for d in pool_from_tasks([task], fewer).demos}
    assert [d.id for d in pool_from_tasks([task], CATALOG).demos] == [task.id]


def test_a_compiled_pool_is_saved_recorded_and_drawn_from_per_request(tmp_path):
    r = compile_one("C", "single_pick", out_root=tmp_path, knn_demos=2)
    path = program_path("C", "single_pick", tmp_path)
    saved = json.loads(path.read_text(encoding="utf-8"))["demo_pool"]
    assert saved["k"] == 2 and len(saved["demos"]) == r.demo_pool_size > 0 and r.knn_demos == 2
    assert compile_one("C", "single_pick", out_root=tmp_path, knn_demos=2, resume=True).skipped

    def demos_shown(catalog) -> list[str]:
        rec = tmp_path / f"rec-{len(list(tmp_path.glob('rec-*')))}.jsonl"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(MODEL, lm="sim:mid-tier", catalog=catalog, program=str(path), history=None,
                                        use_filter=False, cache=False, record_path=rec)
        planner.plan("take a screenshot of https://example.com/pricing")
        (record,) = [json.loads(line) for line in rec.read_text(encoding="utf-8").splitlines()]
        return (record.get("run") or {}).get("demos", [])

    shown = demos_shown(None)
    assert len(shown) == 2 and set(shown) <= {d["id"] for d in saved["demos"]}
    mcp = load_catalog(bundled_dir() / "catalog" / "mcp-servers.json")
    assert demos_shown(mcp) == []  # the pool's tools are helmdeck's: none is shown over another catalog
    assert not compile_one("C", "single_pick", out_root=tmp_path, knn_demos=3, resume=True).skipped  # another input


def test_a_decline_gate_is_fitted_on_the_compile_tasks_and_recorded(tmp_path):
    r = compile_one("C", "full_steps", out_root=tmp_path, knn_demos=3, decline_slot=True, decline_gate=True)
    saved = json.loads(program_path("C", "full_steps", tmp_path).read_text(encoding="utf-8"))["demo_pool"]
    serving = min(best_match(CATALOG, t.intent) for t in [*TRAIN, *load_tasks("dev")] if t.steps)
    assert saved["decline_slot"] and saved["decline_below"] == r.decline_below == serving
    assert compile_one("C", "full_steps", out_root=tmp_path, knn_demos=3, decline_slot=True).decline_below is None
    with pytest.raises(InputError, match="--decline-slot"):
        compile_one("C", "full_steps", out_root=tmp_path, knn_demos=3, decline_gate=True)


def test_without_knn_demos_the_program_has_no_pool(tmp_path):
    r = compile_one("C", "single_pick", out_root=tmp_path)
    assert r.knn_demos == 0 and r.demo_pool_size == 0
    assert "demo_pool" not in json.loads(program_path("C", "single_pick", tmp_path).read_text(encoding="utf-8"))


def test_a_bad_pool_in_a_program_file_is_a_clear_error(tmp_path):
    compile_one("C", "single_pick", out_root=tmp_path, knn_demos=2)
    path = program_path("C", "single_pick", tmp_path)
    state = json.loads(path.read_text(encoding="utf-8"))
    state["demo_pool"]["demos"][0]["tools"] = "not a list"
    path.write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(CompiledProgramError, match="not a program state"):
        load_compiled_state(SinglePick(), path)
