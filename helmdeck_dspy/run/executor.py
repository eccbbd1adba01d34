"""The MCP executor: runs a plan step on the server whose tool it names.

:class:`McpExecutor` maps each catalog name back to its server and the tool's own name there
(``git__git_log`` → ``git_log`` on ``git``), asks the approval policy before any tool that is not
read-only, and calls it through the open :class:`~helmdeck_dspy.run.sessions.ToolSessions`. A
step whose tool the run does not serve (the guards' ``unknown``) is a failed step, never sent. A
call that is not read-only and succeeded is never sent again with the same arguments by the same
executor (one run): the repeat is a failed step saying so (issue 52, item 3).

Plan first, then data cannot add writes (issue 52, item 1): the loop shows the executor each plan
(:meth:`McpExecutor.plan_seen`). The writes a run may make without a fresh yes are the ones the
first plan held, made from the user's request before any tool output was read: a write that a
later plan adds (a tool the first plan did not call, or other arguments than it gave: another path,
query or branch; a stand-in for an earlier result, ``{{summary}}``, may be filled in,
:func:`~helmdeck_dspy.planning.execution.fills`) needs a yes on the terminal even under ``--yes``
(``confirm``), and is denied without one. A sandbox or a study whose loop must add writes says so
with ``allow_new_writes=True``, an explicitly unsafe setting (both arms of a study share it).
"""

from __future__ import annotations

import json
from typing import Any

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.planning.execution import StepOutcome, fills
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.run.approval import Approval, ToolCall, ask_on_terminal
from helmdeck_dspy.run.sessions import CALL_TIMEOUT_S, ToolSessions

REFUSED = "not run: {tool} is not read-only and was not approved"
NEW_WRITE = ("not run: {tool} writes what the first plan did not, and was added after tool output was read; "
             "it needs a yes on the terminal")
WROTE_ONCE = "not run: {tool} already ran with these arguments in this run and changed something; it is not sent twice"


class McpExecutor:
    """Runs steps over open MCP sessions.

    Args:
        sessions: The open sessions (entered).
        catalog: The run's catalog (default: the sessions' own).
        approve: The policy for tools that are not read-only (default: ask on the terminal).
        call_timeout_s: How long one call may take.
        trusted: The labels of the servers whose read-only annotations are honoured (the others'
            tools all go to ``approve``).
        allow_new_writes: Let a later plan add writes without a fresh yes (unsafe: a sandbox's or
            a study's setting).
        confirm: The fresh yes a write added after tool output was read needs (the terminal).
    """

    def __init__(self, sessions: ToolSessions, catalog: RoutingGuide | None = None, *,
                 approve: Approval = ask_on_terminal, call_timeout_s: float = CALL_TIMEOUT_S,
                 trusted: frozenset[str] = frozenset(), allow_new_writes: bool = False,
                 confirm: Approval = ask_on_terminal) -> None:
        self.sessions = sessions
        self.approve = approve
        self.trusted = trusted
        self.allow_new_writes = allow_new_writes
        self.confirm = confirm
        self._planned: list[tuple[str, dict[str, Any]]] | None = None  # the first plan's writes: (tool, args)
        self._read = False  # a tool's output has come back
        self.call_timeout_s = call_timeout_s
        guide = catalog if catalog is not None else sessions.catalog()
        self.tools = {p.name: p for p in guide.packs if p.metadata.server}
        self._wrote: set[str] = set()  # the writes that succeeded in this run

    def tool_call(self, step: GuardedStep) -> ToolCall | None:
        """The call ``step`` asks for, or None when no open server serves its tool."""
        pack = self.tools.get(step.tool)
        if pack is None:
            return None
        return ToolCall(tool=step.tool, server=pack.metadata.server, args=step.args, hints=pack.metadata.hints,
                        trusted=pack.metadata.server in self.trusted)

    def plan_seen(self, steps: list[GuardedStep]) -> None:
        """The loop's plans, in order: the first one's writes are the run's planned writes."""
        if self._planned is None:
            calls = [(s, self.tool_call(s)) for s in steps]
            self._planned = [(s.tool, _jsonable(s.args)) for s, c in calls if c is not None and not c.read_only]

    def __call__(self, step: GuardedStep) -> StepOutcome:
        call = self.tool_call(step)
        if call is None:
            model_tool = step.model_tool or step.tool
            return StepOutcome(text=f"no tool named {model_tool!r} on the run's servers", error=True)
        args = _jsonable(step.args)
        key = json.dumps([call.server, call.tool, args], sort_keys=True, ensure_ascii=False)
        if not call.read_only and key in self._wrote:
            return StepOutcome(text=WROTE_ONCE.format(tool=call.tool), error=True)
        added = (self._read and not self.allow_new_writes and self._planned is not None
                 and not any(tool == step.tool and fills(planned, args) for tool, planned in self._planned))
        if not call.read_only and added and not self.confirm(call.model_copy(update={"added": True})):
            return StepOutcome(text=NEW_WRITE.format(tool=call.tool), error=True, denied=True)
        if not call.read_only and not added and not self.approve(call):
            return StepOutcome(text=REFUSED.format(tool=call.tool), error=True, denied=True)
        pack = self.tools[step.tool]
        outcome = self.sessions.call(call.server, pack.metadata.tool or pack.name, args, timeout_s=self.call_timeout_s)
        self._read = True
        if not call.read_only and not outcome.error:
            self._wrote.add(key)
        return outcome


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the wire carries them (JSON round trip: no tuples or other Python types)."""
    return json.loads(json.dumps(args, ensure_ascii=False, default=str))
