"""Merging sources: schemas and annotations carried into packs, names prefixed only where they
clash (or everywhere with prefix=True), and clashes that prefixing cannot resolve refused."""

from __future__ import annotations

import pytest

from helmdeck_dspy.catalog.importing import catalog_from_tools, merge_sources, read_tool_list
from helmdeck_dspy.catalog.importing.sources import SourceSpec, SourceTools
from helmdeck_dspy.catalog.models import parse_catalog
from helmdeck_dspy.errors import ToolNameClashError


def schema(*names: str) -> dict:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


def source(label: str, *tools: tuple[str, dict], text: str | None = None, **annotations: bool) -> SourceTools:
    listed = read_tool_list([{"name": n, "description": f"{label} {n}", "inputSchema": s,
                              **({"annotations": annotations} if annotations else {})} for n, s in tools])
    spec = SourceSpec(text=text or f"{label}.json", kind="file", path=f"{label}.json")
    return SourceTools(spec=spec, label=label, tools=listed)


GIT = source("git", ("git_log", schema("repo_path")), ("search", schema("query")), readOnlyHint=True)
FILES = source("filesystem", ("read_text_file", schema("path")), ("search", schema("pattern")))


def test_names_that_clash_are_prefixed_in_both_sources_and_the_others_kept():
    guide = merge_sources([GIT, FILES])
    assert guide.ids() == ["git_log", "git__search", "read_text_file", "filesystem__search"]
    packs = {p.name: p for p in guide.packs}
    assert packs["git__search"].parameters == schema("query")
    assert packs["filesystem__search"].parameters == schema("pattern")
    assert (packs["git__search"].metadata.server, packs["git__search"].metadata.tool) == ("git", "search")
    assert (packs["git_log"].metadata.server, packs["git_log"].metadata.tool) == ("git", "")
    assert packs["git_log"].metadata.hints == ("read_only",) and packs["read_text_file"].metadata.hints == ()


def test_prefix_prefixes_every_name():
    guide = merge_sources([GIT, FILES], prefix=True)
    assert guide.ids() == ["git__git_log", "git__search", "filesystem__read_text_file", "filesystem__search"]


def test_the_merged_catalog_round_trips_through_its_wire_form():
    guide = merge_sources([GIT, FILES])
    again = parse_catalog(guide.to_wire())
    assert again.rendered == guide.rendered
    wire = guide.packs[0].to_wire()
    assert wire["parameters"] == schema("repo_path")
    assert wire["metadata"] == {"server": "git", "hints": ["read_only"]}


def test_one_source_naming_two_tools_alike_is_refused():
    twice = source("git", ("git_log", schema()), ("git_log", schema("x")), text="mcp+stdio:mcp-server-git")
    with pytest.raises(ToolNameClashError, match="mcp\\+stdio:mcp-server-git: lists two tools named 'git_log'"):
        merge_sources([twice])


def test_two_sources_with_one_label_and_a_shared_name_are_refused():
    other = source("git", ("git_log", schema()), text="other.json")
    with pytest.raises(ToolNameClashError) as exc:
        merge_sources([GIT, other])
    assert "'git__git_log' (from git.json and other.json)" in str(exc.value) and "LABEL=SOURCE" in str(exc.value)


def test_a_prefixed_name_that_meets_a_real_one_is_refused():
    literal = source("x", ("git__search", schema()))
    with pytest.raises(ToolNameClashError, match="git__search"):
        merge_sources([GIT, FILES, literal])


def test_one_tool_list_as_a_catalog_keeps_its_names():
    tools = read_tool_list([{"type": "function", "function": {"name": "a", "parameters": schema("q")}},
                            {"type": "function", "function": {"name": "b"}}]).tools
    guide = catalog_from_tools(tools)
    assert guide.ids() == ["a", "b"] and guide.packs[1].parameters is None
    with pytest.raises(ToolNameClashError, match="tools: two tools named 'a'"):
        catalog_from_tools([*tools, tools[0]])
