"""The test half of the MCP gold set (eval/tasks/mcp-test.jsonl) over the seven servers' catalog
(eval/catalog/mcp-test.json): every gold call names a catalog tool with arguments its schema
names and every argument it requires, each server is asked for, the mix holds, no request repeats
a dev or end-to-end request, and the file is the one whose hash docs/results/mcp-test-half.md
records."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.io.jsonl import iter_jsonl
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.tasks import load_tasks

TASKS = bundled_dir() / "tasks" / "mcp-test.jsonl"
CATALOG = bundled_dir() / "catalog" / "mcp-test.json"
DEV = bundled_dir() / "tasks" / "mcp-servers.jsonl"
E2E = bundled_dir() / "e2e" / "tasks.jsonl"
DOC = Path(__file__).resolve().parents[1] / "docs" / "results" / "mcp-test-half.md"
SERVERS = {"time", "git", "fetch", "filesystem", "memory", "sqlite", "everything"}
SHARES = {"single-action": (0.35, 0.50), "pack-chain": (0.25, 0.40), "gap": (0.20, 0.30)}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _recorded_sha256(name: str) -> str:
    found = re.search(rf"`{re.escape(name)}`[^`\n]*`([0-9a-f]{{64}})`", DOC.read_text(encoding="utf-8"))
    assert found, f"{DOC.name} records no sha256 for {name}"
    return found.group(1)


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(path=TASKS)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(CATALOG)


def test_the_catalog_is_the_seven_servers(catalog):
    assert {p.metadata.server for p in catalog.packs} == SERVERS
    assert all(p.parameters is not None and p.parameters.get("type") == "object" for p in catalog.packs)
    assert not catalog.pipelines


def test_the_set_is_a_test_half_with_unique_ids(tasks):
    assert len(tasks) >= 60
    assert {t.split for t in tasks} == {"test"}
    assert len({t.id for t in tasks}) == len(tasks)
    assert all(t.id.startswith("mcpt-") and t.notes for t in tasks)


def test_the_mix_of_single_multi_call_and_no_tool_requests(tasks):
    kinds = Counter(t.category for t in tasks)
    assert set(kinds) == set(SHARES)
    for category, (low, high) in SHARES.items():
        assert low <= kinds[category] / len(tasks) <= high, (category, kinds[category])
    assert all(len(t.steps) == 1 for t in tasks if t.category == "single-action")
    assert all(2 <= len(t.steps) <= 4 for t in tasks if t.category == "pack-chain")


def test_every_gold_call_names_a_catalog_tool_with_its_schema_arguments(tasks, catalog):
    for task in tasks:
        for plan in (task.steps, *task.alternatives):
            for step in plan:
                assert step.tool in catalog.id_set, (task.id, step.tool)
                schema = catalog.arg_schemas.get(step.tool) or {}
                assert set(step.args) <= set(schema.get("properties", {})), (task.id, step.tool, step.args)
                assert set(schema.get("required", [])) <= set(step.args), (task.id, step.tool, step.args)


def test_every_server_is_asked_for_at_least_five_times_and_chains_cross_servers(tasks, catalog):
    server = {p.name: p.metadata.server for p in catalog.packs}
    used = [{server[s.tool] for s in t.steps} for t in tasks]
    per_server = Counter(name for names in used for name in names)
    assert set(per_server) == SERVERS and min(per_server.values()) >= 5, per_server
    assert sum(len(names) >= 2 for names in used) >= 5  # pack chains across two servers


def test_no_request_repeats_a_dev_or_end_to_end_request(tasks):
    others = [_norm(v["intent"]) for path in (DEV, E2E) for _, v in iter_jsonl(path)]
    assert len(others) == 44 + 85
    for task in tasks:
        intent = _norm(task.intent)
        assert intent not in others, task.id
        closest = max(difflib.SequenceMatcher(None, intent, other).ratio() for other in others)
        assert closest < 0.8, (task.id, closest)


def test_the_files_are_the_ones_the_docs_record():
    for path in (TASKS, CATALOG):
        name = f"eval/{path.parent.name}/{path.name}"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == _recorded_sha256(name), name
