"""Failures a server reports only in its result's text (``run/error_texts.toml``): mcp-server-sqlite
catches every exception and returns it as an ordinary result, so without the table its failed
calls count as successes, in both arms' tool-error counts and for the planner's repair ask."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.run.error_texts import error_texts, reports_error
from tests.conftest import PROJECT_ROOT

SQLITE = PROJECT_ROOT / ".mcp-servers" / "sqlite" / "bin" / "mcp-server-sqlite"


def test_the_bundled_table_names_the_sqlite_server_and_its_two_failure_texts():
    row = error_texts()["sqlite"]
    assert row.package == "mcp-server-sqlite"
    assert reports_error("sqlite", "Database error: no such table: people")
    assert reports_error("sqlite", "Error: Only CREATE TABLE statements are allowed")


def test_a_successful_text_or_another_server_is_not_a_failure():
    assert not reports_error("sqlite", "[{'id': 1, 'name': 'Error: unknown'}]")
    assert not reports_error("sqlite", "Table created successfully")
    # a file whose content starts like a failure is the filesystem server's ordinary result
    assert not reports_error("secure-filesystem-server", "Error: disk full at 02:00\n")
    assert not reports_error("", "Error: x")


def test_a_malformed_table_is_refused_with_its_path(tmp_path: Path):
    bad = tmp_path / "error_texts.toml"
    bad.write_text('["x"]\npackage = "p"\nprefixes = []\n', encoding="utf-8")
    with pytest.raises(DataFileError, match="error_texts.toml"):
        error_texts(bad)
    bad.write_text('["x"]\nprefix = ["Error: "]\n', encoding="utf-8")
    with pytest.raises(DataFileError):
        error_texts(bad)


def test_the_real_sqlite_server_failures_are_failed_steps_and_its_results_are_not(tmp_path: Path):
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'helmdeck-dspy[serve]')")
    if not SQLITE.exists():
        pytest.skip(f"mcp-server-sqlite is not installed at {SQLITE} (bash scripts/install_mcp_servers.sh)")
    from helmdeck_dspy.run.sessions import ToolSessions

    source = "sqlite=mcp+stdio:" + shlex.join([str(SQLITE), "--db-path", str(tmp_path / "data.db")])
    with ToolSessions([source], cwd=str(tmp_path)) as sessions:
        made = sessions.call("sqlite", "create_table", {"query": "CREATE TABLE users (id INTEGER, name TEXT)"})
        wrong_tool = sessions.call("sqlite", "create_table", {"query": "ALTER TABLE users ADD COLUMN email TEXT"})
        no_table = sessions.call("sqlite", "read_query", {"query": "SELECT * FROM people"})
        read = sessions.call("sqlite", "read_query", {"query": "SELECT * FROM users"})
    assert (made.error, made.text) == (False, "Table created successfully")
    assert wrong_tool.error and wrong_tool.text == "Error: Only CREATE TABLE statements are allowed"
    assert no_table.error and no_table.text.startswith("Database error: no such table: people")
    assert (read.error, read.text) == (False, "[]")
