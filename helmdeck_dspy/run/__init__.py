"""Plans that run: executing a planner's steps over real MCP servers.

``sessions`` keeps MCP sessions open for a run (stdio and streamable HTTP, one event loop in a
background thread), ``approval`` says who may run a tool that is not read-only, ``executor`` runs
a plan step on its server. :func:`helmdeck_dspy.planning.execution.run_loop` plans, executes and
re-plans with them; ``helmdeck-dspy run`` is the command.
"""

from helmdeck_dspy.run.approval import Approval, ToolCall, allow_all, ask_on_terminal, read_only
from helmdeck_dspy.run.executor import McpExecutor
from helmdeck_dspy.run.sessions import ToolSessions
from helmdeck_dspy.run.trace import RunTrace, run_intent

__all__ = ["Approval", "McpExecutor", "RunTrace", "ToolCall", "ToolSessions", "allow_all", "ask_on_terminal",
           "read_only", "run_intent"]
