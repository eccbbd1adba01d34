"""A conversation as agents keep it: OpenAI chat messages, read as the planner's request.

An agent's conversation holds the user's request, the assistant's tool calls and each call's
result (a ``tool`` message answering the call's id). The planner reads it as a request
(:meth:`Conversation.intent`: the last user message), what came before it
(:meth:`Conversation.context`: earlier user turns and the assistant's text answers) and the steps
already run for that request (:meth:`Conversation.executed_steps`: every call after the last user
message, with its result). The OpenAI endpoint (``serve.chat``) takes one from each request; the
conversation is the agent's, and nothing of it is kept between requests.

A conversation whose ``tool`` message answers no call made before it, or answers one twice, is
refused (:class:`~helmdeck_dspy.errors.ConversationError`).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.errors import ConversationError
from helmdeck_dspy.signatures.types import ExecutedStep

ERROR_PREFIXES = ("error", "failed", "exception", "traceback")
"""A tool result starting with one of these (case aside) is read as the call's failure: the wire
has no error flag, and agents pass a failed call's message as its result."""
MAX_RESULT_CHARS = 4000
"""How much of one tool result the planner is shown."""


class FunctionCall(BaseModel):
    """The function part of a tool call: its name and its arguments as JSON text."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(min_length=1, max_length=256)
    arguments: str = "{}"

    def args(self) -> dict[str, Any]:
        """The arguments as an object ({} when they are not one)."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


class ToolCall(BaseModel):
    """One tool call an assistant message made."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1, max_length=256)
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(BaseModel):
    """One chat message, as the OpenAI wire has it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def text(self) -> str:
        """The message's text: the content, or its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


class Conversation(BaseModel):
    """An agent's conversation (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[ChatMessage, ...] = Field(min_length=1)

    @classmethod
    def of(cls, messages: tuple[ChatMessage, ...] | list[ChatMessage]) -> Conversation:
        """The conversation of ``messages``.

        Raises:
            ConversationError: No user message, or a tool message that answers no call made before it.
        """
        if not any(m.role == "user" for m in messages):
            raise ConversationError("the conversation has no user message")
        open_calls: set[str] = set()
        for at, message in enumerate(messages):
            if message.role == "assistant":
                open_calls |= {c.id for c in message.tool_calls or ()}
            elif message.role == "tool":
                if message.tool_call_id not in open_calls:
                    raise ConversationError(f"messages[{at}]: a tool message answers no call made before it "
                                            f"(tool_call_id {message.tool_call_id!r})")
                open_calls.discard(message.tool_call_id)
        return cls(messages=tuple(messages))

    def _last_user(self) -> int:
        return max(i for i, m in enumerate(self.messages) if m.role == "user")

    def intent(self) -> str:
        """The request: the last user message's text."""
        return self.messages[self._last_user()].text().strip()

    def context(self) -> str | None:
        """What came before the request: earlier user turns and assistant text answers (None: nothing)."""
        lines = [f"{m.role}: {m.text().strip()}" for m in self.messages[: self._last_user()]
                 if m.role in ("user", "assistant") and m.text().strip()]
        return "\n".join(lines) or None

    def executed_steps(self) -> list[ExecutedStep]:
        """Every call made after the request, in order, with its result (a call not answered yet
        is left out)."""
        results = {m.tool_call_id: m.text() for m in self.messages if m.role == "tool"}
        steps: list[ExecutedStep] = []
        for message in self.messages[self._last_user() + 1:]:
            for call in message.tool_calls or ():
                if call.id not in results:
                    continue
                output = results[call.id]
                steps.append(ExecutedStep(order=len(steps) + 1, tool=call.function.name, args=call.function.args(),
                                          output=output[:MAX_RESULT_CHARS],
                                          error=output.strip().lower().startswith(ERROR_PREFIXES)))
        return steps
