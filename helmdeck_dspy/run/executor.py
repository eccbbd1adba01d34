"""The MCP executor: runs a plan step on the server whose tool it names.

:class:`McpExecutor` maps each catalog name back to its server and the tool's own name there
(``git__git_log`` → ``git_log`` on ``git``), asks the approval policy before any tool that is not
read-only, and calls it through the open :class:`~helmdeck_dspy.run.sessions.ToolSessions`. A
step whose tool the run does not serve (the guards' ``unknown``) is a failed step, never sent. A
call that is not read-only and succeeded is never sent again with the same arguments by the same
executor (one run): the repeat is a failed step saying so (issue 52, item 3).
"""

from __future__ import annotations

import json
from typing import Any

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.planning.execution import StepOutcome
from helmdeck_dspy.planning.guards import GuardedStep
from helmdeck_dspy.run.approval import Approval, ToolCall, ask_on_terminal
from helmdeck_dspy.run.sessions import CALL_TIMEOUT_S, ToolSessions

REFUSED = "not run: {tool} is not read-only and was not approved"
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
    """

    def __init__(self, sessions: ToolSessions, catalog: RoutingGuide | None = None, *,
                 approve: Approval = ask_on_terminal, call_timeout_s: float = CALL_TIMEOUT_S,
                 trusted: frozenset[str] = frozenset()) -> None:
        self.sessions = sessions
        self.approve = approve
        self.trusted = trusted
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

    def __call__(self, step: GuardedStep) -> StepOutcome:
        call = self.tool_call(step)
        if call is None:
            model_tool = step.model_tool or step.tool
            return StepOutcome(text=f"no tool named {model_tool!r} on the run's servers", error=True)
        args = _jsonable(step.args)
        key = json.dumps([call.server, call.tool, args], sort_keys=True, ensure_ascii=False)
        if not call.read_only and key in self._wrote:
            return StepOutcome(text=WROTE_ONCE.format(tool=call.tool), error=True)
        if not call.read_only and not self.approve(call):
            return StepOutcome(text=REFUSED.format(tool=call.tool), error=True, denied=True)
        pack = self.tools[step.tool]
        outcome = self.sessions.call(call.server, pack.metadata.tool or pack.name, args, timeout_s=self.call_timeout_s)
        if not call.read_only and not outcome.error:
            self._wrote.add(key)
        return outcome


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the wire carries them (JSON round trip: no tuples or other Python types)."""
    return json.loads(json.dumps(args, ensure_ascii=False, default=str))
