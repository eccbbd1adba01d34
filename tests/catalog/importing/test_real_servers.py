"""Real MCP servers over stdio: mcp-server-time and mcp-server-git (PyPI), server-filesystem and
server-memory (npm). Each is imported alone and all four merged; every pack must carry the
inputSchema the server lists (read here with plain JSON-RPC, not the SDK), and the planner plans
over the merged catalog with a replay LM. A server that is not installed skips its tests with
the command that installs it; every server a test starts is stopped by the importer or by
:func:`raw_tools_list` before the test ends.
"""

from __future__ import annotations

import json
import warnings

import pytest

from helmdeck_dspy.catalog.importing import import_catalog
from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.tasks import load_tasks
from tests.catalog.importing.real_servers import LABELS, raw_tools_list, real_servers, server_env
from tests.planning.test_planner import NEMOTRON, SONNET, plan_json, replay_file, step
from tests.test_mcp_gold import CATALOG, TASKS

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[dev]'")

KNOWN = {  # tools each server has listed for a long time (a new release may add more)
    "time": {"get_current_time", "convert_time"},
    "git": {"git_status", "git_log", "git_diff", "git_commit", "git_add", "git_create_branch", "git_checkout"},
    "filesystem": {"read_text_file", "write_file", "edit_file", "list_directory", "search_files", "move_file"},
    "memory": {"create_entities", "create_relations", "add_observations", "read_graph", "search_nodes"},
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("real-servers")


@pytest.fixture(scope="module")
def servers(workdir):
    return real_servers(workdir)


def available(servers, *labels):
    missing = [servers[label].missing for label in labels if servers[label].argv is None]
    if missing:
        pytest.skip("; ".join(missing))
    return [servers[label] for label in labels]


@pytest.fixture(scope="module")
def merged(servers, workdir):
    """The four servers imported together, once for the module."""
    found = available(servers, *LABELS)
    return import_catalog([s.source for s in found], env=server_env(workdir), timeout_s=120)


@pytest.mark.parametrize("label", LABELS)
def test_each_server_is_imported_with_its_input_schemas(label, servers, workdir):
    [server] = available(servers, label)
    imported = import_catalog([server.source], env=server_env(workdir), timeout_s=120)
    [summary] = imported.sources
    assert (summary.label, summary.kind, summary.shape) == (label, "stdio", "mcp")
    raw = {t["name"]: t for t in raw_tools_list(server.argv, server_env(workdir))}
    packs = {p.name: p for p in imported.catalog.packs}
    assert set(packs) == set(raw) and KNOWN[label] <= set(packs)
    for name, tool in raw.items():
        assert packs[name].parameters == tool["inputSchema"], name
        assert packs[name].metadata.server == label and packs[name].metadata.tool == ""
        read_only = (tool.get("annotations") or {}).get("readOnlyHint") is True
        assert ("read_only" in packs[name].metadata.hints) == read_only, name


def test_the_four_servers_merge_into_one_catalog(merged):
    labels = [s.label for s in merged.sources]
    assert labels == list(LABELS)
    packs = merged.catalog.packs
    assert len(packs) == sum(s.tools for s in merged.sources) == len({p.name for p in packs})
    assert merged.prefixed == 0  # no two of these servers share a tool name
    for label in LABELS:
        assert KNOWN[label] <= {p.name for p in packs if p.metadata.server == label}
    assert all(p.parameters and p.parameters.get("type") == "object" for p in packs)
    hints = {p.name: p.metadata.hints for p in packs}
    assert "read_only" in hints["git_status"] and "destructive" in hints["git_reset"]


def test_prefix_names_every_tool_by_its_server(servers, workdir):
    found = available(servers, "time", "git")
    imported = import_catalog([s.source for s in found], prefix=True, env=server_env(workdir), timeout_s=120)
    names = {p.name for p in imported.catalog.packs}
    assert {"time__get_current_time", "git__git_log"} <= names and all("__" in n for n in names)


def _planner(tmp_path, catalog, model, *completions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Planner.for_model(model, lm=f"replay:{replay_file(tmp_path, *completions)}", catalog=catalog,
                                 use_filter=False)


def test_the_planner_plans_over_the_merged_catalog(merged, tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(merged.catalog.to_wire()), encoding="utf-8")
    catalog = load_catalog(path)  # what plan --catalog reads
    answer = plan_json([
        step(1, "git_log", {"repo_path": "/srv/app", "max_count": 5}),
        step(2, "write_file", {"path": "/srv/app/CHANGES.md", "content": "notes"}),
        step(3, "create_entities", {"entities": [{"name": "release", "entityType": "event", "observations": []}]}),
        step(4, "github.create_issue", {"repo": "a/b"}),  # a helmdeck tool: not in this catalog
    ])
    planner = _planner(tmp_path, catalog, SONNET, answer)
    result = planner.plan("summarise the last five commits into CHANGES.md and remember the release")
    assert result.ok, result.error
    assert [s.tool for s in result.steps] == ["git_log", "write_file", "create_entities", "unknown"]
    system = planner.lm.engine.requests[0].system  # tier A: the catalog is in the system message
    assert '"name":"git_log"' in system and '"max_count"' in system  # the imported schema reached the model
    assert '"name":"github.create_issue"' not in system


def test_a_tier_c_model_gets_the_catalog_fitted_to_its_budget(merged, tmp_path):
    answer = plan_json([step(1, "get_current_time", {"timezone": "Asia/Tokyo"})])
    planner = _planner(tmp_path, merged.catalog, NEMOTRON, answer)
    intent = "what time is it in Tokyo right now?"
    selected, trim = planner.select(intent)
    assert trim.before_bytes == merged.catalog.size_bytes() and trim.after_bytes <= planner.budget.max_catalog_bytes
    assert "get_current_time" in selected.id_set
    # Compacted: each tool's arguments as one signature line, its schema kept for the guards.
    tool = next(p for p in selected.packs if p.name == "get_current_time")
    assert tool.args == "timezone: string" and tool.parameters is not None
    result = planner.plan(intent)
    assert result.ok and [(s.tool, s.args) for s in result.steps] == [("get_current_time", {"timezone": "Asia/Tokyo"})]


def test_the_committed_catalog_and_gold_tasks_still_match_the_servers(merged):
    live = {p.name: p for p in merged.catalog.packs}
    committed = load_catalog(CATALOG)
    assert committed.id_set <= set(live), "a server dropped a tool: re-import eval/catalog/mcp-servers.json"
    for task in load_tasks(path=TASKS):
        for plan in (task.steps, *task.alternatives):
            for s in plan:
                assert set(s.args) <= set(live[s.tool].parameters.get("properties", {})), (task.id, s.tool)
