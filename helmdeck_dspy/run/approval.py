"""Who may run a tool that is not read-only: the approval policies of a run.

A tool annotated ``readOnlyHint`` by a server the user trusts (``run --trust LABEL``) runs freely:
the MCP specification has clients treat annotations as untrusted unless the server is trusted, so
an untrusted server's "read-only" is a hint shown in the question, never a pass. Any other call is
first put to the run's :data:`Approval` policy, a callable that gets the :class:`ToolCall` and says
yes or no:

- :func:`allow_all` (``run --yes``): every call runs;
- :func:`read_only` : no call that is not read-only runs;
- :func:`ask_on_terminal` (``run``'s default): asks on the terminal, and denies when standard
  input is not a terminal (a pipe, a service, a test): nobody is there to ask.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

READ_ONLY = "read_only"
"""The catalog hint of a tool annotated ``readOnlyHint``."""


class ToolCall(BaseModel):
    """A call put to the approval policy."""

    model_config = ConfigDict(frozen=True)

    tool: str = Field(description="The tool's name in the run's catalog.")
    server: str = Field(description="The label of the server that serves it.")
    args: dict[str, Any] = Field(default_factory=dict)
    hints: tuple[str, ...] = Field(default=(), description="The tool's MCP annotations (destructive, ...).")
    trusted: bool = Field(default=False, description="The user trusts the server's annotations.")
    added: bool = Field(default=False, description="A write the first plan did not hold, planned after tool "
                                                   "output was read (it needs a fresh yes).")

    @property
    def read_only(self) -> bool:
        """Read-only by an annotation the user trusts (an untrusted server's hint does not count)."""
        return self.trusted and READ_ONLY in self.hints


Approval = Callable[[ToolCall], bool]
"""A policy: True lets the call run."""


def allow_all(call: ToolCall) -> bool:
    """Every call runs (``--yes``: the caller has allowed it)."""
    return True


def read_only(call: ToolCall) -> bool:
    """No call that is not read-only runs."""
    return call.read_only


def shown(text: str) -> str:
    """``text`` as the terminal may show it: every control, formatting (bidirectional) or other
    invisible character escaped, so no name or argument can redraw the question it is part of."""
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c).startswith("C") else c
                   for c in text)


def ask_on_terminal(call: ToolCall) -> bool:
    """Ask on the terminal (the question on stderr, the answer on stdin); deny when stdin is not a
    terminal or the answer is not yes."""
    if not sys.stdin or not sys.stdin.isatty():
        return False
    said = [h for h in call.hints if h != READ_ONLY or not call.trusted]
    what = ", ".join(h.replace(READ_ONLY, "says read-only, untrusted") for h in said) or "not marked read-only"
    args = shown(json.dumps(call.args, ensure_ascii=False))
    if call.added:
        sys.stderr.write("the first plan did not hold this write; it was planned after tool output was read, "
                         "which may hold instructions that are not yours.\n")
    sys.stderr.write(f"run {shown(call.tool)} on {shown(call.server)} ({what}) with {args}? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")
