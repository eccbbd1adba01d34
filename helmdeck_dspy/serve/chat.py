"""The planner behind OpenAI's chat completions wire: :func:`complete_chat`.

A request with ``tools`` is planned: the conversation (``planning.conversation``) gives the
request and the calls already made, the tools become the catalog (as ``helmdeck.plan``'s
``tools`` do), and the planner's checked calls come back as ``tool_calls`` (``finish_reason``
``tool_calls``). When the planner calls nothing, or a request has no ``tools`` or says
``tool_choice: "none"``, the model answers in text with the conversation as the client sent it
(:func:`answer_text`; ``finish_reason`` ``stop``).

- ``tool_choice``: ``auto`` (the default) plans over every tool; ``required`` asks a declined
  first answer once more for at least one call; a named function plans over that one tool alone,
  with the same ask; ``none`` answers in text. A named function that is not among ``tools`` is
  refused.
- ``parallel_tool_calls: false`` sends the plan's first call only.
- ``max_tokens`` (or ``max_completion_tokens``) is capped by the served row's ``output_tokens``;
  ``temperature`` and ``seed`` go with the text answer (the planner's own calls keep the planner's
  sampling, temperature 0).
- A call the checks demoted (a tool no one offered) is never sent.
- A plan the model's answer could not give (prose, JSON that is no call list, an answer cut at the
  cap: :data:`~helmdeck_dspy.decoding.causes.UNUSABLE_ANSWER_CAUSES`) is answered in text under
  ``auto``, as a plan of no calls, where a raw server would have passed that answer on; under
  ``required`` or a named function it is an error (``PlanFailedError``), as is a model call that
  failed outright.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.decoding.causes import UNUSABLE_ANSWER_CAUSES
from helmdeck_dspy.errors import ArgumentError
from helmdeck_dspy.planning.conversation import ChatMessage, Conversation
from helmdeck_dspy.planning.result import PlanResult

MAX_MODEL_CHARS = 200
MAX_MESSAGES = 1000
MAX_TOOLS = 512


class FunctionSpec(BaseModel):
    """A function a client offers."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.:-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["function"] = "function"
    function: FunctionSpec


class NamedChoice(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["function"] = "function"
    function: dict[str, str]


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``'s body (fields the endpoint does not use are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model: str = Field(min_length=1, max_length=MAX_MODEL_CHARS)
    messages: tuple[ChatMessage, ...] = Field(min_length=1, max_length=MAX_MESSAGES)
    tools: tuple[ToolSpec, ...] | None = Field(default=None, max_length=MAX_TOOLS)
    tool_choice: Literal["none", "auto", "required"] | NamedChoice | None = None
    parallel_tool_calls: bool = True
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    seed: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stream: bool = False

    def cap(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def named_tool(self) -> str | None:
        return self.tool_choice.function.get("name") if isinstance(self.tool_choice, NamedChoice) else None


def _mcp_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The client's functions in the tool-list shape the planner's catalogs are read from."""
    return [{"name": t.function.name, "description": t.function.description, "inputSchema": t.function.parameters}
            for t in tools]


def _usage(*results: dict[str, Any]) -> dict[str, int]:
    prompt = sum(int(r.get("prompt_tokens") or 0) for r in results)
    completion = sum(int(r.get("completion_tokens") or 0) for r in results)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _response(model: str, message: dict[str, Any], finish: str, usage: dict[str, int]) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage}


def _tool_calls(result: PlanResult, offered: set[str], parallel: bool) -> list[dict[str, Any]]:
    import json

    steps = [s for s in result.steps if s.tool in offered]  # a demoted call names no offered tool: never sent
    calls = [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
              "function": {"name": s.tool, "arguments": json.dumps(s.args, ensure_ascii=False)}} for s in steps]
    return calls if parallel else calls[:1]


def complete_chat(service: Any, request: ChatRequest, caller: str) -> dict[str, Any]:
    """Answer one chat completion request (see the module docstring).

    Args:
        service: The server's :class:`~helmdeck_dspy.serve.service.PlanService`.
        request: The validated body.
        caller: Who asks (history rows are theirs).

    Raises:
        ConversationError: The messages are not one conversation.
        ArgumentError: ``tool_choice`` names a function that is not among ``tools``.
        InputError / StepCapError / InputTooLargeError: As ``helmdeck.plan`` refuses them.
        PlanFailedError: The planner's model call failed (no answer came back).
    """
    conversation = Conversation.of(request.messages)
    tools = request.tools or ()
    named = request.named_tool()
    if named is not None and named not in {t.function.name for t in tools}:
        raise ArgumentError(f"tool_choice names the function {named!r}, which is not among tools")
    if not tools or request.tool_choice == "none":
        text, usage = answer_text(service, request)
        return _response(request.model, {"role": "assistant", "content": text}, "stop", _usage(usage))
    offered = [t for t in tools if named is None or t.function.name == named]
    must_call = named is not None or request.tool_choice == "required"
    outcome = service.plan_steps(request.model, conversation.intent(), caller, context=conversation.context(),
                                 prior=conversation.executed_steps(), tools=_mcp_tools(tuple(offered)),
                                 max_tokens=request.cap(), must_call=must_call)
    result = outcome.result
    if not result.ok and (must_call or result.failure_cause not in UNUSABLE_ANSWER_CAUSES):
        from helmdeck_dspy.errors import PlanFailedError

        raise PlanFailedError(f"the planner's model call failed: {result.failure_cause}")
    calls = _tool_calls(result, {t.function.name for t in offered}, request.parallel_tool_calls)
    if calls:
        return _response(request.model, {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls",
                         _usage(result.usage))
    text, usage = answer_text(service, request)
    return _response(request.model, {"role": "assistant", "content": text}, "stop", _usage(result.usage, usage))


def answer_text(service: Any, request: ChatRequest) -> tuple[str, dict[str, Any]]:
    """The model's text answer to the conversation as the client sent it (tool calls and results
    written out as text), with the client's sampling and a cap no larger than the served row's."""
    from dspy.lm15 import Config, Message, Request

    from helmdeck_dspy.program.calls import completion_from_response

    lm = service.planner(request.model).lm
    budget = service.budget_for(request.model)
    cap = min(request.cap() or budget.output_tokens, budget.output_tokens)
    system = "\n\n".join(m.text() for m in request.messages if m.role in ("system", "developer")) or None
    turns = []
    for m in request.messages:
        if m.role == "user":
            turns.append(Message.user(m.text() or " "))
        elif m.role == "assistant":
            said = [m.text()] + [f"(called {c.function.name} {c.function.arguments})" for c in m.tool_calls or ()]
            turns.append(Message.assistant("\n".join(t for t in said if t) or " "))
        elif m.role == "tool":
            turns.append(Message.user(f"Result of call {m.tool_call_id}:\n{m.text()}"))
    config = {"max_tokens": cap, **{k: v for k, v in (("temperature", request.temperature), ("seed", request.seed))
                                     if v is not None}}
    t0 = time.perf_counter()
    response = lm(Request(model=lm.model, system=system, messages=tuple(turns), config=Config(**config)), cache=False)
    completion = completion_from_response("plan", response, system or "", [], (time.perf_counter() - t0) * 1000,
                                          config)
    return completion.content or "", {"prompt_tokens": completion.prompt_tokens,
                                      "completion_tokens": completion.completion_tokens}
