"""The MCP executor over real stdio servers: results with their error flag, read-only tools run
freely, others only when approved, and one clear error for a server that dies or hangs."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.errors import ToolServerError, ToolSourceError
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.run.approval import ToolCall, allow_all, ask_on_terminal, read_only
from helmdeck_dspy.run.executor import McpExecutor
from helmdeck_dspy.run.sessions import ToolSessions
from tests.catalog.importing.real_servers import real_servers

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'helmdeck-dspy[serve]')")

FAKE = Path(__file__).with_name("fake_mcp_server.py")


def fake(mode: str, log: Path) -> str:
    return "fake=mcp+stdio:" + shlex.join([sys.executable, str(FAKE), mode, str(log)])


def step(tool: str, **args) -> GuardedStep:
    return GuardedStep(order=1, tool=tool, args=args)


@pytest.fixture
def calls_log(tmp_path):
    return tmp_path / "calls.jsonl"


def sent(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_read_only_tools_run_freely_and_others_only_when_approved(calls_log):
    asked: list[ToolCall] = []
    with ToolSessions([fake("ok", calls_log)]) as tools:
        no = McpExecutor(tools, approve=lambda c: asked.append(c) or False, trusted=frozenset({"fake"}))
        assert no(step("echo", text="hi")).text == "hi"
        refused = no(step("erase"))
        assert refused.denied and refused.error and "not approved" in refused.text
        assert [c.tool for c in asked] == ["erase"] and asked[0].hints == ("destructive",)
        assert [c["name"] for c in sent(calls_log)] == ["echo"]  # the refused call was never sent
        assert McpExecutor(tools, approve=allow_all)(step("erase")).text == "erased"
    assert [c["name"] for c in sent(calls_log)] == ["echo", "erase"]


def test_with_no_terminal_to_ask_on_the_default_policy_denies(calls_log, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # an answer is there, but not from a terminal
    with ToolSessions([fake("ok", calls_log)]) as tools:
        out = McpExecutor(tools)(step("erase"))
    assert out.denied and not sent(calls_log)
    assert read_only(ToolCall(tool="erase", server="fake")) is False
    assert ask_on_terminal(ToolCall(tool="erase", server="fake")) is False


def test_a_server_that_exits_during_a_call_is_one_error_naming_it(calls_log):
    with ToolSessions([fake("exit", calls_log)]) as tools:
        with pytest.raises(ToolServerError) as err:
            McpExecutor(tools, approve=allow_all)(step("echo", text="hi"))
    assert err.value.server == "fake"
    assert "closed the connection during a call" in str(err.value) and "giving up" in str(err.value)


def test_a_server_that_hangs_is_an_error_after_the_call_timeout(calls_log):
    with ToolSessions([fake("hang", calls_log)]) as tools:
        with pytest.raises(ToolServerError, match=r"no answer to echo within 0.5 s"):
            McpExecutor(tools, call_timeout_s=0.5, trusted=frozenset({"fake"}))(step("echo", text="hi"))


def test_a_tool_the_servers_do_not_serve_is_a_failed_step_never_sent(calls_log):
    with ToolSessions([fake("ok", calls_log)]) as tools:
        out = McpExecutor(tools)(GuardedStep(order=1, tool="unknown", model_tool="erase_all"))
    assert out.error and "'erase_all'" in out.text and not sent(calls_log)


def test_a_tool_list_file_cannot_run_tools(tmp_path):
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps({"tools": []}))
    with pytest.raises(ToolSourceError, match="cannot run tools"):
        ToolSessions([str(listed)])


def test_a_missing_command_is_one_line_and_nothing_stays_running():
    with pytest.raises(ToolSourceError, match="command not found: no-such-mcp-server"):
        with ToolSessions(["mcp+stdio:no-such-mcp-server --x"]):
            pass


def test_real_time_and_filesystem_servers_return_results_and_error_flags(tmp_path):
    servers = real_servers(tmp_path)
    for label in ("time", "filesystem"):
        if servers[label].argv is None:
            pytest.skip(servers[label].missing)
    (tmp_path / "files" / "a.txt").write_text("alpha\n")
    with ToolSessions([servers["time"].source, servers["filesystem"].source]) as tools:
        run = McpExecutor(tools, approve=allow_all)
        tokyo = run(step("get_current_time", timezone="Asia/Tokyo"))
        assert not tokyo.error and tokyo.structured["timezone"] == "Asia/Tokyo"
        wrong = run(step("get_current_time", timezone="Tokyo"))
        assert wrong.error and "Tokyo" in wrong.text  # the server's own message, for the planner to re-plan from
        assert run(step("read_text_file", path=str(tmp_path / "files" / "a.txt"))).text == "alpha\n"
        written = run(step("write_file", path=str(tmp_path / "files" / "b.txt"), content="beta"))
        assert not written.error
        outside = run(step("read_text_file", path="/etc/hostname"))
        assert outside.error  # the server's sandbox holds
    assert (tmp_path / "files" / "b.txt").read_text() == "beta"


def test_a_streamable_http_server_with_the_header_it_requires(tmp_path):
    """The executor over mcp+http: this project's own MCP server, which wants a bearer token; its
    helmdeck.route tool is annotated read-only, so it runs without asking."""
    from helmdeck_dspy.serve.auth import CallerTokens
    from tests.planning.test_planner import replay_file
    from tests.serve.conftest import config_for, http_server

    token = "executor-test-token-0123456789"
    with http_server(config_for(tmp_path, replay_file(tmp_path)), CallerTokens({"runner": token})) as server:
        with ToolSessions([f"helmdeck=mcp+http:{server.url}"], headers={"Authorization": f"Bearer {token}"}) as tools:
            run = McpExecutor(tools, approve=lambda call: False, trusted=frozenset({"helmdeck"}))  # read-only, trusted
            routed = run(step("helmdeck.route", user_intent="take a screenshot of https://example.com",
                              model="anthropic/claude-sonnet-4-6"))
        with pytest.raises(ToolSourceError, match="HTTP 401"):
            with ToolSessions([f"mcp+http:{server.url}"]):
                pass
    assert not routed.error and not routed.denied, routed.text
    assert routed.structured and "tool" in json.dumps(routed.structured)


def test_a_write_that_succeeded_is_not_sent_twice_in_one_run(calls_log):
    with ToolSessions([fake("ok", calls_log)]) as tools:
        run = McpExecutor(tools, approve=allow_all, trusted=frozenset({"fake"}))
        assert run(step("erase")).text == "erased"
        again = run(step("erase"))
        assert again.error and not again.denied and "not sent twice" in again.text
        assert run(step("echo", text="hi")).text == run(step("echo", text="hi")).text == "hi"  # reads repeat freely
        assert McpExecutor(tools, approve=allow_all)(step("erase")).text == "erased"  # another run
    assert [c["name"] for c in sent(calls_log)] == ["erase", "echo", "echo", "erase"]


def test_an_untrusted_servers_read_only_hint_is_only_a_hint(calls_log):
    asked: list[ToolCall] = []
    with ToolSessions([fake("ok", calls_log)]) as tools:
        untrusted = McpExecutor(tools, approve=lambda c: asked.append(c) or False)
        out = untrusted(step("echo", text="hi"))
    assert out.denied and [c.tool for c in asked] == ["echo"] and not asked[0].read_only
    assert sent(calls_log) == []  # the lying (or honest) hint bought nothing without trust
