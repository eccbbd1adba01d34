"""PlanAdapter: how a plan module talks to its LM.

One request per call, built here rather than by DSPy's chat formatting:

- system message: the variant's instructions, the answer format, and — when the model supports
  prefix caching — the catalog block, so it is byte-identical across calls for the same model
  and catalog;
- demos as user/assistant pairs that never repeat the catalog;
- the user message: the catalog block first when it is not in the system message, then the
  request, the optional context (omitted when absent) and any prior steps.

Everything the request holds comes from the call's :class:`~helmdeck_dspy.program.prompt_spec.PromptSpec`:
with ``tools`` set (the ``native`` strategy) the request also offers the selected catalog as native
function tools and the model may answer with tool calls instead; with ``answer_schema`` (the
``schema`` strategy) the answer is decoded under it.

The completion goes through :func:`parse_completion` with its finish_reason, reasoning field and
any tool calls.
There is no second "JSON fallback" call, and output that hit the token limit is never accepted:
a failure raises :class:`PlanParseError` carrying the cause and the raw completion.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import dspy
from dspy.lm15 import Config, FunctionTool, Message, Request
from dspy.utils.exceptions import AdapterParseError
from pydantic import BaseModel

from helmdeck_dspy.decoding.causes import FailureCause
from helmdeck_dspy.decoding.call_list import parse_call_list
from helmdeck_dspy.decoding.parsing import ParseResult, parse_completion
from helmdeck_dspy.program.calls import (
    capture_completions,
    completion_from_response,
    log_completion,
)
from helmdeck_dspy.program.answer_schema import (
    CONSTRAINED_FORMAT,
    CONSTRAINED_STEPS_FORMAT,
    has_fit_decision,
)
from helmdeck_dspy.program.demo_pool import pipeline_line, signature_line
from helmdeck_dspy.program.plain_prompt import plain_request
from helmdeck_dspy.domain import MODEL_ALONE_STRATEGIES
from helmdeck_dspy.program.prompt_spec import CALL_LIST_STRATEGIES, PromptSpec
from helmdeck_dspy.program.sections import (
    ANSWER_FORMAT_MARK,
    CATALOG_HEADER,
    CLOSING_LINE,
    CONTEXT_HEADER,
    DEMO_TOOLS_HEADER,
    PRIOR_STEPS_HEADER,
    REQUEST_HEADER,
)

__all__ = ["PlanAdapter", "PlanParseError", "capture_completions"]

_CONFIG_KEYS = ("max_tokens", "temperature", "top_p", "stop", "seed", "response_format")

FORMAT_FULL_STEPS = ANSWER_FORMAT_MARK + """: one JSON object and nothing else (no prose, no code fences):
{"steps": [{"order": 1, "tool": "<catalog id>", "args": {}, "rationale": "<one sentence>"}],
 "complexity": "single-action" | "pipeline-direct" | "pack-chain",
 "reasoning": "<one to three sentences>"}"""

NATIVE_NOTE = """Or answer by calling the catalog's tools directly: one call per step, in order, with the
step's args as the call's arguments."""

FORMAT_SINGLE_PICK = ANSWER_FORMAT_MARK + """: one JSON object and nothing else (no prose, no code fences):
{"steps": [{"order": 1, "tool": "<catalog id>", "args": {}, "rationale": "<one sentence>"}],
 "complexity": "single-action" | "pipeline-direct" | "pack-chain",
 "more_steps_likely": true | false,
 "reasoning": "<one or two sentences>"}"""


NO_FIT_CONSTRAINED = "If none of the catalog's tools does what the request asks, set tool_fits to false."
NO_FIT_FREE = "If none of the catalog's tools does what the request asks, return an empty steps list."
"""The last words of a request under the plain tool-list instructions or a schema: the no-fit
decision is put next to the request, where a small model still sees it."""


class PlanParseError(AdapterParseError):
    """A completion that yielded no plan. A subclass of DSPy's AdapterParseError, so optimizers
    count it as a failed example rather than crashing.

    Attributes:
        cause: The failure cause (see :mod:`helmdeck_dspy.decoding.causes`).
        raw: The completion's visible content as returned.
        finish_reason: The provider's finish_reason.
        reasoning: The separate reasoning field, if any.
        result: The full :class:`ParseResult`.
    """

    def __init__(self, signature: Any, result: ParseResult, raw: str, reasoning: str | None) -> None:
        self.cause: FailureCause | None = result.cause
        self.raw = raw
        self.finish_reason = result.finish_reason_raw
        self.reasoning = reasoning
        self.result = result
        super().__init__(
            adapter_name="PlanAdapter",
            signature=signature,
            lm_response=raw,
            message=f"no plan: {result.cause} (finish_reason={result.finish_reason_raw!r}): {result.error}",
        )


def _get(demo: Any, key: str) -> Any:
    return demo.get(key) if hasattr(demo, "get") else getattr(demo, key, None)


def _prior_json(prior_steps: Any) -> list[dict[str, Any]] | None:
    """Executed steps as JSON objects, ``error`` only on a step that failed."""
    steps = [{k: v for k, v in s.items() if k != "error" or v} for s in _jsonable(prior_steps or [])]
    return steps or None


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


class _DropTruncationNotice(logging.Filter):
    """DSPy logs every length-cut response; the planner reports them as failure causes instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "response was truncated" not in record.getMessage()


_NOTICE_FILTER = _DropTruncationNotice()


class PlanAdapter(dspy.Adapter):
    """Formats plan requests and decodes plan completions (see module docstring)."""

    def __init__(self, spec: PromptSpec | None = None) -> None:
        super().__init__()
        self.spec = spec or PromptSpec()
        lm_log = logging.getLogger("dspy.clients.lm")
        if _NOTICE_FILTER not in lm_log.filters:
            lm_log.addFilter(_NOTICE_FILTER)

    # -------------------------------------------------------------- rendering

    def answer_format(self) -> str:
        """The answer-format section: the variant's, or the schema's when the answer is constrained."""
        if self.spec.answer_schema is not None:
            more = ' It also holds "more_steps_likely": true | false.' if self.spec.variant == "single_pick" else ""
            fmt = CONSTRAINED_FORMAT if has_fit_decision(self.spec.answer_schema) else CONSTRAINED_STEPS_FORMAT
            return ANSWER_FORMAT_MARK + fmt + more
        return FORMAT_SINGLE_PICK if self.spec.variant == "single_pick" else FORMAT_FULL_STEPS

    def system_message(self, signature: Any, catalog: str) -> str:
        fmt = self.answer_format()
        text = f"{(self.spec.instructions or signature.instructions).strip()}\n\n{fmt}"
        if self.spec.tools:
            text += f"\n{NATIVE_NOTE}"
        if self.spec.catalog_in_system:
            text += f"\n\n{CATALOG_HEADER}\n{catalog}"
        return text

    @staticmethod
    def request_text(intent: str, context: Any = None, prior_steps: Any = None) -> str:
        parts = [f"{REQUEST_HEADER}\n{intent.strip()}"]
        if context is not None and str(context).strip():
            ctx = context if isinstance(context, str) else json.dumps(_jsonable(context), ensure_ascii=False)
            parts.append(f"{CONTEXT_HEADER}\n{ctx.strip()}")
        if prior_steps:
            lines = []
            for s in _prior_json(prior_steps) or []:
                args = json.dumps(s.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
                output = f"error: {s.get('output', '')}" if s.get("error") else s.get("output", "")
                lines.append(f"{s.get('order', len(lines) + 1)}. {s.get('tool')} {args} -> {output}".rstrip())
            parts.append(f"{PRIOR_STEPS_HEADER}\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def fits_catalog(self, steps: Any) -> bool:
        """Whether a demo's steps name only tools of the planner's catalog (always, without ``demo_tools``)."""
        allowed = self.spec.demo_tools
        return allowed is None or all(_get(s, "tool") in allowed for s in steps)

    def schema_answer(self, steps: list[dict[str, Any]], more: Any = None) -> dict[str, Any]:
        """A demo's answer as the answer schema has it: ``tool`` and ``args`` per step, ``tool_fits``
        where the schema puts it, and ``more_steps_likely`` for single_pick."""
        answer: dict[str, Any] = {"tool_fits": bool(steps)} if has_fit_decision(self.spec.answer_schema) else {}
        answer["steps"] = [{"tool": s.get("tool"), "args": s.get("args") or {}} for s in steps]
        if self.spec.variant == "single_pick":
            answer["more_steps_likely"] = bool(more)
        return answer

    def format_demos(self, signature: Any, demos: list[Any]) -> list[dict[str, str]]:
        """The program's demos as user/assistant pairs, each answer in the format the model must
        answer in (the schema's under constrained decoding)."""
        messages = []
        for demo in demos:
            intent, steps = _get(demo, "user_intent"), _get(demo, "steps")
            if not intent or steps is None or not self.fits_catalog(steps):
                continue
            if self.spec.answer_schema is not None:
                answer = self.schema_answer(_jsonable(steps), _get(demo, "more_steps_likely"))
            else:
                answer = {"steps": _jsonable(steps)}
                for key in ("complexity", "more_steps_likely", "reasoning"):
                    value = _get(demo, key)
                    if value is not None and (key != "more_steps_likely" or self.spec.variant == "single_pick"):
                        answer[key] = _jsonable(value)
            messages.append({"role": "user", "content": self.request_text(intent, _get(demo, "context"), _get(demo, "prior_steps"))})
            messages.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
        return messages

    def format_pool_demos(self) -> list[dict[str, str]]:
        """The request's pool demos as user/assistant pairs: the demo's tools, its request, the answer."""
        messages = []
        for demo in self.spec.pool_demos:
            tools = "\n".join([*(signature_line(p) for p in demo.tools),
                               *(pipeline_line(p) for p in demo.pipelines)])
            steps = [{"tool": s["tool"], "args": s.get("args") or {}} for s in demo.steps]
            if self.spec.answer_schema is not None:
                answer = self.schema_answer(steps, more=False)
            else:
                answer = {"steps": [{"order": i, **s, "rationale": ""} for i, s in enumerate(steps, 1)]}
            messages.append({"role": "user", "content": f"{DEMO_TOOLS_HEADER}\n{tools}\n\n{self.request_text(demo.intent)}"})
            messages.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
        return messages

    def format(self, signature: Any, demos: list[Any], inputs: dict[str, Any]) -> list[dict[str, str]]:
        catalog = inputs.get("catalog") or ""
        if self.spec.strategy in MODEL_ALONE_STRATEGIES:  # the model-alone request: no system message, instructions or demos
            prior = _prior_json(inputs.get("prior_steps"))
            ask = [{"role": "system", "content": ""},
                   {"role": "user", "content": plain_request(catalog, inputs["user_intent"], inputs.get("context"), prior)}]
            return [*ask, *self.again_turns()]
        user = self.request_text(inputs["user_intent"], inputs.get("context"), inputs.get("prior_steps"))
        if not self.spec.catalog_in_system:
            user = f"{CATALOG_HEADER}\n{catalog}\n\n{user}"
        user += f"\n\n{CLOSING_LINE}"
        if self.spec.instructions is not None or self.spec.answer_schema is not None:
            user += f" {NO_FIT_CONSTRAINED if has_fit_decision(self.spec.answer_schema) else NO_FIT_FREE}"
        return [
            {"role": "system", "content": self.system_message(signature, catalog)},
            *self.format_demos(signature, demos),
            *self.format_pool_demos(),
            {"role": "user", "content": user},
            *self.again_turns(),
        ]

    def again_turns(self) -> list[dict[str, str]]:
        """An ask again's turns after the request: the first answer and the ask (none on a first call)."""
        if self.spec.first_answer is None or self.spec.again_ask is None:
            return []
        return [{"role": "assistant", "content": self.spec.first_answer}, {"role": "user", "content": self.spec.again_ask}]

    # -------------------------------------------------------------- decoding

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        """Decode text alone (no finish_reason known)."""
        return self._fields(signature, parse_completion(completion), completion, None)

    def _fields(self, signature: Any, result: ParseResult, raw: str, reasoning: str | None) -> dict[str, Any]:
        if result.plan is None:
            raise PlanParseError(signature, result, raw, reasoning)
        plan = result.plan
        return {
            "steps": plan.steps,
            "complexity": plan.complexity or "",
            "more_steps_likely": bool(plan.more_steps_likely),
            "reasoning": plan.reasoning or "",
        }

    # -------------------------------------------------------------- the call

    def _request(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        messages = self.format(signature, demos, inputs)
        merged = {**lm.kwargs}
        if self.spec.max_tokens is not None:
            merged["max_tokens"] = self.spec.max_tokens
        for key in ("temperature", "seed"):  # the spec's sampling (it keeps what the LM was built with)
            if getattr(self.spec, key) is not None:
                merged[key] = getattr(self.spec, key)
        merged.update(lm_kwargs)
        merged.pop("response_format", None)
        schema = self.spec.answer_schema
        if schema is not None and self.spec.schema_wire == "json_schema":
            merged["response_format"] = {"type": "json_schema", "name": "plan", "schema": schema}
        elif self.spec.json_object:
            merged["response_format"] = {"type": "json_object"}
        config = {k: merged[k] for k in _CONFIG_KEYS if merged.get(k) is not None}
        if schema is not None and self.spec.schema_wire == "json_object":
            # llama-cpp-python's server reads a schema only inside a json_object response_format,
            # a form lm15's canonical response_format cannot carry: it goes verbatim as an extension.
            config["extensions"] = {"response_format": {"type": "json_object", "schema": schema}}
        convo = tuple(
            Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"]) for m in messages[1:]
        )
        call_kwargs = {k: merged[k] for k in ("cache", "rollout_id") if merged.get(k) is not None}
        tools = tuple(FunctionTool(name=t.name, description=t.description, parameters=t.parameters)
                      for t in self.spec.tools)
        request = Request(model=lm.model, system=messages[0]["content"] or None, messages=convo,
                          config=Config(**config), tools=tools)
        return request, call_kwargs, messages, config

    def _finish(self, signature: Any, response: Any, messages: list[dict[str, str]], config: dict, t0: float) -> list[dict[str, Any]]:
        latency = (time.perf_counter() - t0) * 1000
        offered = self.spec.tools
        completion = completion_from_response("plan", response, messages[0]["content"], messages[1:], latency, config,
                                              native_tools=bool(offered))
        if self.spec.strategy in CALL_LIST_STRATEGIES:
            completion.parse = parse_call_list(completion.content, completion.finish_reason, completion.reasoning)
        else:
            completion.parse = parse_completion(
                completion.content, completion.finish_reason, completion.reasoning, tool_calls=completion.tool_calls,
                tool_ids=frozenset(t.tool_id for t in offered) if offered else None, refusal=completion.refusal,
            )
        log_completion(completion)
        return [self._fields(signature, completion.parse, completion.content, completion.reasoning)]

    def __call__(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        request, kw, messages, config = self._request(lm, lm_kwargs, signature, demos, inputs)
        t0 = time.perf_counter()
        return self._finish(signature, lm(request, **kw), messages, config, t0)

    async def acall(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: list[Any], inputs: dict[str, Any]):
        request, kw, messages, config = self._request(lm, lm_kwargs, signature, demos, inputs)
        t0 = time.perf_counter()
        return self._finish(signature, await lm.acall(request, **kw), messages, config, t0)
