"""The gold tasks over the four real MCP servers (eval/tasks/mcp-servers.jsonl) and the catalog
imported from them (eval/catalog/mcp-servers.json): every gold tool is in the catalog, every gold
argument is one its schema names, and the set holds single-tool, multi-step and no-tool requests."""

from __future__ import annotations

from collections import Counter

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.tasks import load_tasks

TASKS = bundled_dir() / "tasks" / "mcp-servers.jsonl"
CATALOG = bundled_dir() / "catalog" / "mcp-servers.json"


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(path=TASKS)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


def test_the_catalog_is_the_four_servers_with_their_schemas(catalog):
    servers = Counter(p.metadata.server for p in catalog.packs)
    assert set(servers) == {"time", "git", "filesystem", "memory"}
    assert all(p.parameters is not None and p.parameters.get("type") == "object" for p in catalog.packs)
    assert not catalog.pipelines


def test_the_set_mixes_single_multi_step_and_no_tool_requests(tasks):
    kinds = Counter(t.category for t in tasks)
    assert len(tasks) >= 40 and kinds["single-action"] >= 12 and kinds["pack-chain"] >= 12 and kinds["gap"] >= 6
    assert {t.split for t in tasks} == {"train", "dev", "test"}
    assert all(len(t.steps) >= 2 for t in tasks if t.category == "pack-chain")
    assert all(len(t.steps) == 1 for t in tasks if t.category == "single-action")


def test_every_gold_step_names_a_catalog_tool_and_its_arguments(tasks, catalog):
    used = set()
    for task in tasks:
        for plan in (task.steps, *task.alternatives):
            for step in plan:
                assert step.tool in catalog.id_set, (task.id, step.tool)
                properties = (catalog.arg_schemas.get(step.tool) or {}).get("properties", {})
                assert set(step.args) <= set(properties), (task.id, step.tool, step.args)
                used.add(step.tool)
    servers = {p.metadata.server for p in catalog.packs if p.name in used}
    assert servers == {"time", "git", "filesystem", "memory"}  # every server is asked for
