"""One task as one conversation in the model's own chat format: the request, then each batch of
calls as an assistant turn with tool calls and each result as a tool message, with the tools offered
natively (``tools`` on the OpenAI wire; the server's chat template writes them into the prompt the
way the model was trained to read them, Qwen's ``<tools>`` block and ``<tool_response>`` turns).

:class:`ChatTurns` keeps the messages of one task (make one per task), makes the request for the
model's next turn (:meth:`ChatTurns.request`) and reads its answer (:meth:`ChatTurns.answer`): its
calls, in whatever shape it wrote them (native tool calls, ``<tool_call>`` tags, a JSON list:
:func:`~helmdeck_dspy.decoding.call_list.decode_calls`), or text, which means it is done. The caller
asks with the answer kind ``turn``, so a streamed text answer is cut once it is plainly text: the
loop reads nothing of it but that it holds no call.

The messages only grow, so every turn's prompt starts with the one before it and a server with a
prompt cache evaluates only the new turns.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.decoding.answer_end import CALL_OPENERS
from helmdeck_dspy.decoding.call_list import Call, decode_calls
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.program.native_tools import NativeTool, native_tools
from helmdeck_dspy.program.plain_prompt import CONTEXT_LEAD


class TurnAnswer(BaseModel):
    """What one turn answered: its calls (tool ids) or none, and how the answer ended."""

    calls: list[tuple[str, dict[str, Any]]] | None
    """The calls; ``[]`` for an answer that holds none (text, or JSON that is no call: done); None when
    the answer was cut at the output cap before a call could be read."""
    content: str
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    repaired: bool = False


class ChatTurns:
    """The conversation of one task.

    Args:
        catalog: The tools offered on every turn (the same list each turn, so the prompt only grows).
        intent: The user request (the first user message).
        context: Pasted material for it, after the request.
    """

    def __init__(self, catalog: RoutingGuide, intent: str, context: str | None = None) -> None:
        from dspy.lm15 import FunctionTool, Message

        self.tools: tuple[NativeTool, ...] = native_tools(catalog)
        self._ids = {t.name: t.tool_id for t in self.tools}
        self._wire = {t.tool_id: t.name for t in self.tools}
        self._functions = tuple(FunctionTool(name=t.name, description=t.description, parameters=t.parameters)
                                for t in self.tools)
        text = intent.strip()
        if context is not None and str(context).strip():
            text += f"\n\n{CONTEXT_LEAD}\n{str(context).strip()}"
        self.messages: list[Any] = [Message.user(text)]
        self._calls = 0

    def ran(self, calls: list[tuple[str, dict[str, Any], str, bool]]) -> None:
        """Add the calls that ran since the last turn (tool id, arguments, result text, failed) as one
        assistant turn and their results as tool messages."""
        from dspy.lm15 import Message, TextPart, ToolCallPart, ToolResultPart

        if not calls:
            return
        ids = [f"call_{self._calls + i}" for i in range(1, len(calls) + 1)]
        self._calls += len(calls)
        # an empty text part: the turn's content is "" rather than null, which llama-cpp-python's server refuses
        self.messages.append(Message.assistant([TextPart(""), *(ToolCallPart(id=i, name=self._wire.get(tool, tool), input=args)
                                                                for i, (tool, args, _, _) in zip(ids, calls))]))
        self.messages.append(Message.tool([ToolResultPart(id=i, content=(TextPart(text or "(no output)"),), is_error=failed)
                                           for i, (_, _, text, failed) in zip(ids, calls)]))

    def request(self, model: str, config: dict[str, Any]) -> Any:
        """The next turn's request: the whole conversation, the tools, ``config`` (output cap, sampling)."""
        from dspy.lm15 import Config, Request

        return Request(model=model, messages=tuple(self.messages), tools=self._functions, config=Config(**config))

    def answer(self, response: Any, latency_ms: float, config: dict[str, Any]) -> TurnAnswer:
        """What the model's response to :meth:`request` holds; it joins the conversation only through
        :meth:`ran`, as the calls that then ran."""
        from helmdeck_dspy.program.calls import completion_from_response

        completion = completion_from_response("plan", response, "", [], latency_ms, config, native_tools=True)
        calls, repaired = self._calls_of(completion)
        return TurnAnswer(calls=calls, content=completion.content or "", finish_reason=completion.finish_reason,
                          prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
                          latency_ms=latency_ms, repaired=repaired)

    def _calls_of(self, completion: Any) -> tuple[list[Call] | None, bool]:
        """The calls of an answer, by tool id: native tool calls, else the text's; ``[]`` for text
        that opens no call."""
        if completion.tool_calls:
            return [(self._ids.get(c.name, c.name), dict(c.arguments) if isinstance(c.arguments, dict) else {})
                    for c in completion.tool_calls], False
        text = split_reasoning(completion.content or "").visible.strip()
        if not text or not any(opener in text for opener in CALL_OPENERS):
            return [], False
        if completion.finish_reason == "length":  # cut at the cap: its last call may be cut too, never sent
            return None, False
        calls, outcome = decode_calls(text)
        if calls is None:  # JSON that is no call (a result echoed back): no call
            return [], False
        return [(self._ids.get(name, name), args) for name, args in calls], outcome == "repaired"

    def transcript(self) -> list[dict[str, Any]]:
        """The conversation as plain data, for a result line."""
        out: list[dict[str, Any]] = []
        for m in self.messages:
            parts = []
            for p in m.parts:
                if hasattr(p, "input"):
                    parts.append({"call": p.name, "arguments": p.input})
                elif hasattr(p, "is_error"):
                    parts.append({"result": "".join(c.text for c in p.content), **({"error": True} if p.is_error else {})})
                elif getattr(p, "text", ""):
                    parts.append({"text": p.text})
            out.append({"role": m.role, "parts": json.loads(json.dumps(parts, default=str))})
        return out
