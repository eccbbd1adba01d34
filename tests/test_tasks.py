"""Gold planning tasks: the bundled splits, their consistency with the bundled catalog, the
``datasets`` view, and precise errors for invalid task files."""

from __future__ import annotations

import json
import typing

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.tasks import (
    SPLITS,
    Category,
    GoldStep,
    PlanTask,
    load_tasks,
    load_tasks_dataset,
)

CATEGORIES = typing.get_args(Category)


@pytest.fixture(scope="module")
def by_split() -> dict[str, list[PlanTask]]:
    return {s: load_tasks(s) for s in SPLITS}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# --------------------------------------------------------------------------------------------
# The bundled set
# --------------------------------------------------------------------------------------------


def test_bundled_splits_load(by_split):
    for split, tasks in by_split.items():
        assert tasks, split
        assert all(t.split == split for t in tasks), split
    assert sum(len(t) for t in by_split.values()) >= 150


def test_all_splits_together(by_split):
    everything = load_tasks()
    assert [t.id for t in everything] == [t.id for s in SPLITS for t in by_split[s]]


def test_ids_unique_across_splits(by_split):
    ids = [t.id for tasks in by_split.values() for t in tasks]
    assert len(ids) == len(set(ids))


def test_every_category_in_every_split(by_split):
    assert set(CATEGORIES) == {
        "single-action", "pipeline-direct", "supersedes", "pack-chain", "long-context", "gap", "adversarial",
    }
    for split, tasks in by_split.items():
        assert {t.category for t in tasks} == set(CATEGORIES), split


def _all_gold_steps(tasks):
    for t in tasks:
        for plan in (t.steps, *t.alternatives):
            for step in plan:
                yield t, step


def test_gold_tools_exist_in_bundled_catalog(by_split, catalog):
    pack_names = {p.name for p in catalog.packs}
    for t, step in _all_gold_steps(load_tasks()):
        assert step.tool not in ("helmdeck.plan", "helmdeck__plan"), t.id
        if step.tool == PIPELINE_RUN_TOOL:
            assert step.args["id"] in catalog.pipeline_ids, (t.id, step.args["id"])
        else:
            assert step.tool in pack_names, (t.id, step.tool)


def test_gap_tasks_are_empty_and_complexity_consistent():
    for t in load_tasks():
        if t.category == "gap":
            assert t.steps == [], t.id
        n = len(t.steps)
        if n >= 2:
            assert t.complexity == "pack-chain", t.id
        elif n == 1 and t.steps[0].tool == PIPELINE_RUN_TOOL:
            assert t.complexity == "pipeline-direct", t.id
        else:
            assert t.complexity == "single-action", t.id


def test_unknown_split_raises():
    with pytest.raises(DataFileError, match="unknown split 'validation'"):
        load_tasks("validation")


# --------------------------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------------------------


def test_load_tasks_dataset(by_split, tmp_path, monkeypatch):
    import datasets

    # keep the Arrow cache out of the user's home, and start from a cold cache
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets")
    ds = load_tasks_dataset()
    assert set(ds.keys()) == set(SPLITS)
    for split in SPLITS:
        assert ds[split].num_rows == len(by_split[split]), split
    one = load_tasks_dataset("dev")
    assert one.num_rows == len(by_split["dev"])
    # heterogeneous nested args survive Arrow exactly
    tasks = {t.id: t for tasks in by_split.values() for t in tasks}
    for split in SPLITS:
        for row in ds[split]:
            t = tasks[row["id"]]
            assert row["steps"] == [s.model_dump() for s in t.steps], t.id
            assert (row["alternatives"] or []) == [[s.model_dump() for s in a] for a in t.alternatives], t.id
    assert (tmp_path / "hf-datasets").is_dir()


# --------------------------------------------------------------------------------------------
# Invalid task files
# --------------------------------------------------------------------------------------------


def _good(**over) -> dict:
    task = {
        "id": "chain-001",
        "split": "train",
        "category": "pack-chain",
        "intent": "do two things",
        "steps": [{"tool": "a.one", "args": {}}, {"tool": "b.two", "args": {"k": None}}],
        "complexity": "pack-chain",
    }
    task.update(over)
    return task


def _write(tmp_path, *lines) -> str:
    p = tmp_path / "tasks.jsonl"
    p.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(p)


def _fails_at(path: str, line: int, *fragments: str) -> DataFileError:
    with pytest.raises(DataFileError) as info:
        load_tasks(path=path)
    err = info.value
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: ")
    for f in fragments:
        assert f in str(err), (f, str(err))
    return err


def test_valid_file_loads(tmp_path):
    path = _write(tmp_path, _good(), "", _good(id="single-001", category="single-action",
                                               steps=[{"tool": "a.one"}], complexity="single-action"))
    tasks = load_tasks(path=path)
    assert [t.id for t in tasks] == ["chain-001", "single-001"]
    assert tasks[0].steps[1].args == {"k": None}


def test_bad_complexity_for_shape(tmp_path):
    path = _write(tmp_path, _good(id="ok-1"), _good(id="bad-1", complexity="single-action"))
    _fails_at(path, 2, "complexity should be 'pack-chain'")


def test_pipeline_direct_complexity_required(tmp_path):
    path = _write(
        tmp_path,
        _good(category="pipeline-direct", steps=[{"tool": PIPELINE_RUN_TOOL, "args": {"id": "builtin.x"}}],
              complexity="single-action"),
    )
    _fails_at(path, 1, "pipeline-direct")


def test_gap_with_steps(tmp_path):
    path = _write(tmp_path, _good(category="gap", steps=[{"tool": "a.one"}], complexity="single-action"))
    _fails_at(path, 1, "gap task expects no steps")


def test_pipeline_run_without_id(tmp_path):
    path = _write(
        tmp_path,
        _good(id="a-1"),
        _good(id="a-2"),
        _good(id="pd-1", category="pipeline-direct", steps=[{"tool": PIPELINE_RUN_TOOL, "args": {"inputs": {}}}],
              complexity="pipeline-direct"),
    )
    _fails_at(path, 3, "steps.0", "args.id")


def test_bad_id_pattern(tmp_path):
    path = _write(tmp_path, _good(id="Chain_001"))
    _fails_at(path, 1, "id:", "pattern")


def test_duplicate_id(tmp_path):
    path = _write(tmp_path, _good(), _good(intent="again"))
    _fails_at(path, 2, "duplicate task id 'chain-001'")


def test_non_json_line(tmp_path):
    path = _write(tmp_path, _good(), "{this is not json")
    _fails_at(path, 2, "JSON")


def test_unknown_field_rejected(tmp_path):
    path = _write(tmp_path, _good(difficulty="hard"))
    _fails_at(path, 1, "difficulty")


def test_too_many_steps(tmp_path):
    steps = [{"tool": f"p.s{i}"} for i in range(7)]
    path = _write(tmp_path, _good(steps=steps))
    _fails_at(path, 1, "at most 6")


def test_missing_file():
    with pytest.raises(DataFileError, match="cannot read"):
        load_tasks(path="/nonexistent/tasks.jsonl")


def test_gold_step_key():
    assert GoldStep(tool=PIPELINE_RUN_TOOL, args={"id": "builtin.p"}).key == "pipeline:builtin.p"
    assert GoldStep(tool="a.one").key == "a.one"
    with pytest.raises(ValueError):
        GoldStep(tool=PIPELINE_RUN_TOOL, args={"id": 3})
    with pytest.raises(ValueError):
        GoldStep(tool="")
