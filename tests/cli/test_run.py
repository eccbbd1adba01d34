"""``helmdeck-dspy run`` over a real MCP server, its plans from a loopback LM: each step printed as
it happens, a re-plan after a tool error, the trace written, a refusal without a terminal, and
``--dry-run`` running nothing."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.catalog.importing.real_servers import real_servers
from tests.cli.test_values import run as cli
from tests.fault_server import FaultServer, ok

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'helmdeck-dspy[serve]')")

FAKE = Path(__file__).parents[1] / "run" / "fake_mcp_server.py"
MODEL = "openai/fault-model"


def plan(*steps: tuple[str, dict]) -> str:
    return json.dumps({"steps": [{"order": i, "tool": t, "args": a, "rationale": ""} for i, (t, a) in enumerate(steps, 1)]})


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")  # the loopback LM asks for none; LiteLLM wants one


@pytest.fixture
def time_server(tmp_path):
    server = real_servers(tmp_path)["time"]
    if server.argv is None:
        pytest.skip(server.missing)
    return server.source


def test_a_tool_error_is_shown_and_the_planner_replans_from_it(time_server, tmp_path, capsys):
    trace = tmp_path / "run.json"
    script = [ok(plan(("get_current_time", {"timezone": "Tokyo"}))),
              ok(plan(("get_current_time", {"timezone": "Asia/Tokyo"})))]
    with FaultServer(script) as lm:
        code, out = cli(capsys, "run", "What time is it in Tokyo?", "--tools", time_server, "-m", MODEL, "--variant", "full_steps",
                        "--api-base", lm.url, "--trace", str(trace), "--trust", "time")
        second_prompt = json.dumps(lm.requests[1].body["messages"])
    assert code == 0, out
    lines = out.splitlines()
    assert lines[1] == "servers time (2 tools)"
    assert any(line.startswith('1. get_current_time {"timezone": "Tokyo"} -> error') for line in lines), out
    assert any(line.startswith('2. get_current_time {"timezone": "Asia/Tokyo"} -> ok') for line in lines), out
    assert "stopped: done after 2 step(s), 2 plan call(s), 1 tool error(s)" in out
    assert "error: Error executing tool get_current_time" in second_prompt  # the failure reached the model
    run = json.loads(trace.read_text())
    assert [s["error"] for s in run["loop"]["executed"]] == [True, False]
    assert run["loop"]["outcomes"][1]["structured"]["timezone"] == "Asia/Tokyo"
    assert run["servers"][0]["label"] == "time" and run["loop"]["stopped_because"] == "done"


def test_without_a_terminal_a_tool_that_is_not_read_only_is_refused(tmp_path, capsys):
    log = tmp_path / "calls.jsonl"
    source = "fake=mcp+stdio:" + shlex.join([sys.executable, str(FAKE), "ok", str(log)])
    with FaultServer([ok(plan(("echo", {"text": "hi"}), ("erase", {})))]) as lm:
        code, out = cli(capsys, "run", "echo hi then erase everything", "--tools", source, "-m", MODEL, "--variant", "full_steps",
                        "--api-base", lm.url, "--trust", "fake")
    assert code == 1, out
    assert "2. erase {} -> refused" in out and "stopped: denied" in out
    assert [json.loads(line)["name"] for line in log.read_text().splitlines()] == ["echo"]


def test_yes_allows_it_and_dry_run_runs_nothing(tmp_path, capsys):
    log = tmp_path / "calls.jsonl"
    source = "fake=mcp+stdio:" + shlex.join([sys.executable, str(FAKE), "ok", str(log)])
    with FaultServer([ok(plan(("erase", {})))]) as lm:
        code, out = cli(capsys, "run", "erase everything", "--tools", source, "-m", MODEL, "--variant", "full_steps", "--api-base", lm.url,
                        "--dry-run")
        assert code == 0 and "plan: 1 step(s)" in out and "stopped: dry_run" in out and not log.exists(), out
        code, out = cli(capsys, "run", "erase everything", "--tools", source, "-m", MODEL, "--variant", "full_steps", "--api-base", lm.url,
                        "--yes")
    assert code == 0 and "1. erase {} -> ok" in out, out
    assert log.read_text().count('"erase"') == 1


def test_a_first_plan_with_no_call_hands_the_run_to_the_models_own_conversation(time_server, tmp_path, capsys):
    call = '<tool_call>\n{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}\n</tool_call>'
    args = ("run", "Which hour is it now in Tokyo?", "--tools", time_server, "-m", MODEL, "--variant", "full_steps", "--trust", "time")
    with FaultServer([ok(plan()), ok(call), ok("It is nine in the evening in Tokyo.")]) as lm:
        code, out = cli(capsys, *args, "--api-base", lm.url, "--trace", str(tmp_path / "run.json"))
        assert len(lm.requests) == 3, out
        native = lm.requests[1].body
    assert code == 0, out
    assert '1. get_current_time {"timezone": "Asia/Tokyo"} -> ok' in out and "stopped: done after 1 step(s)" in out
    assert [t["function"]["name"] for t in native["tools"]] == ["get_current_time", "convert_time"]  # offered natively
    kept = json.loads((tmp_path / "run.json").read_text())
    assert kept["loop_name"] == "fallback" and kept["turns"][0] == {"planner": [], "failure": None}  # the declined plan
    assert [t["calls"] for t in kept["turns"][1:]] == [[["get_current_time", {"timezone": "Asia/Tokyo"}]], []]
    with FaultServer([ok(plan())]) as lm:  # (another request: the first one's plan call is cached)
        code, out = cli(capsys, args[0], "Which hour is it now in Lima?", *args[2:], "--api-base", lm.url, "--loop", "replan")
        assert code == 0 and "stopped: no_steps" in out and len(lm.requests) == 1, out
