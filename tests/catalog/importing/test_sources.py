"""Source specs, labels, tool files, and listing a real SDK server over stdio (paged_server.py):
every page followed, annotations kept, failures as one line naming the source."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.catalog.importing.sources import default_label, label_words, parse_source, read_source
from helmdeck_dspy.errors import ToolFileError, ToolSourceError

PAGED = Path(__file__).with_name("paged_server.py")
NO_SDK = "the MCP SDK is not installed: pip install 'helmdeck-dspy[serve]'"


def test_stdio_sources_split_like_a_shell_and_take_a_label():
    spec = parse_source("mcp+stdio:python -m mcp_server_git --repository '/tmp/my repo'", {"A": "1"})
    assert (spec.kind, spec.command, spec.args, spec.env) == (
        "stdio", "python", ("-m", "mcp_server_git", "--repository", "/tmp/my repo"), {"A": "1"})
    labelled = parse_source("Notes=mcp+stdio:notes-server")
    assert (labelled.label, labelled.command) == ("notes", "notes-server")


@pytest.mark.parametrize(("text", "url"), [
    ("mcp+http:http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
    ("mcp+http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
    ("mcp+https://example.org/mcp", "https://example.org/mcp"),
])
def test_http_sources_take_the_url_in_either_spelling(text, url):
    assert parse_source(text).url == url


def test_a_file_is_a_file_even_with_an_equals_sign_in_its_name(tmp_path):
    odd = tmp_path / "a=b.json"
    odd.write_text("[]")
    spec = parse_source(str(odd))
    assert (spec.kind, spec.label, spec.path) == ("file", "", str(odd))


@pytest.mark.parametrize(("text", "says"), [
    ("mcp+stdio:", "expected a command"),
    ("mcp+stdio:'unclosed", "cannot split the command line"),
    ("mcp+http:ftp://x", "expected an http:// or https:// URL"),
    ("mcp+sse:http://x", "unknown source kind"),
    ("missing.json", "no such file"),
])
def test_bad_specs_are_one_line_errors(text, says):
    with pytest.raises(ToolSourceError) as exc:
        parse_source(text)
    assert str(exc.value).startswith(f"{text}: ") and says in str(exc.value)


@pytest.mark.parametrize(("text", "label"), [
    ("mcp+stdio:uvx mcp-server-git --repository .", "git"),
    ("mcp+stdio:python -m mcp_server_time", "time"),
    ("mcp+stdio:npx -y @modelcontextprotocol/server-filesystem /tmp", "filesystem"),
    ("mcp+stdio:npx -y @modelcontextprotocol/server-memory@2026.8.31", "memory"),
    ("mcp+stdio:node_modules/.bin/mcp-server-memory", "memory"),
    ("mcp+stdio:node dist/index.js", "from-handshake"),
])
def test_labels_come_from_the_server_package_else_the_handshake(text, label):
    assert default_label(parse_source(text), "From Handshake") == label


def test_labels_of_files_and_urls(tmp_path):
    path = tmp_path / "GitHub Tools.json"
    path.write_text("[]")
    assert default_label(parse_source(str(path))) == "github"  # "tools" says nothing
    assert default_label(parse_source("mcp+http:https://mcp.example.com/mcp")) == "example-com"
    assert label_words("mcp-server") == "" and label_words("Secure-Filesystem-Server") == "secure-filesystem"


def test_tool_files_in_none_of_the_shapes_name_the_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"functions": []}))
    with pytest.raises(ToolFileError) as exc:
        read_source(parse_source(str(path)))
    assert str(exc.value).startswith(f"{path}: expected an MCP tools/list result")
    path.write_text("{nope")
    with pytest.raises(ToolFileError, match="not valid JSON"):
        read_source(parse_source(str(path)))


def test_a_stdio_server_is_listed_page_by_page_with_its_annotations():
    pytest.importorskip("mcp", reason=NO_SDK)
    read = read_source(parse_source(f"mcp+stdio:{sys.executable} {PAGED}"))
    assert read.label == "paged" and read.tools.shape == "mcp"
    assert [t.name for t in read.tools.tools] == ["read_note", "write_note", "list_notes", "delete_note",
                                                  "search_notes"]  # three pages of two, two and one
    hints = {t.name: t.hints for t in read.tools.tools}
    assert hints["read_note"] == ("read_only", "idempotent") and hints["delete_note"] == ("destructive",)
    assert read.tools.tools[0].parameters["required"] == ["path"]


@pytest.mark.parametrize(("command", "says"), [
    ("definitely-not-a-command-4711", "command not found: definitely-not-a-command-4711"),
    (f"{sys.executable} -c \"import sys; sys.stderr.write('no config file here\\n'); sys.exit(3)\"",
     "the server closed the connection before listing its tools (it exited); it said: no config file here"),
    (f"{sys.executable} {PAGED} --repeat-cursor", "the server repeated the cursor 'page-2'"),
])
def test_server_failures_are_one_line_naming_the_source(command, says):
    pytest.importorskip("mcp", reason=NO_SDK)
    text = f"mcp+stdio:{command}"
    with pytest.raises(ToolSourceError) as exc:
        read_source(parse_source(text), timeout_s=30)
    assert str(exc.value) == f"{text}: {says}"


def test_a_server_that_never_answers_times_out():
    pytest.importorskip("mcp", reason=NO_SDK)
    text = f"mcp+stdio:{sys.executable} -c \"import time; time.sleep(30)\""
    with pytest.raises(ToolSourceError) as exc:
        read_source(parse_source(text), timeout_s=1.5)
    assert "no answer within 1.5 s" in str(exc.value)


def test_a_long_command_line_is_not_taken_for_a_path():
    spec = parse_source("mcp+stdio:python -c " + "x" * 400)
    assert spec.kind == "stdio" and spec.args == ("-c", "x" * 400)
    with pytest.raises(ToolSourceError, match="no such file"):
        parse_source("y" * 400 + ".json")
