"""Plan first, then data cannot add writes (issue 52, item 1): the writes a run may make without a
fresh yes are the ones its first plan held; a write a later plan adds after tool output was read
needs a yes on the terminal even under --yes, and is denied without one, unless the run says, as an
explicitly unsafe setting, that its loop may add writes."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.planning.execution import run_loop
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.planning.result import PlanResult
from helmdeck_dspy.run.approval import allow_all
from helmdeck_dspy.run.executor import McpExecutor
from helmdeck_dspy.run.sessions import ToolSessions

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'helmdeck-dspy[serve]')")
FAKE = Path(__file__).with_name("fake_mcp_server.py")


class Scripted:
    """A planner whose plans are given: the first, then one per re-plan."""

    variant = "single_pick"

    def __init__(self, *plans: list[str]) -> None:
        self.plans = list(plans)

    def plan(self, intent, context=None, prior_steps=None):
        tools = self.plans.pop(0) if self.plans else []
        steps = [GuardedStep(order=i, tool=t) for i, t in enumerate(tools, 1)]
        return PlanResult(steps=steps, more_steps_likely=bool(self.plans), prompt_variant_used="single_pick",
                          model="m", tier="C")


def _run(log: Path, *plans: list[str], **executor):
    source = "fake=mcp+stdio:" + shlex.join([sys.executable, str(FAKE), "ok", str(log)])
    asked: list[str] = []
    with ToolSessions([source]) as tools:
        run = McpExecutor(tools, approve=allow_all, trusted=frozenset({"fake"}),  # --yes
                          confirm=lambda call: asked.append(call.tool) or False, **executor)  # no terminal: no
        out = run_loop(Scripted(*plans), "echo hi", run)
    sent = [json.loads(line)["name"] for line in log.read_text().splitlines()] if log.exists() else []
    return out, sent, asked


def test_a_write_added_after_reading_tool_output_is_denied_even_under_yes(tmp_path):
    out, sent, asked = _run(tmp_path / "calls.jsonl", ["echo"], ["erase"])  # the echo's output "asked" for it
    assert sent == ["echo"] and asked == ["erase"]
    assert out.stopped_because == "denied" and "first plan did not" in out.executed[-1].output


def test_a_write_the_first_plan_held_runs_under_yes(tmp_path):
    out, sent, asked = _run(tmp_path / "calls.jsonl", ["echo", "erase"])
    assert sent == ["echo", "erase"] and asked == [] and out.stopped_because == "done"


def test_the_explicitly_unsafe_setting_lets_the_loop_add_writes(tmp_path):
    out, sent, asked = _run(tmp_path / "calls.jsonl", ["echo"], ["erase"], allow_new_writes=True)
    assert sent == ["echo", "erase"] and asked == []
