"""The end-to-end study's framework arm (issue 53, item 5): the OpenAI Agents SDK's own loop over a
real MCP server, its model reached straight (a raw server that answers a call as text) or through
``serve --openai`` (whose planner turns that answer into a call). The model is scripted on a
loopback endpoint; the time server is real."""

from __future__ import annotations

import shlex
import sys
import uuid

import pytest

from tests.fault_server import FaultServer, ok, status
from tests.serve.test_openai_endpoint import MODEL, _lm_key, endpoint  # noqa: F401 - the fixture applies here too

pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed (the dev extra has it)")
pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed (the dev extra has it)")
SOURCES = ["time=mcp+stdio:" + shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])]
AS_TEXT = '```json\n{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}\n```'  # as llama.cpp answered
ASK = f"What time is it in Tokyo right now? (run {uuid.uuid4().hex[:8]})"  # DSPy's response cache keys on it


def test_against_a_raw_server_the_call_written_as_text_ends_the_agent_with_nothing_done(tmp_path):
    from helmdeck_dspy.bench.e2e.framework import run_framework

    with FaultServer([ok(AS_TEXT)]) as raw:
        run = run_framework(ASK, SOURCES, {}, str(tmp_path), base_url=raw.url, model=MODEL, max_turns=6,
                            time_cap_s=60)
    assert run.steps == [] and run.stopped_because == "done" and "get_current_time" in run.final


def test_through_the_endpoint_the_same_answer_becomes_a_call_the_server_runs(tmp_path):
    from helmdeck_dspy.bench.e2e.framework import run_framework

    with endpoint([AS_TEXT, "[]", "It is morning in Tokyo."], tmp_path) as (client, _):
        run = run_framework(ASK, SOURCES, {}, str(tmp_path), base_url=str(client.base_url), model=MODEL, max_turns=6,
                            time_cap_s=60)
    (step,) = run.steps
    assert step.tool == "get_current_time" and step.args == {"timezone": "Asia/Tokyo"} and not step.error
    assert "Asia/Tokyo" in step.text and "datetime" in step.text  # the real server answered
    assert run.final == "It is morning in Tokyo." and run.turns == 2


def test_an_endpoint_that_fails_a_turn_ends_the_task_as_failed_with_its_error(tmp_path):
    from helmdeck_dspy.bench.e2e.framework import run_framework

    with FaultServer([status(502, message="the planner's model call failed")]) as failing:
        run = run_framework(ASK, SOURCES, {}, str(tmp_path), base_url=failing.url, model=MODEL, max_turns=6,
                            time_cap_s=60)
    assert run.stopped_because == "failed" and run.steps == [] and "502" in (run.error or "")
